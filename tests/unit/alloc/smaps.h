// tests/unit/alloc/smaps.h: what the kernel says about the mapping that holds an address.
// Reads /proc/self/smaps: the page size the TLB uses and the VmFlags ("dc" = do not copy on fork, set by MADV_DONTFORK;
// "sh" = shared).
#pragma once

#include <cstddef>
#include <optional>
#include <string>

namespace onchip::alloc::testing {

struct MappingFacts {
  size_t kernel_page_size = 0;  // bytes
  std::string vm_flags;         // e.g. "rd wr sh mr mw me ms dd"
  bool has_flag(const char* f) const { return (" " + vm_flags + " ").find(std::string(" ") + f + " ") != std::string::npos; }
};

std::optional<MappingFacts> FactsFor(const void* addr);

}  // namespace onchip::alloc::testing
