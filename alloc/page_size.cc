#include "alloc/page_size.h"

#include <cerrno>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

namespace onchip::alloc {

Result<size_t> KernelPageSize(const void* addr, size_t length) {
  const auto start = reinterpret_cast<uintptr_t>(addr);
  if (length == 0 || start + length < start) return Fail(EFAULT, "page size: empty or wrapping range");
  FILE* f = std::fopen("/proc/self/smaps", "re");
  if (f == nullptr) return Fail(errno, "page size: open /proc/self/smaps");
  char* line = nullptr;
  size_t cap = 0;
  bool inside = false;  // the lines after the header of the mapping that holds the range
  Result<size_t> result = Fail(EFAULT, "page size: no single mapping holds the range");
  while (getline(&line, &cap, f) > 0) {
    uintmax_t lo = 0, hi = 0;
    // A mapping's header is "lo-hi perms offset dev inode [path]"; its fields are "Name: value".
    if (std::sscanf(line, "%jx-%jx ", &lo, &hi) == 2) {
      if (inside) break;  // that mapping had no KernelPageSize line
      if (lo <= start && start < hi) {
        if (start + length > hi) break;
        inside = true;
      }
      continue;
    }
    unsigned long kib = 0;
    if (inside && std::sscanf(line, "KernelPageSize: %lu kB", &kib) == 1) {
      result = static_cast<size_t>(kib) * 1024;
      break;
    }
  }
  std::free(line);
  std::fclose(f);
  return result;
}

}  // namespace onchip::alloc
