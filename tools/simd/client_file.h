// A client's file the daemon is about to map for the device (a memfd, a hugetlbfs file): made
// safe to reach for as long as the mapping lives, as the kernel's ib_umem_get
// (drivers/infiniband/core/umem.c) pins a user MR's pages before the device may touch them.
//
// A mapping of a file is only as long-lived as the file's size: pages past the end of a file
// that shrank raise SIGBUS in whoever touches them, and here that would be the daemon serving
// every client. So the file is sealed against shrinking (memfd's F_SEAL_SHRINK) first, and then
// its size is checked to cover the range. A file that cannot be sealed (not a memfd, DPDK's
// hugetlbfs files, a memfd made without MFD_ALLOW_SEALING) is mapped only for a client that could
// end the daemon anyway (its own user, or root, may kill(2) it: a SIGBUS gives such a client no
// power it lacks); for any other client it is refused with EPERM, and that client maps the memory
// as process memory instead (reached through its address-space handles, where a vanished page is
// a failed access, never a signal).
#pragma once

#include <cstdint>

#include "uapi/result.h"

namespace onchip::simd {

// EPERM: the file cannot be sealed against shrinking and `client_may_signal` is false. EINVAL:
// not a regular file. EFAULT: the file ends before offset + length (as ib_umem_get fails on a
// page it cannot pin).
Result<void> PinClientFile(int fd, uint64_t offset, uint64_t length, bool client_may_signal);

}  // namespace onchip::simd
