// alloc/buddy_arena.h: a buddy allocator over one 2 MiB chunk, with all bookkeeping out of band.
//
// The arena only does arithmetic on offsets: it never reads or writes the memory it manages, so
// a device (or a buggy user) scribbling over DMA memory cannot corrupt the allocator. Blocks are
// 64 B << order for order 0..15 (64 B to 2 MiB); a block of order k sits at an offset that is a
// multiple of its size, so alignment up to 2 MiB falls out of the chunk being 2 MiB aligned.
// 64 B is the smallest block on purpose: 8-byte doorbell records of different queues never share
// a cache line.
//
// Freeing is two steps so that the caller can zero a block without holding its lock:
// BeginFree() validates and marks the block as in flight (a second free of it fails with
// kNotLive), FinishFree() returns it to the free lists and merges buddies.
//
// Not thread-safe: the provider serialises calls.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>

namespace onchip::alloc {

class BuddyArena {
 public:
  static constexpr unsigned kGranuleShift = 6;  // 64 B
  static constexpr unsigned kChunkShift = 21;   // 2 MiB
  static constexpr unsigned kMaxOrder = kChunkShift - kGranuleShift;  // 15: the whole chunk
  static constexpr uint32_t kGranules = uint32_t{1} << kMaxOrder;
  static constexpr uint8_t kMaxTag = 7;  // 3 bits of caller data kept with each live block

  struct Block {
    unsigned order = 0;
    uint8_t tag = 0;
    size_t bytes() const { return size_t{1} << (order + kGranuleShift); }
  };
  enum class FreeFault {
    kNotLive,    // the offset lies in free memory or a block being freed: a double free
    kInterior,   // the offset is inside a live block but not at its start
    kMisaligned  // not a multiple of 64 B (or outside the chunk): cannot be a block start
  };

  BuddyArena();  // the whole chunk free

  // Smallest order whose block holds `bytes` with `alignment` (both <= 2 MiB).
  static unsigned OrderFor(size_t bytes, size_t alignment);

  // Byte offset of a newly allocated block, or nullopt if no free block is large enough.
  std::optional<uint32_t> Allocate(unsigned order, uint8_t tag);

  // Validates `offset` as the start of a live block and marks it in flight.
  struct BeginFreeResult {
    std::optional<Block> block;
    FreeFault fault = FreeFault::kNotLive;
  };
  BeginFreeResult BeginFree(uint32_t offset);
  // Returns an in-flight block (offset and order from BeginFree) to the free lists.
  void FinishFree(uint32_t offset, unsigned order);

  // The live block starting at `offset`, if any.
  std::optional<Block> Describe(uint32_t offset) const;

  size_t bytes_in_use() const { return bytes_in_use_; }
  bool empty() const { return bytes_in_use_ == 0; }
  // Largest order with a free block, or -1: lets the provider skip full chunks quickly.
  int largest_free_order() const;

 private:
  static constexpr uint8_t kInFlight = 0xff;
  // Word offset of order k's bitmap in bits_: order k has kGranules >> k bits (at least one word).
  static constexpr std::array<uint32_t, kMaxOrder + 2> kBitmapBase = [] {
    std::array<uint32_t, kMaxOrder + 2> base{};
    uint32_t w = 0;
    for (unsigned k = 0; k <= kMaxOrder; ++k) {
      base[k] = w;
      uint32_t bits = kGranules >> k;
      w += bits >= 64 ? bits / 64 : 1;
    }
    base[kMaxOrder + 1] = w;
    return base;
  }();
  static constexpr uint32_t kBitmapWords = kBitmapBase[kMaxOrder + 1];

  bool IsFree(unsigned order, uint32_t granule) const;
  void SetFree(unsigned order, uint32_t granule);
  void ClearFree(unsigned order, uint32_t granule);
  std::optional<uint32_t> TakeAny(unsigned order);

  // head_[g]: 0 if no live block starts at granule g; else (tag << 5) | (order + 1), or
  // kInFlight between BeginFree and FinishFree.
  std::unique_ptr<uint8_t[]> head_;
  std::array<uint64_t, kBitmapWords> free_bits_{};
  std::array<uint32_t, kMaxOrder + 1> free_count_{};
  std::array<uint32_t, kMaxOrder + 1> hint_{};  // no set bit below this word of order k
  size_t bytes_in_use_ = 0;
};

}  // namespace onchip::alloc
