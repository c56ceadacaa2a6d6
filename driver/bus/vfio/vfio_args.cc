#include "driver/bus/vfio/vfio_args.h"

#include <cerrno>
#include <charconv>
#include <cstdio>

#include "uapi/prm/init_seg_access.h"

namespace onchip::driver::bus::vfio {
namespace {

bool ParseHex(std::string_view s, unsigned& out) {
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out, 16);
  return ec == std::errc() && p == s.data() + s.size();
}

constexpr bool Aligned(uint64_t v) { return v % 4096 == 0; }

}  // namespace

Result<std::string> CanonicalPciName(std::string_view name) {
  // dddd:bb:dd.f with a 16-bit domain, 8-bit bus, 5-bit device and 3-bit function.
  const auto c1 = name.find(':');
  const auto c2 = name.find(':', c1 == std::string_view::npos ? c1 : c1 + 1);
  const auto dot = name.find('.', c2 == std::string_view::npos ? c2 : c2 + 1);
  if (c1 == std::string_view::npos || c2 == std::string_view::npos ||
      dot == std::string_view::npos)
    return Fail(EINVAL, "vfio: PCI name is not dddd:bb:dd.f");
  unsigned domain = 0, bus = 0, dev = 0, fn = 0;
  if (c1 > 4 || c2 - c1 - 1 > 2 || dot - c2 - 1 > 2 || name.size() - dot - 1 != 1 ||
      !ParseHex(name.substr(0, c1), domain) || !ParseHex(name.substr(c1 + 1, c2 - c1 - 1), bus) ||
      !ParseHex(name.substr(c2 + 1, dot - c2 - 1), dev) || !ParseHex(name.substr(dot + 1), fn) ||
      dev > 0x1f || fn > 7)
    return Fail(EINVAL, "vfio: PCI name is not dddd:bb:dd.f");
  char buf[16];
  std::snprintf(buf, sizeof buf, "%04x:%02x:%02x.%x", domain, bus, dev, fn);
  return std::string(buf);
}

Result<int> IommuGroupFromLink(std::string_view link_target) {
  const auto slash = link_target.rfind('/');
  const std::string_view base =
      slash == std::string_view::npos ? link_target : link_target.substr(slash + 1);
  int group = -1;
  auto [p, ec] = std::from_chars(base.data(), base.data() + base.size(), group, 10);
  if (base.empty() || ec != std::errc() || p != base.data() + base.size() || group < 0)
    return Fail(EINVAL, "vfio: iommu_group link does not end in a group number");
  return group;
}

std::string IommuGroupLinkPath(std::string_view sysfs_root, std::string_view pci_name) {
  std::string path(sysfs_root);
  path += "/bus/pci/devices/";
  path += pci_name;
  path += "/iommu_group";
  return path;
}

std::string GroupPath(std::string_view dev_vfio, int group) {
  std::string path(dev_vfio);
  path += '/';
  path += std::to_string(group);
  return path;
}

Result<vfio_iommu_type1_dma_map> MakeDmaMap(uint64_t vaddr, uint64_t iova, uint64_t size) {
  if (size == 0 || !Aligned(vaddr) || !Aligned(iova) || !Aligned(size))
    return Fail(EINVAL, "vfio: DMA map needs 4 KiB aligned vaddr, iova and size");
  if (vaddr + size < vaddr || iova + size < iova) return Fail(EINVAL, "vfio: DMA range wraps");
  vfio_iommu_type1_dma_map map{};
  map.argsz = sizeof map;
  map.flags = VFIO_DMA_MAP_FLAG_READ | VFIO_DMA_MAP_FLAG_WRITE;
  map.vaddr = vaddr;
  map.iova = iova;
  map.size = size;
  return map;
}

Result<void> MakeDmaUnmap(uint64_t iova, uint64_t size, vfio_iommu_type1_dma_unmap& unmap) {
  if (size == 0 || !Aligned(iova) || !Aligned(size) || iova + size < iova)
    return Fail(EINVAL, "vfio: DMA unmap needs a 4 KiB aligned, non-empty range");
  unmap = {};
  unmap.argsz = sizeof unmap;
  unmap.flags = 0;
  unmap.iova = iova;
  unmap.size = size;
  return {};
}

vfio_region_info MakeRegionInfoQuery(uint32_t index) {
  vfio_region_info info{};
  info.argsz = sizeof info;
  info.index = index;
  return info;
}

Result<void> CheckBar0Region(const vfio_region_info& info) {
  constexpr uint32_t kNeed =
      VFIO_REGION_INFO_FLAG_READ | VFIO_REGION_INFO_FLAG_WRITE | VFIO_REGION_INFO_FLAG_MMAP;
  if ((info.flags & kNeed) != kNeed) return Fail(ENODEV, "vfio: BAR0 is not a mappable RW region");
  if (info.size < prm::init_seg::kDriverBytes)
    return Fail(ENODEV, "vfio: BAR0 is smaller than the init segment");
  return {};
}

}  // namespace onchip::driver::bus::vfio
