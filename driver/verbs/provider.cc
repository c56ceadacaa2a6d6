// onchip as a libibverbs provider (private ABI 34): registration, the verbs_device for each
// uverbs device whose modalias is onchip's, and the context behind ibv_open_device.
//
// Discovery: libibverbs reads the sysfs tree (SYSFS_PATH) and matches device/modalias against
// "onchip:*", a modalias no stock provider claims. Opening the device starts the software
// ConnectX in this process and brings the driver up on it (session.h).
//
// The context's file descriptors (libibverbs talks to no kernel here):
//   - cmd_fd: /dev/null opened read-only. ioctl() fails with ENOTTY, so libibverbs reads GIDs
//     from sysfs; write() fails with EBADF, so verbs that have no provider hook and write
//     commands (ibv_create_comp_channel) fail cleanly instead of "succeeding" on /dev/null.
//   - async_fd: the read end of a pipe the session owns the write end of.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>

#include "driver/mr.h"
#include "driver/verbs/abi34.h"
#include "driver/verbs/attributes.h"
#include "driver/verbs/provider.h"
#include "driver/verbs/session.h"
#include "driver/verbs_calls.h"

namespace onchip::verbs {
namespace {

using abi::verbs_context_ops;
using abi::verbs_device;
using abi::verbs_device_ops;
using abi::verbs_match_ent;
using abi::verbs_sysfs_dev;

// The per-uverbs-device ABI version `tools/onchip run` publishes (class/infiniband_verbs/uverbsN/
// abi_version); there is no kernel, so it only has to agree with the tree.
constexpr uint32_t kAbiVersion = 1;

struct OnchipDevice {
  verbs_device vdev;  // first: libibverbs hands back &vdev
  Identity id;
};

struct OnchipContext {
  verbs_context vctx;  // libibverbs' part; its ibv_context is its last member
  Session* session;
  Identity id;  // the device's, with the firmware version this session's device reports
};

OnchipContext* From(ibv_context* ctx) {
  return reinterpret_cast<OnchipContext*>(reinterpret_cast<char*>(ctx) -
                                          offsetof(OnchipContext, vctx) -
                                          offsetof(verbs_context, context));
}

// ---- sysfs reads at alloc_device ----

bool ReadSysfs(const std::string& path, std::string* out) {
  FILE* f = std::fopen(path.c_str(), "re");
  if (!f) return false;
  char buf[256];
  const size_t n = std::fread(buf, 1, sizeof(buf) - 1, f);
  std::fclose(f);
  out->assign(buf, n);
  while (!out->empty() && (out->back() == '\n' || out->back() == ' ')) out->pop_back();
  return true;
}

// "0c42:a103:0000:0001" (the kernel's %04x:%04x:%04x:%04x) -> host-order GUID; 0 if absent.
uint64_t ReadGuid(const std::string& path) {
  std::string s;
  unsigned a, b, c, d;
  if (!ReadSysfs(path, &s) || std::sscanf(s.c_str(), "%x:%x:%x:%x", &a, &b, &c, &d) != 4) return 0;
  return uint64_t{a} << 48 | uint64_t{b} << 32 | uint64_t{c} << 16 | d;
}

// How many consecutive GIDs the tree publishes for port 1 (gids/0, gids/1, ...).
uint32_t CountGids(const std::string& ibdev_path) {
  uint32_t n = 0;
  while (n < 4096 && access((ibdev_path + "/ports/1/gids/" + std::to_string(n)).c_str(), R_OK) == 0)
    ++n;
  return n;
}

// ---- context ops ----

int QueryDeviceEx(ibv_context* context, const ibv_query_device_ex_input* input,
                  ibv_device_attr_ex* attr, size_t attr_size) {
  if (attr == nullptr || attr_size < sizeof(ibv_device_attr)) return EINVAL;
  if (input != nullptr && input->comp_mask != 0) return EINVAL;
  OnchipContext* c = From(context);
  const ibv_device_attr_ex full = DeviceAttributes(c->session->device(), c->id);
  // ibv_query_device passes sizeof(ibv_device_attr): bytes past attr_size belong to the caller.
  std::memcpy(attr, &full, std::min(attr_size, sizeof(full)));
  return 0;
}

int QueryPort(ibv_context* context, uint8_t port, ibv_port_attr* attr) {
  if (attr == nullptr) return EINVAL;
  OnchipContext* c = From(context);
  return PortAttributes(c->session->device(), c->id, port, attr);
}

// ibv_dereg_mr hands over the verbs_mr; driver::Mr begins with that very layout.
static_assert(offsetof(driver::Mr, ibv) == offsetof(abi::verbs_mr, mr));
static_assert(offsetof(driver::Mr, mr_type) == offsetof(abi::verbs_mr, mr_type));
static_assert(offsetof(driver::Mr, access) == offsetof(abi::verbs_mr, access));

int DeregMr(abi::verbs_mr* vmr) { return driver::verbs::dereg_mr(&vmr->mr); }

// libibverbs' ibv_reg_mr(_iova2) then fills mr->context, pd, addr and length itself (the same
// values the driver set).
ibv_mr* RegMr(ibv_pd* pd, void* addr, size_t length, uint64_t hca_va, int access) {
  return driver::verbs::reg_mr(pd, addr, length, hca_va, static_cast<unsigned>(access));
}

void FreeContext(ibv_context* context) {
  OnchipContext* c = From(context);
  delete c->session;  // driver teardown, then the device stops
  c->session = nullptr;
  verbs_uninit_context(&c->vctx);  // closes cmd_fd and async_fd
  std::free(c);
}

const verbs_context_ops kContextOps = [] {
  verbs_context_ops ops{};
  // The verbs_calls.h entry points have exactly these signatures: the driver's objects are the
  // verbs objects libibverbs hands to the application. bind_mw stays libibverbs' EOPNOTSUPP
  // (binding is a send-queue operation: no data path yet).
  ops.alloc_dm = driver::verbs::alloc_dm;
  ops.alloc_mw = driver::verbs::alloc_mw;
  ops.alloc_parent_domain = driver::verbs::alloc_parent_domain;
  ops.alloc_pd = driver::verbs::alloc_pd;
  ops.alloc_td = driver::verbs::alloc_td;
  ops.dealloc_mw = driver::verbs::dealloc_mw;
  ops.dealloc_pd = driver::verbs::dealloc_pd;  // parent domains too
  ops.dealloc_td = driver::verbs::dealloc_td;
  ops.dereg_mr = DeregMr;
  ops.free_context = FreeContext;
  ops.free_dm = driver::verbs::free_dm;
  ops.query_device_ex = QueryDeviceEx;
  ops.query_port = QueryPort;
  ops.reg_dm_mr = driver::verbs::reg_dm_mr;
  ops.reg_mr = RegMr;
  return ops;
}();

// ---- device ops ----

verbs_context* AllocContext(ibv_device* ibdev, int cmd_fd, void* /*private_data*/) {
  // Swap the node libibverbs opened (read-write) for the harmless read-only /dev/null.
  const int harmless = open("/dev/null", O_RDONLY | O_CLOEXEC);
  close(cmd_fd);
  if (harmless < 0) return nullptr;

  auto* c = static_cast<OnchipContext*>(_verbs_init_and_alloc_context(
      ibdev, harmless, sizeof(OnchipContext),
      reinterpret_cast<verbs_context*>(offsetof(OnchipContext, vctx)), 0));
  if (c == nullptr) return nullptr;  // errno set, fd closed

  auto session = Session::Open();
  if (!session) {
    std::fprintf(stderr, "onchip: cannot open %s: %s\n", ibdev->name,
                 session.error().describe().c_str());
    verbs_uninit_context(&c->vctx);
    std::free(c);
    errno = session.error().errno_value();
    return nullptr;
  }
  c->session = session->release();
  // Objects the driver creates point at this context, the one libibverbs dispatches through.
  c->session->device().SetVerbsContext(&c->vctx.context);
  c->id = reinterpret_cast<const OnchipDevice*>(ibdev)->id;
  c->id.fw_ver = c->session->fw_ver();
  c->vctx.context.async_fd = c->session->TakeAsyncReadFd();
  verbs_set_ops(&c->vctx, &kContextOps);
  return &c->vctx;
}

verbs_device* AllocDevice(verbs_sysfs_dev* sysfs) {
  auto* d = new (std::nothrow) OnchipDevice{};
  if (d == nullptr) return nullptr;
  const std::string path = sysfs->ibdev_path;
  d->id.node_guid = ReadGuid(path + "/node_guid");
  d->id.sys_image_guid = ReadGuid(path + "/sys_image_guid");
  d->id.gid_table_len = CountGids(path);
  // The driver accepts the optional access bits (relaxed ordering): let ibv_reg_mr pass them.
  d->vdev.core_support = abi::kCoreSupportOptionalMrAccess;
  return &d->vdev;
}

void UninitDevice(verbs_device* vdev) { delete reinterpret_cast<OnchipDevice*>(vdev); }

const verbs_match_ent kMatchTable[] = {
    {.driver_data = nullptr, .u = {.modalias = "onchip:*"}, .vendor = 0, .device = 0,
     .kind = abi::kMatchModalias},
    {},
};

const verbs_device_ops kDeviceOps = {
    .name = "onchip",
    .match_min_abi_version = kAbiVersion,
    .match_max_abi_version = kAbiVersion,
    .match_table = kMatchTable,
    .static_providers = nullptr,
    .match_device = nullptr,
    .alloc_context = AllocContext,
    .import_context = nullptr,
    .alloc_device = AllocDevice,
    .uninit_device = UninitDevice,
};

__attribute__((constructor)) void RegisterProvider() { verbs_register_driver_34(&kDeviceOps); }

}  // namespace

bool IsOnchipContext(const ibv_context* context) {
  // Every device libibverbs 44 lists is a verbs_device; ours carry kDeviceOps.
  return context != nullptr && context->device != nullptr &&
         reinterpret_cast<const verbs_device*>(context->device)->ops == &kDeviceOps;
}

}  // namespace onchip::verbs
