#include "tests/unit/alloc/smaps.h"

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>

namespace onchip::alloc::testing {

std::optional<MappingFacts> FactsFor(const void* addr) {
  std::ifstream in("/proc/self/smaps");
  const auto a = reinterpret_cast<uintptr_t>(addr);
  bool inside = false;
  MappingFacts facts;
  for (std::string line; std::getline(in, line);) {
    unsigned long lo = 0, hi = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx ", &lo, &hi) == 2 && line.find('-') < 17) {
      if (inside) return facts;
      inside = a >= lo && a < hi;
      continue;
    }
    if (!inside) continue;
    unsigned long kb = 0;
    if (std::sscanf(line.c_str(), "KernelPageSize: %lu kB", &kb) == 1) facts.kernel_page_size = kb * 1024;
    if (line.rfind("VmFlags:", 0) == 0) facts.vm_flags = line.substr(9);
  }
  if (inside) return facts;
  return std::nullopt;
}

}  // namespace onchip::alloc::testing
