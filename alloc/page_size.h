// The page size the kernel maps a range of this process with, for whoever must describe that
// memory to a device in pages (an mkey's MTT: 2 MiB entries for hugetlb memory, 4 KiB otherwise).
//
// KernelPageSize(addr, length) reads /proc/self/smaps up to the mapping (VMA) that holds addr and
// returns its KernelPageSize when that one mapping holds the whole range: 2 MiB for hugetlb
// memory (MAP_HUGETLB, memfd MFD_HUGETLB, DPDK's hugepages), 4 KiB for ordinary memory
// (transparent hugepages count as 4 KiB: the kernel may split them at any time). Reading smaps
// walks the page tables of the mappings before addr, so this is for registration paths, not for
// the data path.
//
// Errors: EFAULT when no single mapping holds [addr, addr + length) (unmapped, or spanning
// mappings); the errno of opening /proc/self/smaps.
#pragma once

#include <cstddef>

#include "uapi/result.h"

namespace onchip::alloc {

Result<size_t> KernelPageSize(const void* addr, size_t length);

}  // namespace onchip::alloc
