#include "tools/simd/memic_pages.h"

namespace onchip::simd {
namespace {
constexpr uint64_t kPage = 4096;
}  // namespace

MemicPages::MemicPages(uint64_t start, uint64_t size) : start_(start), pages_(size / kPage) {}

bool MemicPages::PageRange(uint64_t start, uint64_t length, uint64_t& first, uint64_t& end) const {
  const uint64_t window_end = start_ + pages_.size() * kPage;
  if (length == 0 || start < start_ || start >= window_end || length > window_end - start)
    return false;
  first = (start - start_) / kPage;
  end = (start - start_ + length + kPage - 1) / kPage;
  return true;
}

bool MemicPages::MayUse(uint64_t start, uint64_t length, uint32_t client) const {
  uint64_t first = 0, end = 0;
  if (!PageRange(start, length, first, end)) return false;
  for (uint64_t i = first; i < end; ++i)
    if (pages_[i].allocations != 0 && pages_[i].client != client) return false;
  return true;
}

std::vector<uint64_t> MemicPages::Take(uint64_t start, uint64_t length, uint32_t client) {
  std::vector<uint64_t> fresh;
  uint64_t first = 0, end = 0;
  if (!PageRange(start, length, first, end)) return fresh;
  for (uint64_t i = first; i < end; ++i) {
    Page& p = pages_[i];
    if (p.allocations++ == 0) {
      p.client = client;
      fresh.push_back(start_ + i * kPage);
    }
  }
  return fresh;
}

std::vector<uint64_t> MemicPages::Give(uint64_t start, uint64_t length, uint32_t client) {
  std::vector<uint64_t> freed;
  uint64_t first = 0, end = 0;
  if (!PageRange(start, length, first, end)) return freed;
  for (uint64_t i = first; i < end; ++i) {
    Page& p = pages_[i];
    if (p.allocations == 0 || p.client != client) continue;
    if (--p.allocations == 0) freed.push_back(start_ + i * kPage);
  }
  return freed;
}

}  // namespace onchip::simd
