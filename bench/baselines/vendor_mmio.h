// The vendor's (rdma-core mlx5) device-memory and BlueFlame copies, reproduced instruction for
// instruction as baselines for onchip's benchmarks. Not for use outside bench/.
//
//  - VendorCopyToDm / VendorCopyFromDm: mlx5_access_dm() (providers/mlx5/verbs.c): one relaxed
//    32-bit atomic store (or load) per word, ascending, no fence. Relaxed atomics, like the
//    vendor's, so the compiler can neither widen nor merge them; out of line, as the vendor's is
//    reached through ibv_memcpy_to_dm(). The vendor's EFAULT/EINVAL checks are the caller's here.
//  - VendorBfCopy: mmio_memcpy_x64() (util/mmio.h, x86-64 branch): per 64 bytes, eight relaxed
//    64-bit stores, each loaded just before it is stored. Inline, as the vendor's is. bytecnt is
//    a non-zero multiple of 64 and both pointers 8-byte aligned, as the vendor requires.
//  - VendorFlushWrites: mmio_flush_writes() on x86-64, i.e. SFENCE (the vendor's post path issues
//    it after the BlueFlame copy).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace onchip::bench {

void VendorCopyToDm(void* dm, const void* host, std::size_t length);
void VendorCopyFromDm(void* host, const void* dm, std::size_t length);

inline void VendorBfCopy(void* dest, const void* src, std::size_t bytecnt) {
  auto* dst = static_cast<uint64_t*>(dest);
  const auto* s = static_cast<const uint64_t*>(src);
  // Written out eight times like the vendor's do-while body, so it compiles to the same straight
  // run of eight load/store pairs (a counted inner loop would add overhead the vendor lacks).
  const uint64_t* end = s + bytecnt / 8;
  do {
    std::atomic_ref<uint64_t>(dst[0]).store(s[0], std::memory_order_relaxed);
    std::atomic_ref<uint64_t>(dst[1]).store(s[1], std::memory_order_relaxed);
    std::atomic_ref<uint64_t>(dst[2]).store(s[2], std::memory_order_relaxed);
    std::atomic_ref<uint64_t>(dst[3]).store(s[3], std::memory_order_relaxed);
    std::atomic_ref<uint64_t>(dst[4]).store(s[4], std::memory_order_relaxed);
    std::atomic_ref<uint64_t>(dst[5]).store(s[5], std::memory_order_relaxed);
    std::atomic_ref<uint64_t>(dst[6]).store(s[6], std::memory_order_relaxed);
    std::atomic_ref<uint64_t>(dst[7]).store(s[7], std::memory_order_relaxed);
    dst += 8;
    s += 8;
  } while (s < end);
}

inline void VendorFlushWrites() { asm volatile("sfence" ::: "memory"); }

}  // namespace onchip::bench
