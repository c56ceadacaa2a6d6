#include "driver/xrcd.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <cerrno>
#include <map>
#include <mutex>
#include <tuple>

#include "driver/cmd/run.h"
#include "uapi/prm/opcodes.h"
#include "uapi/prm/xrc.h"

namespace onchip::driver {
namespace {

// The domains opened with a file, per device: (device, st_dev, st_ino) -> Xrcd. The mutex also
// guards every Xrcd's `opens`.
struct SharedDomains {
  std::mutex mu;
  std::map<std::tuple<const Device*, dev_t, ino_t>, Xrcd*> by_inode;
};
SharedDomains& Shared() {
  static SharedDomains* s = new SharedDomains;  // never destroyed: objects may outlive statics
  return *s;
}

Result<uint32_t> AllocOnDevice(Device& device) {
  prm::Message<prm::alloc_xrcd_in> in;
  in.set(prm::alloc_xrcd_in::opcode, prm::ALLOC_XRCD);
  ONCHIP_TRY(auto out, cmd::Run<prm::alloc_xrcd_out>(device.commander(), in));
  return static_cast<uint32_t>(out.get(prm::alloc_xrcd_out::xrcd));
}

}  // namespace

Result<Xrcd*> OpenXrcd(const std::shared_ptr<Device>& device, int fd, int oflags) {
  if (!device) return Fail(EINVAL, "open_xrcd: no device");
  std::optional<std::pair<dev_t, ino_t>> inode;
  if (fd != -1) {
    struct stat st {};
    if (fstat(fd, &st) != 0) return Fail(EBADF, "open_xrcd: fd is not an open file");
    inode = std::make_pair(st.st_dev, st.st_ino);
  }
  SharedDomains& shared = Shared();
  std::unique_lock lock(shared.mu);
  if (inode) {
    auto it = shared.by_inode.find({device.get(), inode->first, inode->second});
    if (it != shared.by_inode.end()) {
      if (oflags & O_EXCL) return Fail(EINVAL, "open_xrcd: O_EXCL and the file has a domain");
      if (!it->second->life.usable()) return Fail(EIO, "open_xrcd: device closed");
      ++it->second->opens;
      return it->second;
    }
  }
  // The kernel's ib_uverbs_open_xrcd: a file with no domain needs O_CREAT (EAGAIN); fd -1 always
  // makes a domain of its own.
  if (inode && !(oflags & O_CREAT))
    return Fail(EAGAIN, "open_xrcd: no domain for this file and no O_CREAT");
  ONCHIP_TRY(auto op, device->registry().Begin("open_xrcd: device closed"));
  ONCHIP_TRY(const uint32_t xrcdn, AllocOnDevice(*device));
  auto* xrcd = new Xrcd{};
  xrcd->device = device;
  xrcd->xrcdn = xrcdn;
  xrcd->inode = inode;
  xrcd->verbs.xrcd.context = device->verbs();
  xrcd->verbs.comp_mask = 0;
  xrcd->verbs.handle = xrcdn;
  if (inode) shared.by_inode[{device.get(), inode->first, inode->second}] = xrcd;
  device->registry().Publish<ObjectKind::kXrcd>(op, xrcd, xrcd->life);
  return xrcd;
}

Result<void> ReleaseXrcdOnDevice(Xrcd& xrcd, Release) {
  prm::Message<prm::dealloc_xrcd_in> in;
  in.set(prm::dealloc_xrcd_in::opcode, prm::DEALLOC_XRCD).set(prm::dealloc_xrcd_in::xrcd, xrcd.xrcdn);
  ONCHIP_TRY(auto out, cmd::Run<prm::dealloc_xrcd_out>(xrcd.device->commander(), in));
  (void)out;
  return {};
}

Result<void> CloseXrcd(Xrcd* xrcd) {
  if (xrcd == nullptr) return Fail(EINVAL, "close_xrcd: null");
  SharedDomains& shared = Shared();
  std::unique_lock lock(shared.mu);
  if (xrcd->opens > 1) {
    --xrcd->opens;
    return {};
  }
  const std::optional<std::pair<dev_t, ino_t>> inode = xrcd->inode;
  const Device* device = xrcd->device.get();
  ONCHIP_CHECK(Destroy<ObjectKind::kXrcd>(xrcd->device->registry(), xrcd, xrcd->life,
                                          "close_xrcd: XRC SRQs or QPs still use the domain"));
  // Gone: the next open of the file makes a new domain.
  if (inode) shared.by_inode.erase({device, inode->first, inode->second});
  return {};
}

Result<void> KindTraits<ObjectKind::kXrcd>::ReleaseOnDevice(Xrcd& object, Release why) {
  return ReleaseXrcdOnDevice(object, why);
}

}  // namespace onchip::driver
