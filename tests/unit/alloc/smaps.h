// tests/unit/alloc/smaps.h: what the kernel says about the mapping that holds an address
// (alloc/mapping.h), as the allocator tests ask it: the page size the TLB uses and the VmFlags
// ("dc" = do not copy on fork, set by MADV_DONTFORK; "sh" = shared).
#pragma once

#include <optional>

#include "alloc/mapping.h"

namespace onchip::alloc::testing {

using MappingFacts = Mapping;

inline std::optional<MappingFacts> FactsFor(const void* addr) {
  auto m = MappingOf(addr);
  if (!m) return std::nullopt;
  return *m;
}

}  // namespace onchip::alloc::testing
