#include "alloc/tier.h"

namespace onchip::alloc {

std::optional<Tier> ParseTier(std::string_view name) {
  if (name == "dpdk-hugepages" || name == "dpdk") return Tier::kDpdkHugepages;
  if (name == "memfd-hugetlb" || name == "hugetlb") return Tier::kMemfdHugetlb;
  if (name == "memfd-4k" || name == "4k") return Tier::kMemfd4k;
  return std::nullopt;
}

}  // namespace onchip::alloc
