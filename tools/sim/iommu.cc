#include "tools/sim/iommu.h"

#include <cerrno>
#include <cstring>

namespace onchip::sim {
namespace {
constexpr uint64_t kPage = 4096;
}

Result<void> Iommu::Map(const vpci::DmaRegion& r) {
  if (r.length == 0 || r.iova % kPage != 0 || r.length % kPage != 0 || r.host == nullptr ||
      r.iova + r.length < r.iova)
    return Fail(EINVAL, "sim iommu: map: unaligned, empty or wrapping region");
  std::unique_lock lock(mutex_);
  auto next = mappings_.lower_bound(r.iova);
  if (next != mappings_.end() && next->first < r.iova + r.length)
    return Fail(EINVAL, "sim iommu: map: overlaps an existing mapping");
  if (next != mappings_.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second.length > r.iova)
      return Fail(EINVAL, "sim iommu: map: overlaps an existing mapping");
  }
  mappings_.emplace(r.iova, Mapping{r.length, static_cast<std::byte*>(r.host)});
  return {};
}

Result<void> Iommu::Unmap(uint64_t iova, uint64_t length) {
  std::unique_lock lock(mutex_);
  auto it = mappings_.find(iova);
  if (it == mappings_.end() || it->second.length != length)
    return Fail(ENOENT, "sim iommu: unmap: no such mapping");
  mappings_.erase(it);
  return {};
}

std::size_t Iommu::mapping_count() const {
  std::shared_lock lock(mutex_);
  return mappings_.size();
}

std::byte* Iommu::TranslateLocked(uint64_t iova, uint64_t len) const {
  if (len == 0 || iova + len < iova) return nullptr;
  auto it = mappings_.upper_bound(iova);
  if (it == mappings_.begin()) return nullptr;
  --it;
  const uint64_t off = iova - it->first;
  if (off >= it->second.length || len > it->second.length - off) return nullptr;
  return it->second.host + off;
}

std::byte* Iommu::Access::Translate(uint64_t iova, uint64_t len) const {
  return iommu_.TranslateLocked(iova, len);
}

bool Iommu::Read(uint64_t iova, std::span<std::byte> out) const {
  Access a(*this);
  const std::byte* p = a.Translate(iova, out.size());
  if (!p) return false;
  std::memcpy(out.data(), p, out.size());
  return true;
}

bool Iommu::Write(uint64_t iova, std::span<const std::byte> in) const {
  Access a(*this);
  std::byte* p = a.Translate(iova, in.size());
  if (!p) return false;
  std::memcpy(p, in.data(), in.size());
  return true;
}

bool Iommu::IsMapped(uint64_t iova, uint64_t len) const {
  Access a(*this);
  return a.Translate(iova, len) != nullptr;
}

}  // namespace onchip::sim
