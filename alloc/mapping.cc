#include "alloc/mapping.h"

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <string_view>

namespace onchip::alloc {

Result<Mapping> MappingOf(const void* addr) {
  const auto a = reinterpret_cast<uintptr_t>(addr);
  FILE* f = std::fopen("/proc/self/smaps", "re");
  if (f == nullptr) return Fail(errno, "mapping: open /proc/self/smaps");
  char* line = nullptr;
  size_t cap = 0;
  bool inside = false;  // reading the fields of the mapping that holds addr
  Mapping m;
  ssize_t n = 0;
  while ((n = getline(&line, &cap, f)) > 0) {
    uintmax_t lo = 0, hi = 0;
    // A mapping's header is "lo-hi perms offset dev inode [path]"; its fields are "Name: value"
    // (no field name is hex digits followed by '-').
    if (std::sscanf(line, "%jx-%jx ", &lo, &hi) == 2) {
      if (inside) break;
      if (lo <= a && a < hi) {
        inside = true;
        m.start = static_cast<uintptr_t>(lo);
        m.end = static_cast<uintptr_t>(hi);
      }
      continue;
    }
    if (!inside) continue;
    unsigned long kib = 0;
    std::string_view field(line, static_cast<size_t>(n));
    if (std::sscanf(line, "KernelPageSize: %lu kB", &kib) == 1) {
      m.kernel_page_size = static_cast<size_t>(kib) * 1024;
    } else if (field.starts_with("VmFlags:")) {
      field.remove_prefix(8);
      while (!field.empty() && field.front() == ' ') field.remove_prefix(1);
      while (!field.empty() && (field.back() == '\n' || field.back() == ' ')) field.remove_suffix(1);
      m.vm_flags.assign(field);
    }
  }
  std::free(line);
  std::fclose(f);
  if (!inside) return Fail(EFAULT, "mapping: no mapping holds the address");
  return m;
}

Result<size_t> KernelPageSize(const void* addr, size_t length) {
  const auto a = reinterpret_cast<uintptr_t>(addr);
  if (length == 0 || a + length < a) return Fail(EFAULT, "page size: empty or wrapping range");
  ONCHIP_TRY(Mapping m, MappingOf(addr));
  if (length > m.end - a) return Fail(EFAULT, "page size: the range spans more than one mapping");
  if (m.kernel_page_size == 0) return Fail(EFAULT, "page size: smaps gave no KernelPageSize");
  return m.kernel_page_size;
}

}  // namespace onchip::alloc
