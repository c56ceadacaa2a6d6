#include "driver/bus/vfio/vfio_bus.h"

#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <climits>

#include "driver/bus/vfio/vfio_args.h"
#include "log/log.h"

namespace onchip::driver::bus {

Result<std::unique_ptr<VfioBus>> VfioBus::Open(std::string_view pci_name, VfioOptions opts) {
  ONCHIP_TRY(const std::string name, vfio::CanonicalPciName(pci_name));
  std::unique_ptr<VfioBus> bus(new VfioBus());

  const std::string container_path = opts.dev_vfio + "/vfio";
  bus->container_ = open(container_path.c_str(), O_RDWR | O_CLOEXEC);
  if (bus->container_ < 0)
    return Fail(errno, "vfio: open /dev/vfio/vfio (vfio module loaded? permission?)");
  if (ioctl(bus->container_, VFIO_GET_API_VERSION) != VFIO_API_VERSION)
    return Fail(EINVAL, "vfio: unexpected VFIO API version");
  if (ioctl(bus->container_, VFIO_CHECK_EXTENSION, VFIO_TYPE1v2_IOMMU) <= 0)
    return Fail(EOPNOTSUPP, "vfio: no Type1v2 IOMMU");

  const std::string link = vfio::IommuGroupLinkPath(opts.sysfs_root, name);
  char target[PATH_MAX];
  const ssize_t n = readlink(link.c_str(), target, sizeof target - 1);
  if (n < 0) return Fail(errno, "vfio: no such PCI device, or it has no IOMMU group");
  ONCHIP_TRY(const int group, vfio::IommuGroupFromLink(std::string_view(target, n)));

  const std::string group_path = vfio::GroupPath(opts.dev_vfio, group);
  bus->group_ = open(group_path.c_str(), O_RDWR | O_CLOEXEC);
  if (bus->group_ < 0) return Fail(errno, "vfio: open /dev/vfio/<group> (bound to vfio-pci?)");
  vfio_group_status status{};
  status.argsz = sizeof status;
  if (ioctl(bus->group_, VFIO_GROUP_GET_STATUS, &status) != 0)
    return Fail(errno, "vfio: VFIO_GROUP_GET_STATUS");
  if (!(status.flags & VFIO_GROUP_FLAGS_VIABLE))
    return Fail(EINVAL, "vfio: group not viable (every device in it must be bound to vfio-pci)");
  if (ioctl(bus->group_, VFIO_GROUP_SET_CONTAINER, &bus->container_) != 0)
    return Fail(errno, "vfio: VFIO_GROUP_SET_CONTAINER");
  if (ioctl(bus->container_, VFIO_SET_IOMMU, VFIO_TYPE1v2_IOMMU) != 0)
    return Fail(errno, "vfio: VFIO_SET_IOMMU Type1v2");
  bus->device_ = ioctl(bus->group_, VFIO_GROUP_GET_DEVICE_FD, name.c_str());
  if (bus->device_ < 0) return Fail(errno, "vfio: VFIO_GROUP_GET_DEVICE_FD");

  vfio_region_info bar = vfio::MakeRegionInfoQuery(VFIO_PCI_BAR0_REGION_INDEX);
  if (ioctl(bus->device_, VFIO_DEVICE_GET_REGION_INFO, &bar) != 0)
    return Fail(errno, "vfio: VFIO_DEVICE_GET_REGION_INFO BAR0");
  ONCHIP_CHECK(vfio::CheckBar0Region(bar));
  void* p = mmap(nullptr, bar.size, PROT_READ | PROT_WRITE, MAP_SHARED, bus->device_,
                 static_cast<off_t>(bar.offset));
  if (p == MAP_FAILED) return Fail(errno, "vfio: mmap BAR0");
  bus->bar0_ = static_cast<std::byte*>(p);
  bus->bar0_size_ = bar.size;

  // The write-combining view for device memory, when the kernel offers one.
  const std::string wc_path = opts.sysfs_root + "/bus/pci/devices/" + name + "/resource0_wc";
  if (const int wc = open(wc_path.c_str(), O_RDWR | O_CLOEXEC); wc >= 0) {
    void* w = mmap(nullptr, bar.size, PROT_READ | PROT_WRITE, MAP_SHARED, wc, 0);
    close(wc);
    if (w != MAP_FAILED) bus->bar0_wc_ = static_cast<std::byte*>(w);
  }

  vfio_region_info config = vfio::MakeRegionInfoQuery(VFIO_PCI_CONFIG_REGION_INDEX);
  if (ioctl(bus->device_, VFIO_DEVICE_GET_REGION_INFO, &config) != 0)
    return Fail(errno, "vfio: VFIO_DEVICE_GET_REGION_INFO config space");
  uint16_t command = 0;
  const off_t cmd_off = static_cast<off_t>(config.offset + vfio::kPciCommandOffset);
  if (pread(bus->device_, &command, sizeof command, cmd_off) != sizeof command)
    return Fail(EIO, "vfio: read PCI command register");
  command |= vfio::kPciCommandMemoryBusMaster;
  if (pwrite(bus->device_, &command, sizeof command, cmd_off) != sizeof command)
    return Fail(EIO, "vfio: enable memory space and bus mastering");
  return bus;
}

Result<std::byte*> VfioBus::Bar0Window(uint64_t offset, uint64_t length) const {
  if (offset > bar0_size_ || length > bar0_size_ - offset)
    return Fail(EFAULT, "vfio: window outside BAR0");
  return (bar0_wc_ != nullptr ? bar0_wc_ : bar0_) + offset;
}

VfioBus::~VfioBus() {
  if (bar0_wc_ != nullptr) munmap(bar0_wc_, bar0_size_);
  if (bar0_ != nullptr) munmap(bar0_, bar0_size_);
  if (device_ >= 0) close(device_);
  if (group_ >= 0) close(group_);
  if (container_ >= 0) close(container_);
}

Result<uint64_t> VfioBus::MapRange(void* host, uint64_t length, const char* what) {
  const uint64_t iova = iova_.Take(length, reinterpret_cast<uintptr_t>(host));
  ONCHIP_TRY(auto map, vfio::MakeDmaMap(reinterpret_cast<uint64_t>(host), iova, length));
  if (ioctl(container_, VFIO_IOMMU_MAP_DMA, &map) != 0) return Fail(errno, what);
  return iova;
}

Result<uint64_t> VfioBus::Map(const alloc::Region& r) {
  if (r.addr == nullptr || r.length == 0 || r.length % kPageSize != 0)
    return Fail(EINVAL, "vfio: region must be whole pages");
  return MapRange(r.addr, r.length, "vfio: VFIO_IOMMU_MAP_DMA of a DMA region");
}

void VfioBus::Unmap(const alloc::Region& r, uint64_t iova) {
  if (auto unmapped = UnmapHost(iova, r.length); !unmapped) {
    // The IOMMU may still point at the pages and the provider is about to release them: nothing
    // safe is left to do but say so (ONCHIP_LOG=warn).
    log::Say(log::Level::kWarn, "onchip vfio: %s", unmapped.error().describe().c_str());
  }
}

Result<DmaMapping> VfioBus::MapHost(std::byte* host, uint64_t length) {
  if (host == nullptr || length == 0 || reinterpret_cast<uintptr_t>(host) % kPageSize != 0 ||
      length % kPageSize != 0)
    return Fail(EINVAL, "vfio: host mapping must be whole 4 KiB pages");
  ONCHIP_TRY(const uint64_t iova,
             MapRange(host, length, "vfio: VFIO_IOMMU_MAP_DMA of registered memory"));
  return DmaMapping(this, host, iova, length);
}

Result<void> VfioBus::UnmapHost(uint64_t iova, uint64_t length) {
  vfio_iommu_type1_dma_unmap unmap;
  ONCHIP_CHECK(vfio::MakeDmaUnmap(iova, length, unmap));
  if (ioctl(container_, VFIO_IOMMU_UNMAP_DMA, &unmap) != 0)
    return Fail(errno, "vfio: VFIO_IOMMU_UNMAP_DMA");
  return {};
}

}  // namespace onchip::driver::bus
