#include "alloc/dpdk_region.h"

#include <rte_errno.h>
#include <rte_malloc.h>
#include <rte_memory.h>
#include <sys/mman.h>

#include <cerrno>

namespace onchip::alloc {

Result<Region> AcquireDpdkRegion(size_t bytes, int socket) {
  if (bytes == 0 || bytes % kHugePageBytes != 0) return Fail(EINVAL, "dpdk region: size");
  void* p = rte_zmalloc_socket("onchip-dma", bytes, kHugePageBytes, socket < 0 ? SOCKET_ID_ANY : socket);
  if (p == nullptr) return Fail(ENOMEM, "rte_zmalloc_socket");
  auto fail = [p](int e, const char* what) {
    rte_free(p);
    return Fail(e, what);
  };
  const rte_memseg* first = rte_mem_virt2memseg(p, nullptr);
  if (first == nullptr) return fail(EFAULT, "rte_mem_virt2memseg");
  if (first->hugepage_sz < kHugePageBytes) return fail(ENOTSUP, "dpdk region: EAL memory is not hugepages");
  int fd = rte_memseg_get_fd(first);
  if (fd < 0) return fail(rte_errno, "rte_memseg_get_fd");
  size_t first_off = 0;
  if (rte_memseg_get_fd_offset(first, &first_off) != 0) return fail(rte_errno, "rte_memseg_get_fd_offset");
  first_off += static_cast<size_t>(static_cast<char*>(p) - static_cast<char*>(first->addr));
  // One fd + offset must describe the whole region: check every further segment continues it.
  char* end = static_cast<char*>(p) + bytes;
  for (char* at = static_cast<char*>(first->addr) + first->len; at < end;) {
    const rte_memseg* ms = rte_mem_virt2memseg(at, nullptr);
    size_t off = 0;
    if (ms == nullptr || ms->addr != at || rte_memseg_get_fd(ms) != fd ||
        rte_memseg_get_fd_offset(ms, &off) != 0 || off != first_off + (at - static_cast<char*>(p))) {
      return fail(ENOTSUP, "dpdk region: pages are not one range of one file (--single-file-segments)");
    }
    at += ms->len;
  }
  if (madvise(p, bytes, MADV_DONTFORK) != 0) return fail(errno, "dpdk region: madvise(MADV_DONTFORK)");
  Region r;
  r.addr = p;
  r.length = bytes;
  r.fd = fd;
  r.fd_offset = first_off;
  r.tier = Tier::kDpdkHugepages;
  r.page_size = first->hugepage_sz;
  r.numa_socket = first->socket_id;
  return r;
}

void ReleaseDpdkRegion(const Region& r) {
  // Undo DONTFORK: the EAL may hand these pages to someone else who expects default semantics.
  madvise(r.addr, r.length, MADV_DOFORK);
  rte_free(r.addr);
}

}  // namespace onchip::alloc
