// The pure half of the VFIO bus: names, paths and ioctl argument structs, built and checked
// without touching the kernel so they can be unit tested on a machine with no IOMMU.
#pragma once

#include <linux/vfio.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "uapi/result.h"

namespace onchip::driver::bus::vfio {

// A PCI address in the kernel's canonical form "dddd:bb:dd.f" (lower-case hex); EINVAL otherwise.
Result<std::string> CanonicalPciName(std::string_view name);

// The IOMMU group number from the target of /sys/bus/pci/devices/<name>/iommu_group
// ("../../../kernel/iommu_groups/17" -> 17). EINVAL if the basename is not a number.
Result<int> IommuGroupFromLink(std::string_view link_target);

// "<sysfs_root>/bus/pci/devices/<pci_name>/iommu_group" and "<dev_vfio>/<group>".
std::string IommuGroupLinkPath(std::string_view sysfs_root, std::string_view pci_name);
std::string GroupPath(std::string_view dev_vfio, int group);

// VFIO_IOMMU_MAP_DMA for read+write device access. EINVAL unless vaddr, iova and size are
// 4 KiB aligned, size is non-zero and neither range wraps.
Result<vfio_iommu_type1_dma_map> MakeDmaMap(uint64_t vaddr, uint64_t iova, uint64_t size);
// VFIO_IOMMU_UNMAP_DMA of exactly one earlier mapping, written into `out` (the kernel struct
// ends in a flexible array, so it is filled in place rather than returned).
Result<void> MakeDmaUnmap(uint64_t iova, uint64_t size, vfio_iommu_type1_dma_unmap& out);
// VFIO_DEVICE_GET_REGION_INFO query for region `index` (VFIO_PCI_BAR0_REGION_INDEX for BAR0).
vfio_region_info MakeRegionInfoQuery(uint32_t index);
// Checks what the kernel answered for BAR0: readable, writable, mmap-able, non-empty.
Result<void> CheckBar0Region(const vfio_region_info& info);

// PCI command register bits the driver sets before the device may DMA: memory space + bus master.
inline constexpr uint16_t kPciCommandMemoryBusMaster = 0x0006;
inline constexpr uint64_t kPciCommandOffset = 0x4;

}  // namespace onchip::driver::bus::vfio
