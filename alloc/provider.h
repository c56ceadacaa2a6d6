// alloc/provider.h: the DMA memory provider: regions from a fallback chain, buffers carved out of
// them.
//
// A buffer of at most 2 MiB comes from a buddy arena inside a 2 MiB chunk of a region (so an
// 8-byte doorbell record takes 64 bytes, not a hugepage); a larger buffer gets a region of its own.
// Regions come from the first tier of the chain that works (tier.h): DPDK EAL hugepages, then
// memfd hugetlb, then memfd 4 KiB. A tier that fails is reported once with the reason (fallback_report.h)
// and the next is used; a tier that cannot work in this process (EAL failed, no MFD_HUGETLB) is
// skipped from then on. Each region is DMA-mapped once through the optional DmaMapper.
//
// Guarantees for every buffer: zeroed, aligned as asked (8 B .. 2 MiB, powers of two), resident,
// not copied on fork (shared mapping + MADV_DONTFORK), and described by an fd + offset that
// another process can mmap. Freeing returns the memory to the region it came from (each buffer
// remembers its region, hence its tier) and zeroes it; free memory is always zero.
//
//   ONCHIP_TRY(auto options, ProviderOptions::FromEnvironment());
//   ONCHIP_TRY(auto provider, MemoryProvider::Create(options));
//   ONCHIP_TRY(Allocation cq, provider->Allocate(64 * 1024, 4096));
//   ... cq.addr, cq.iova, cq.fd + cq.fd_offset ...
//   ONCHIP_CHECK(provider->Free(cq.addr));
//
// Thread-safe. Destroy the provider only after every buffer is freed (and the device stopped
// using them): its destructor gives all regions back.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "alloc/buddy_arena.h"
#include "alloc/dma_mapper.h"
#include "alloc/eal.h"
#include "alloc/region.h"
#include "alloc/tier.h"
#include "uapi/result.h"

namespace onchip::alloc {

inline constexpr size_t kMaxAlignment = kHugePageBytes;

struct ProviderOptions {
  Tier first_tier = Tier::kDpdkHugepages;  // where the chain starts ("force a tier")
  bool allow_fallback = true;              // false: only first_tier, its failure is the error
  EalOptions eal;                          // used if this provider is the one to start the EAL
  int numa_socket = -1;                    // DPDK tier: rte_malloc socket (-1: any)
  DmaMapper* mapper = nullptr;             // not owned; must outlive the provider
  size_t max_region_bytes = size_t{32} << 20;    // regions double up to this (multiple of 2 MiB)
  size_t retain_empty_bytes = size_t{32} << 20;  // empty regions kept for reuse up to this

  // Defaults overridden by the environment:
  //   ONCHIP_ALLOC_TIER=dpdk|hugetlb|4k   first tier     ONCHIP_ALLOC_FALLBACK=0   no fallback
  //   ONCHIP_EAL_ARGS="..."               EAL arguments
  // EINVAL for an unknown tier name.
  static Result<ProviderOptions> FromEnvironment();
};

// A live buffer: where it is for the CPU, for another process and for the device.
struct Allocation {
  void* addr = nullptr;
  size_t length = 0;        // usable bytes (the request rounded up to the block size)
  uint8_t tag = 0;          // the caller's tag from Allocate
  Tier tier = Tier::kMemfd4k;
  size_t page_size = 0;
  int numa_socket = -1;
  int fd = -1;              // borrowed (see region.h); mmap(fd, fd_offset) reaches addr
  uint64_t fd_offset = 0;
  bool dma_mapped = false;  // a DmaMapper mapped the region
  uint64_t iova = 0;        // valid when dma_mapped
};

struct TierStats {
  uint64_t regions = 0;       // regions currently held
  uint64_t region_bytes = 0;
  uint64_t live_buffers = 0;
  uint64_t bytes_in_use = 0;  // block bytes of live buffers
  uint64_t allocations = 0;   // totals since creation
  uint64_t frees = 0;
};

struct ProviderStats {
  std::array<TierStats, kTierCount> tiers{};
  uint64_t failed_allocations = 0;
  uint64_t rejected_frees = 0;  // double frees, foreign and interior pointers
  uint64_t dma_maps = 0;
  uint64_t dma_unmaps = 0;
  const TierStats& of(Tier t) const { return tiers[static_cast<int>(t)]; }
};

class MemoryProvider {
 public:
  // Errors: EINVAL (options), and when first_tier is DPDK and fallback is off, Eal::Acquire's.
  static Result<std::unique_ptr<MemoryProvider>> Create(const ProviderOptions& options);
  ~MemoryProvider();
  MemoryProvider(const MemoryProvider&) = delete;
  MemoryProvider& operator=(const MemoryProvider&) = delete;

  // Errors: EINVAL (size 0, alignment not a power of two or above 2 MiB, tag above 7),
  // ENOMEM (size overflow, or no tier could supply memory: the last tier's error),
  // or the DmaMapper's error.
  Result<Allocation> Allocate(size_t size, size_t alignment, uint8_t tag = 0);

  // Frees the buffer that starts at `addr` and returns what it was. Errors (nothing changes):
  //   EINVAL "not from this provider"   foreign pointer (or a large buffer already freed)
  //   EINVAL "already freed"            double free
  //   EINVAL "inside a buffer"          interior pointer
  Result<Allocation> Free(void* addr);

  // The live buffer that starts at `addr`; same errors as Free.
  Result<Allocation> Describe(const void* addr) const;

  ProviderStats stats() const;
  // The best tier still in the chain (tiers that cannot work in this process are dropped).
  Tier current_tier() const;

 private:
  struct RegionState {
    Region region;
    bool dma_mapped = false;
    uint64_t iova = 0;
    bool dedicated = false;       // one buffer owns the whole region
    bool dedicated_live = false;
    uint8_t dedicated_tag = 0;
    std::vector<std::unique_ptr<BuddyArena>> chunks;  // one per 2 MiB, unless dedicated
    size_t in_use = 0;
  };
  using RegionMap = std::map<uintptr_t, std::unique_ptr<RegionState>>;

  explicit MemoryProvider(const ProviderOptions& options);
  Result<RegionState*> NewRegion(size_t bytes, bool dedicated);
  Result<Region> AcquireFromChain(size_t bytes, bool dedicated);
  Result<Region> AcquireFrom(Tier t, size_t bytes);
  void ReleaseRegion(std::unique_ptr<RegionState> rs);
  // Locates the region holding `addr`; nullptr if none.
  RegionState* Find(const void* addr) const;
  Allocation Describe(const RegionState& rs, void* addr, size_t length, uint8_t tag) const;
  Result<Allocation> FreeFault(BuddyArena::FreeFault fault);

  const ProviderOptions options_;
  mutable std::mutex mu_;
  RegionMap regions_;                     // by base address
  std::vector<RegionState*> arenas_;      // non-dedicated regions, best tier first
  std::array<bool, kTierCount> dropped_{};  // tier cannot work in this process
  size_t dpdk_max_region_bytes_;          // 2 MiB when the EAL gives one file per page
  size_t empty_bytes_ = 0;                // bytes of empty arena regions kept
  EalLease eal_;
  ProviderStats stats_;
};

}  // namespace onchip::alloc
