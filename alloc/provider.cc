#include "alloc/provider.h"

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "alloc/dpdk_region.h"
#include "alloc/fallback_report.h"
#include "alloc/memfd_region.h"
#include "log/log.h"

namespace onchip::alloc {
namespace {

constexpr size_t kChunk = size_t{1} << BuddyArena::kChunkShift;
static_assert(kChunk == kHugePageBytes);
// Below this, zeroing costs less than dropping and retaking the lock.
constexpr size_t kZeroUnderLockBytes = 4096;

constexpr std::string_view kSplitFiles = "dpdk region: pages are not one range of one file";

// A tier that cannot work in this process, as opposed to one that is short of memory now (or
// cannot serve this particular size).
bool Permanent(Tier t, const Error& e) {
  if (e.errno_value() == ENOMEM) return false;
  if (t == Tier::kDpdkHugepages) return !std::string_view(e.what()).starts_with(kSplitFiles);
  return e.errno_value() == EINVAL || e.errno_value() == ENOSYS || e.errno_value() == EOPNOTSUPP;
}

}  // namespace

Result<ProviderOptions> ProviderOptions::FromEnvironment() {
  ProviderOptions o;
  o.eal = EalOptions::FromEnvironment();
  if (const char* t = std::getenv("ONCHIP_ALLOC_TIER"); t != nullptr && *t != '\0') {
    auto tier = ParseTier(t);
    if (!tier) return Fail(EINVAL, "ONCHIP_ALLOC_TIER: expected dpdk, hugetlb or 4k");
    o.first_tier = *tier;
  }
  if (const char* f = std::getenv("ONCHIP_ALLOC_FALLBACK"); f != nullptr && std::string_view(f) == "0") {
    o.allow_fallback = false;
  }
  return o;
}

MemoryProvider::MemoryProvider(const ProviderOptions& options)
    : options_(options), dpdk_max_region_bytes_(options.max_region_bytes) {}

Result<std::unique_ptr<MemoryProvider>> MemoryProvider::Create(const ProviderOptions& options) {
  if (options.max_region_bytes == 0 || options.max_region_bytes % kHugePageBytes != 0) {
    return Fail(EINVAL, "provider: max_region_bytes must be a non-zero multiple of 2 MiB");
  }
  std::unique_ptr<MemoryProvider> p(new MemoryProvider(options));
  for (int t = 0; t < static_cast<int>(options.first_tier); ++t) p->dropped_[t] = true;
  if (options.first_tier == Tier::kDpdkHugepages) {
    // Bring the EAL up (or adopt the host's) now, so a failure is reported at creation.
    auto lease = Eal::Acquire(options.eal);
    Result<void> usable;
    if (!lease) {
      usable = std::unexpected(lease.error());
    } else if (!Eal::has_hugepages()) {
      usable = Fail(ENOTSUP, "EAL runs without hugepages (--no-huge)");
    }
    if (!usable) {
      if (!options.allow_fallback) return std::unexpected(usable.error());
      p->dropped_[0] = true;
      // A forked child of the EAL's process is expected to do without it (a child that opens a
      // device, or uses one its parent opened: driver/verbs/provider.cc): nothing to report.
      if (!Eal::InheritedByFork())
        ReportFallbackOnce(Tier::kDpdkHugepages, usable.error(), Tier::kMemfdHugetlb);
    } else {
      p->eal_ = std::move(*lease);
    }
  }
  return p;
}

MemoryProvider::~MemoryProvider() {
  uint64_t live = 0;
  for (const auto& t : stats_.tiers) live += t.live_buffers;
  if (live != 0) {
    log::Say(log::Level::kWarn, "onchip alloc: provider destroyed with %llu live buffers",
             static_cast<unsigned long long>(live));
  }
  arenas_.clear();
  while (!regions_.empty()) {
    auto node = regions_.extract(regions_.begin());
    ReleaseRegion(std::move(node.mapped()));
  }
}

Tier MemoryProvider::current_tier() const {
  std::lock_guard lock(mu_);
  for (int t = 0; t < kTierCount; ++t) {
    if (!dropped_[t]) return static_cast<Tier>(t);
  }
  return Tier::kMemfd4k;
}

Result<Region> MemoryProvider::AcquireFrom(Tier t, size_t bytes) {
  switch (t) {
    case Tier::kDpdkHugepages: {
      auto r = AcquireDpdkRegion(bytes, options_.numa_socket);
      if (!r && std::string_view(r.error().what()).starts_with(kSplitFiles)) {
        // The EAL keeps one file per page (no --single-file-segments): only single-page regions
        // have one fd. Arenas shrink to one page; buffers above 2 MiB fall back.
        dpdk_max_region_bytes_ = kHugePageBytes;
      }
      return r;
    }
    case Tier::kMemfdHugetlb: return AcquireMemfdRegion(bytes, PageKind::kHuge2M);
    case Tier::kMemfd4k: return AcquireMemfdRegion(bytes, PageKind::kSmall4k);
  }
  return Fail(EINVAL, "provider: tier");
}

Result<Region> MemoryProvider::AcquireFromChain(size_t bytes, bool dedicated) {
  std::optional<Error> last;
  for (int i = static_cast<int>(options_.first_tier); i < kTierCount; ++i) {
    if (dropped_[i]) continue;
    Tier t = static_cast<Tier>(i);
    size_t want = bytes;
    if (t == Tier::kDpdkHugepages && !dedicated) want = std::min(want, dpdk_max_region_bytes_);
    auto r = AcquireFrom(t, want);
    if (!r && t == Tier::kDpdkHugepages && !dedicated && want > dpdk_max_region_bytes_) {
      r = AcquireFrom(t, dpdk_max_region_bytes_);
    }
    if (r) return r;
    last = r.error();
    if (!options_.allow_fallback) break;
    if (Permanent(t, r.error())) dropped_[i] = true;
    for (int n = i + 1; n < kTierCount; ++n) {
      if (!dropped_[n]) {
        ReportFallbackOnce(t, r.error(), static_cast<Tier>(n));
        break;
      }
    }
  }
  if (last) return std::unexpected(*last);
  return Fail(ENOMEM, "provider: no tier left");
}

Result<MemoryProvider::RegionState*> MemoryProvider::NewRegion(size_t bytes, bool dedicated) {
  ONCHIP_TRY(Region region, AcquireFromChain(bytes, dedicated));
  auto rs = std::make_unique<RegionState>();
  rs->region = region;
  rs->dedicated = dedicated;
  if (options_.mapper != nullptr) {
    auto iova = options_.mapper->Map(region);
    if (!iova) {
      if (region.tier == Tier::kDpdkHugepages) ReleaseDpdkRegion(region);
      else ReleaseMemfdRegion(region);
      return std::unexpected(iova.error());
    }
    rs->dma_mapped = true;
    rs->iova = *iova;
    ++stats_.dma_maps;
  }
  if (!dedicated) {
    rs->chunks.reserve(region.length / kChunk);
    for (size_t i = 0; i < region.length / kChunk; ++i) rs->chunks.push_back(std::make_unique<BuddyArena>());
  }
  TierStats& ts = stats_.tiers[static_cast<int>(region.tier)];
  ++ts.regions;
  ts.region_bytes += region.length;
  RegionState* raw = rs.get();
  regions_.emplace(reinterpret_cast<uintptr_t>(region.addr), std::move(rs));
  if (!dedicated) {
    auto pos = std::upper_bound(arenas_.begin(), arenas_.end(), raw, [](RegionState* a, RegionState* b) {
      return a->region.tier < b->region.tier;
    });
    arenas_.insert(pos, raw);
    empty_bytes_ += region.length;  // empty until the caller allocates from it
  }
  return raw;
}

void MemoryProvider::ReleaseRegion(std::unique_ptr<RegionState> rs) {
  const Region& r = rs->region;
  if (rs->dma_mapped) {
    options_.mapper->Unmap(r, rs->iova);
    ++stats_.dma_unmaps;
  }
  TierStats& ts = stats_.tiers[static_cast<int>(r.tier)];
  --ts.regions;
  ts.region_bytes -= r.length;
  if (r.tier == Tier::kDpdkHugepages) {
    ReleaseDpdkRegion(r);
  } else {
    ReleaseMemfdRegion(r);
  }
}

Allocation MemoryProvider::Describe(const RegionState& rs, void* addr, size_t length, uint8_t tag) const {
  Allocation a;
  size_t off = static_cast<size_t>(static_cast<char*>(addr) - static_cast<char*>(rs.region.addr));
  a.addr = addr;
  a.length = length;
  a.tag = tag;
  a.tier = rs.region.tier;
  a.page_size = rs.region.page_size;
  a.numa_socket = rs.region.numa_socket;
  a.fd = rs.region.fd;
  a.fd_offset = rs.region.fd_offset + off;
  a.dma_mapped = rs.dma_mapped;
  a.iova = rs.dma_mapped ? rs.iova + off : 0;
  return a;
}

Result<Allocation> MemoryProvider::Allocate(size_t size, size_t alignment, uint8_t tag) {
  if (size == 0) return Fail(EINVAL, "alloc: size 0");
  if (alignment == 0) alignment = 1;
  if (!std::has_single_bit(alignment) || alignment > kMaxAlignment) {
    return Fail(EINVAL, "alloc: alignment must be a power of two up to 2 MiB");
  }
  if (tag > BuddyArena::kMaxTag) return Fail(EINVAL, "alloc: tag above 7");
  if (size > (size_t{1} << 46)) return Fail(ENOMEM, "alloc: size too large");

  std::lock_guard lock(mu_);
  if (size > kChunk) {
    size_t bytes = (size + kChunk - 1) & ~(kChunk - 1);
    auto rs = NewRegion(bytes, /*dedicated=*/true);
    if (!rs) {
      ++stats_.failed_allocations;
      return std::unexpected(rs.error());
    }
    (*rs)->dedicated_live = true;
    (*rs)->dedicated_tag = tag;
    (*rs)->in_use = bytes;
    TierStats& ts = stats_.tiers[static_cast<int>((*rs)->region.tier)];
    ++ts.allocations;
    ++ts.live_buffers;
    ts.bytes_in_use += bytes;
    return Describe(**rs, (*rs)->region.addr, bytes, tag);
  }

  const unsigned order = BuddyArena::OrderFor(size, alignment);
  const size_t block = size_t{1} << (order + BuddyArena::kGranuleShift);
  auto take = [&](RegionState* rs) -> std::optional<Allocation> {
    for (size_t c = 0; c < rs->chunks.size(); ++c) {
      BuddyArena& arena = *rs->chunks[c];
      if (arena.largest_free_order() < static_cast<int>(order)) continue;
      auto off = arena.Allocate(order, tag);
      if (!off) continue;
      if (rs->in_use == 0) empty_bytes_ -= rs->region.length;
      rs->in_use += block;
      TierStats& ts = stats_.tiers[static_cast<int>(rs->region.tier)];
      ++ts.allocations;
      ++ts.live_buffers;
      ts.bytes_in_use += block;
      return Describe(*rs, static_cast<char*>(rs->region.addr) + c * kChunk + *off, block, tag);
    }
    return std::nullopt;
  };
  for (RegionState* rs : arenas_) {
    if (auto a = take(rs)) return *a;
  }
  // Grow: double the arena footprint, up to max_region_bytes.
  size_t held = 0;
  for (RegionState* rs : arenas_) held += rs->region.length;
  size_t bytes = std::clamp(held & ~(kChunk - 1), kChunk, options_.max_region_bytes);
  auto rs = NewRegion(bytes, /*dedicated=*/false);
  if (!rs) {
    ++stats_.failed_allocations;
    return std::unexpected(rs.error());
  }
  if (auto a = take(*rs)) return *a;
  ++stats_.failed_allocations;
  return Fail(ENOMEM, "alloc: new region could not hold the buffer");
}

MemoryProvider::RegionState* MemoryProvider::Find(const void* addr) const {
  auto key = reinterpret_cast<uintptr_t>(addr);
  auto it = regions_.upper_bound(key);
  if (it == regions_.begin()) return nullptr;
  --it;
  RegionState* rs = it->second.get();
  return rs->region.contains(addr) ? rs : nullptr;
}

Result<Allocation> MemoryProvider::FreeFault(BuddyArena::FreeFault fault) {
  ++stats_.rejected_frees;
  switch (fault) {
    case BuddyArena::FreeFault::kNotLive: return Fail(EINVAL, "free: buffer already freed");
    case BuddyArena::FreeFault::kInterior: return Fail(EINVAL, "free: pointer is inside a buffer, not its start");
    case BuddyArena::FreeFault::kMisaligned: break;
  }
  return Fail(EINVAL, "free: pointer is inside a buffer, not its start");
}

Result<Allocation> MemoryProvider::Free(void* addr) {
  std::unique_lock lock(mu_);
  RegionState* rs = Find(addr);
  if (rs == nullptr) {
    ++stats_.rejected_frees;
    return Fail(EINVAL, "free: pointer not from this provider");
  }
  TierStats& ts = stats_.tiers[static_cast<int>(rs->region.tier)];
  if (rs->dedicated) {
    if (addr != rs->region.addr) return FreeFault(BuddyArena::FreeFault::kInterior);
    if (!rs->dedicated_live) return FreeFault(BuddyArena::FreeFault::kNotLive);
    Allocation a = Describe(*rs, addr, rs->region.length, rs->dedicated_tag);
    ++ts.frees;
    --ts.live_buffers;
    ts.bytes_in_use -= rs->region.length;
    auto node = regions_.extract(reinterpret_cast<uintptr_t>(rs->region.addr));
    ReleaseRegion(std::move(node.mapped()));
    return a;
  }
  size_t off = static_cast<size_t>(static_cast<char*>(addr) - static_cast<char*>(rs->region.addr));
  BuddyArena& arena = *rs->chunks[off / kChunk];
  const auto chunk_off = static_cast<uint32_t>(off % kChunk);
  auto begun = arena.BeginFree(chunk_off);
  if (!begun.block) return FreeFault(begun.fault);
  Allocation a = Describe(*rs, addr, begun.block->bytes(), begun.block->tag);
  if (a.length <= kZeroUnderLockBytes) {
    std::memset(addr, 0, a.length);
  } else {
    // Zero outside the lock: the block is in flight, so nobody else can allocate or free it.
    lock.unlock();
    std::memset(addr, 0, a.length);
    lock.lock();
  }
  arena.FinishFree(chunk_off, begun.block->order);
  rs->in_use -= a.length;
  ++ts.frees;
  --ts.live_buffers;
  ts.bytes_in_use -= a.length;
  if (rs->in_use == 0) {
    if (empty_bytes_ + rs->region.length <= options_.retain_empty_bytes) {
      empty_bytes_ += rs->region.length;
    } else {
      arenas_.erase(std::find(arenas_.begin(), arenas_.end(), rs));
      auto node = regions_.extract(reinterpret_cast<uintptr_t>(rs->region.addr));
      ReleaseRegion(std::move(node.mapped()));
    }
  }
  return a;
}

Result<Allocation> MemoryProvider::Describe(const void* addr) const {
  std::lock_guard lock(mu_);
  RegionState* rs = Find(addr);
  if (rs == nullptr) return Fail(EINVAL, "describe: pointer not from this provider");
  if (rs->dedicated) {
    if (addr != rs->region.addr || !rs->dedicated_live) return Fail(EINVAL, "describe: no live buffer starts here");
    return Describe(*rs, rs->region.addr, rs->region.length, rs->dedicated_tag);
  }
  size_t off = static_cast<size_t>(static_cast<const char*>(addr) - static_cast<char*>(rs->region.addr));
  auto block = rs->chunks[off / kChunk]->Describe(static_cast<uint32_t>(off % kChunk));
  if (!block) return Fail(EINVAL, "describe: no live buffer starts here");
  return Describe(*rs, const_cast<void*>(addr), block->bytes(), block->tag);
}

ProviderStats MemoryProvider::stats() const {
  std::lock_guard lock(mu_);
  return stats_;
}

}  // namespace onchip::alloc
