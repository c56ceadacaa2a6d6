#include "alloc/buddy_arena.h"

#include <bit>

namespace onchip::alloc {

BuddyArena::BuddyArena() : head_(new uint8_t[kGranules]()) { SetFree(kMaxOrder, 0); }

unsigned BuddyArena::OrderFor(size_t bytes, size_t alignment) {
  size_t need = bytes > alignment ? bytes : alignment;
  if (need <= (size_t{1} << kGranuleShift)) return 0;
  return static_cast<unsigned>(std::bit_width(need - 1)) - kGranuleShift;
}

bool BuddyArena::IsFree(unsigned order, uint32_t granule) const {
  uint32_t bit = granule >> order;
  return (free_bits_[kBitmapBase[order] + bit / 64] >> (bit % 64)) & 1;
}

void BuddyArena::SetFree(unsigned order, uint32_t granule) {
  uint32_t bit = granule >> order, word = bit / 64;
  free_bits_[kBitmapBase[order] + word] |= uint64_t{1} << (bit % 64);
  ++free_count_[order];
  if (word < hint_[order]) hint_[order] = word;
}

void BuddyArena::ClearFree(unsigned order, uint32_t granule) {
  uint32_t bit = granule >> order;
  free_bits_[kBitmapBase[order] + bit / 64] &= ~(uint64_t{1} << (bit % 64));
  --free_count_[order];
}

std::optional<uint32_t> BuddyArena::TakeAny(unsigned order) {
  if (free_count_[order] == 0) return std::nullopt;
  uint32_t words = kBitmapBase[order + 1] - kBitmapBase[order];
  for (uint32_t w = hint_[order]; w < words; ++w) {
    uint64_t bits = free_bits_[kBitmapBase[order] + w];
    if (bits == 0) continue;
    hint_[order] = w;
    uint32_t granule = (w * 64 + static_cast<uint32_t>(std::countr_zero(bits))) << order;
    ClearFree(order, granule);
    return granule;
  }
  return std::nullopt;  // unreachable while free_count_ is right
}

std::optional<uint32_t> BuddyArena::Allocate(unsigned order, uint8_t tag) {
  if (order > kMaxOrder || tag > kMaxTag) return std::nullopt;
  unsigned k = order;
  std::optional<uint32_t> granule;
  for (; k <= kMaxOrder; ++k) {
    if ((granule = TakeAny(k))) break;
  }
  if (!granule) return std::nullopt;
  // Split down: the upper half of each split becomes a free block one order lower.
  while (k > order) {
    --k;
    SetFree(k, *granule + (uint32_t{1} << k));
  }
  head_[*granule] = static_cast<uint8_t>((tag << 5) | (order + 1));
  bytes_in_use_ += size_t{1} << (order + kGranuleShift);
  return *granule << kGranuleShift;
}

std::optional<BuddyArena::Block> BuddyArena::Describe(uint32_t offset) const {
  if (offset % (1u << kGranuleShift) != 0 || (offset >> kGranuleShift) >= kGranules) {
    return std::nullopt;
  }
  uint8_t h = head_[offset >> kGranuleShift];
  if (h == 0 || h == kInFlight) return std::nullopt;
  return Block{static_cast<unsigned>((h & 0x1f) - 1), static_cast<uint8_t>(h >> 5)};
}

BuddyArena::BeginFreeResult BuddyArena::BeginFree(uint32_t offset) {
  if (offset % (1u << kGranuleShift) != 0 || (offset >> kGranuleShift) >= kGranules) {
    return {std::nullopt, FreeFault::kMisaligned};
  }
  uint32_t g = offset >> kGranuleShift;
  if (auto block = Describe(offset)) {
    head_[g] = kInFlight;
    return {block, FreeFault::kNotLive};
  }
  if (head_[g] == kInFlight) return {std::nullopt, FreeFault::kNotLive};
  // No live block starts here. If g lies in a free block, the caller freed it twice; otherwise
  // it points into the middle of a live (or in-flight) block.
  for (unsigned k = 0; k <= kMaxOrder; ++k) {
    uint32_t start = g & ~((uint32_t{1} << k) - 1);
    if (IsFree(k, start)) return {std::nullopt, FreeFault::kNotLive};
  }
  return {std::nullopt, FreeFault::kInterior};
}

void BuddyArena::FinishFree(uint32_t offset, unsigned order) {
  uint32_t g = offset >> kGranuleShift;
  head_[g] = 0;
  bytes_in_use_ -= size_t{1} << (order + kGranuleShift);
  // Merge with the buddy while it is wholly free.
  while (order < kMaxOrder) {
    uint32_t buddy = g ^ (uint32_t{1} << order);
    if (!IsFree(order, buddy)) break;
    ClearFree(order, buddy);
    g &= ~(uint32_t{1} << order);
    ++order;
  }
  SetFree(order, g);
}

int BuddyArena::largest_free_order() const {
  for (int k = kMaxOrder; k >= 0; --k) {
    if (free_count_[k] != 0) return k;
  }
  return -1;
}

}  // namespace onchip::alloc
