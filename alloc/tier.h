// alloc/tier.h: where DMA memory comes from, best first.
//
// The provider walks this chain when it needs a new backing region: DPDK EAL hugepages, then a
// memfd with MFD_HUGETLB (2 MiB pages), then a plain memfd (4 KiB pages). Every tier hands out
// memory that has a shareable fd, so a device in another process can map the same pages.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace onchip::alloc {

enum class Tier : uint8_t {
  kDpdkHugepages = 0,  // rte_zmalloc_socket from the EAL heap; fd from rte_memseg_get_fd
  kMemfdHugetlb = 1,   // memfd_create(MFD_HUGETLB | MFD_HUGE_2MB)
  kMemfd4k = 2,        // memfd_create without HUGETLB: 4 KiB pages, still an fd
};
inline constexpr int kTierCount = 3;

constexpr std::string_view TierName(Tier t) {
  switch (t) {
    case Tier::kDpdkHugepages: return "dpdk-hugepages";
    case Tier::kMemfdHugetlb: return "memfd-hugetlb";
    case Tier::kMemfd4k: return "memfd-4k";
  }
  return "?";
}

// "dpdk-hugepages" / "dpdk", "memfd-hugetlb" / "hugetlb", "memfd-4k" / "4k"; nullopt otherwise.
std::optional<Tier> ParseTier(std::string_view name);

}  // namespace onchip::alloc
