// What the kernel says about the mapping (VMA) that holds an address of this process, from
// /proc/self/smaps: its bounds, the page size the TLB uses, and its VmFlags ("dc": not copied on
// fork, set by MADV_DONTFORK; "sh": shared; "ht": hugetlb).
//
// KernelPageSize(addr, length) is what a driver needs to describe memory to a device in pages
// (an mkey's MTT: 2 MiB entries for hugetlb memory, 4 KiB otherwise): the KernelPageSize of the
// one mapping that holds the whole range. Transparent hugepages count as 4 KiB (the kernel may
// split them at any time). Reading smaps walks the page tables of the mappings before addr, so
// this is for registration paths, never for the data path.
//
// Errors: EFAULT when no mapping holds addr (MappingOf) or no single mapping holds
// [addr, addr + length) (KernelPageSize); the errno of opening /proc/self/smaps.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "uapi/result.h"

namespace onchip::alloc {

struct Mapping {
  uintptr_t start = 0;  // [start, end)
  uintptr_t end = 0;
  size_t kernel_page_size = 0;  // bytes
  std::string vm_flags;         // e.g. "rd wr sh mr mw me ms dd"
  bool has_flag(const char* f) const {
    return (" " + vm_flags + " ").find(std::string(" ") + f + " ") != std::string::npos;
  }
};

Result<Mapping> MappingOf(const void* addr);
Result<size_t> KernelPageSize(const void* addr, size_t length);

}  // namespace onchip::alloc
