// alloc/dpdk_region.h: backing regions from the DPDK EAL heap (hugepages).
//
// rte_zmalloc_socket(bytes, 2 MiB alignment, socket): zeroed, on the requested NUMA socket.
// The region's fd and offset come from the memseg that backs it (rte_memseg_get_fd and
// rte_memseg_get_fd_offset); a region whose pages are not one contiguous range of one file
// (an EAL without --single-file-segments) is refused with ENOTSUP when it spans pages.
// EAL memory under --in-memory is a shared memfd mapping; the region is also MADV_DONTFORK.
// The caller must hold an EalLease while any region lives.
#pragma once

#include <cstddef>

#include "alloc/region.h"
#include "uapi/result.h"

namespace onchip::alloc {

// `bytes` a non-zero multiple of 2 MiB; `socket` a NUMA node or -1 for any.
// Errors: EINVAL (bytes), ENOMEM (the EAL heap could not grow), ENOTSUP (not hugepage memory, or
// pages not one range of one file), the errno of rte_memseg_get_fd / madvise.
Result<Region> AcquireDpdkRegion(size_t bytes, int socket);
void ReleaseDpdkRegion(const Region& r);

}  // namespace onchip::alloc
