// The Bus over Linux VFIO, for a real ConnectX bound to vfio-pci.
//
// Open: /dev/vfio/vfio (API version, Type1v2 IOMMU), the device's IOMMU group (viable, joined to
// the container, VFIO_SET_IOMMU), the device fd (VFIO_GROUP_GET_DEVICE_FD), BAR0 region info and
// mmap, then memory-space + bus-master in the PCI command register. Provider regions and caller
// memory are mapped with VFIO_IOMMU_MAP_DMA (which pins them) at IOVAs this bus hands out.
// Notify is a no-op: the device sees doorbell stores itself.
//
// Every failure names its step and keeps the kernel's errno (ENOENT when /dev/vfio or the device
// is absent, EPERM/EACCES without permission, EINVAL for a non-viable group).
//
// BAR0 through the VFIO region is uncached: right for registers, slow for device memory. For
// Bar0Window (MEMIC, UAR pages) the bus also maps the kernel's write-combining view of the same
// BAR, /sys/bus/pci/devices/<bdf>/resource0_wc (present for prefetchable BARs, as ConnectX's
// BAR0 is); without it Bar0Window falls back to the uncached mapping, still correct.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "driver/bus/bus.h"

namespace onchip::driver::bus {

struct VfioOptions {
  std::string sysfs_root = "/sys";
  std::string dev_vfio = "/dev/vfio";
};

class VfioBus final : public Bus {
 public:
  static Result<std::unique_ptr<VfioBus>> Open(std::string_view pci_name, VfioOptions opts = {});
  ~VfioBus() override;

  std::byte* bar0() const override { return bar0_; }
  uint64_t bar0_size() const override { return bar0_size_; }
  Result<std::byte*> Bar0Window(uint64_t offset, uint64_t length) const override;
  bool write_combined() const { return bar0_wc_ != nullptr; }
  WindowMemory window_memory() const override {
    if (write_combined()) return {mmio::MemoryType::kWriteCombining, "resource0_wc, the BAR mapped WC"};
    return {mmio::MemoryType::kUncached, "the VFIO region, uncached (no resource0_wc)"};
  }
  Result<uint64_t> Map(const alloc::Region& r) override;
  void Unmap(const alloc::Region& r, uint64_t iova) override;
  Result<DmaMapping> MapHost(std::byte* host, uint64_t length) override;
  // tph(): not read from config space yet (the TPH Requester capability walk is future work),
  // so a real device reports no steering-tag table and DMA handles with a CPU fail EOPNOTSUPP.
  void Notify() override {}

 protected:
  Result<void> UnmapHost(uint64_t iova, uint64_t length) override;

 private:
  VfioBus() = default;

  int container_ = -1;
  int group_ = -1;
  int device_ = -1;
  std::byte* bar0_ = nullptr;
  std::byte* bar0_wc_ = nullptr;  // the same BAR mapped write-combining, or null
  uint64_t bar0_size_ = 0;
  IovaSpace iova_{0x100000};  // above the legacy low hole
  Result<uint64_t> MapRange(void* host, uint64_t length, const char* what);
};

}  // namespace onchip::driver::bus
