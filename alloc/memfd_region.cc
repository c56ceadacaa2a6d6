#include "alloc/memfd_region.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>

namespace onchip::alloc {
namespace {
// linux/memfd.h's MFD_HUGE_2MB (log2(2 MiB) << MFD_HUGE_SHIFT); that header clashes with glibc's.
constexpr unsigned kMfdHuge2MB = 21u << 26;
}  // namespace

Result<Region> AcquireMemfdRegion(size_t bytes, PageKind kind) {
  if (bytes == 0 || bytes % kHugePageBytes != 0) return Fail(EINVAL, "memfd region: size");
  const bool huge = kind == PageKind::kHuge2M;
  // MFD_ALLOW_SEALING: a device daemon seals the file against shrinking before it maps it
  // (tools/simd/client_file.h); without it the daemon reaches the memory the slow way.
  unsigned flags = MFD_CLOEXEC | MFD_ALLOW_SEALING | (huge ? MFD_HUGETLB | kMfdHuge2MB : 0u);
  int fd = memfd_create(huge ? "onchip-dma-2m" : "onchip-dma-4k", flags);
  if (fd < 0) return Fail(errno, huge ? "memfd_create(MFD_HUGETLB)" : "memfd_create");
  if (ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
    int e = errno;
    close(fd);
    return Fail(e, "memfd region: ftruncate");
  }
  // Reserve 2 MiB of slack so the mapping can start on a 2 MiB boundary: buffers rely on region
  // alignment for alignments up to 2 MiB, and a hugetlb mapping must start on one.
  size_t reserve = bytes + kHugePageBytes;
  void* span = mmap(nullptr, reserve, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (span == MAP_FAILED) {
    int e = errno;
    close(fd);
    return Fail(e, "memfd region: reserve address space");
  }
  auto base = reinterpret_cast<uintptr_t>(span);
  auto aligned = (base + kHugePageBytes - 1) & ~(uintptr_t{kHugePageBytes} - 1);
  // MAP_POPULATE: hugetlb pages are reserved here (ENOMEM when the pool is short) and every page
  // is resident before the device can see it.
  void* p = mmap(reinterpret_cast<void*>(aligned), bytes, PROT_READ | PROT_WRITE,
                 MAP_SHARED | MAP_FIXED | MAP_POPULATE, fd, 0);
  if (p == MAP_FAILED) {
    int e = errno;
    munmap(span, reserve);
    close(fd);
    return Fail(e, huge ? "memfd region: mmap hugetlb" : "memfd region: mmap");
  }
  if (aligned > base) munmap(span, aligned - base);
  if (base + reserve > aligned + bytes) {
    munmap(reinterpret_cast<void*>(aligned + bytes), base + reserve - aligned - bytes);
  }
  Region r;
  r.addr = p;
  r.length = bytes;
  r.fd = fd;
  r.fd_offset = 0;
  r.tier = huge ? Tier::kMemfdHugetlb : Tier::kMemfd4k;
  r.page_size = huge ? kHugePageBytes : static_cast<size_t>(sysconf(_SC_PAGESIZE));
  // The child of a fork() must not share (or copy) pages a device is writing.
  if (madvise(p, bytes, MADV_DONTFORK) != 0) {
    int e = errno;
    ReleaseMemfdRegion(r);
    return Fail(e, "memfd region: madvise(MADV_DONTFORK)");
  }
  if (huge) {
    // MAP_POPULATE does not report a short hugetlb pool on every kernel; check residency so a
    // region never promises pages that a later touch would SIGBUS on.
    unsigned char vec[1];
    for (size_t off = 0; off < bytes; off += kHugePageBytes) {
      if (mincore(static_cast<char*>(p) + off, 4096, vec) != 0 || !(vec[0] & 1)) {
        ReleaseMemfdRegion(r);
        return Fail(ENOMEM, "memfd region: hugepage not resident");
      }
    }
  }
  return r;
}

void ReleaseMemfdRegion(const Region& r) {
  munmap(r.addr, r.length);
  close(r.fd);
}

}  // namespace onchip::alloc
