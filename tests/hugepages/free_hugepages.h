// What every hugepage-tier (tier 2) test checks first: enough free 2 MiB hugepages, or the
// reason it must skip, worded the same everywhere:
//   if (auto why = MissingFreeHugepages(8)) GTEST_SKIP() << *why;
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "alloc/hugepage_pool.h"

namespace onchip::testing {

inline std::optional<std::string> MissingFreeHugepages(uint64_t needed) {
  const auto pool = alloc::ReadHugepagePool();
  if (pool && pool->free >= needed) return std::nullopt;
  return "needs " + std::to_string(needed) + " free 2 MiB hugepages; have " +
         (pool ? std::to_string(pool->free) + " free of " + std::to_string(pool->reserved)
               : std::string("no hugepage support")) +
         " (as root: echo 256 > /proc/sys/vm/nr_hugepages)";
}

}  // namespace onchip::testing
