// alloc/memfd_region.h: backing regions from memfd_create, with or without MFD_HUGETLB.
//
// The region is MAP_SHARED (so fork never copies it on write), MADV_DONTFORK (so a child does not
// inherit DMA memory at all), populated (a device cannot take page faults) and zero (fresh file
// pages). The region owns its memfd; ReleaseMemfdRegion unmaps it and closes the fd.
#pragma once

#include <cstddef>

#include "alloc/region.h"
#include "uapi/result.h"

namespace onchip::alloc {

enum class PageKind { kHuge2M, kSmall4k };

// `bytes` must be a non-zero multiple of 2 MiB; the region is 2 MiB aligned either way.
// Errors: EINVAL (bytes), ENOMEM (no hugepages left / no memory), EINVAL or ENOSYS from the
// kernel when it lacks MFD_HUGETLB, or the errno of the failing memfd_create/ftruncate/mmap.
Result<Region> AcquireMemfdRegion(size_t bytes, PageKind kind);
void ReleaseMemfdRegion(const Region& r);

}  // namespace onchip::alloc
