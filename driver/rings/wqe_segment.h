// Storing one 16-byte WQE segment, send or receive, as a single 16-byte store of two 8-byte words
// built in registers. The BlueFlame copy reads a send WQE back 16 bytes at a time
// (mmio::BlueFlameCopy64) a few nanoseconds later, and a load is forwarded from the store buffer
// only when one store covers it: narrower stores under it would make the copy wait for them to
// reach the cache. A receive WQE is never read back, but one store instead of three is also
// fewer stores for the next fence to wait for.
#pragma once

#include <emmintrin.h>

#include <cstddef>
#include <cstdint>

#include "uapi/prm/endian.h"
#include "uapi/prm/send_wqe.h"

namespace onchip::driver::rings {

inline void StoreSegment(std::byte* at, uint64_t first, uint64_t second) {
  _mm_storeu_si128(reinterpret_cast<__m128i*>(at),
                   _mm_set_epi64x(static_cast<long long>(second), static_cast<long long>(first)));
}

// Two big-endian 32-bit fields as they lie in memory, first at the lower address.
inline uint64_t Pair(prm::Be32 first, prm::Be32 second) {
  return uint64_t{first.raw()} | (uint64_t{second.raw()} << 32);
}

// mlx5_wqe_data_seg: byte_count, lkey, addr.
inline void StoreDataSegment(std::byte* at, uint32_t lkey, uint64_t addr, uint32_t length) {
  StoreSegment(at, Pair(prm::Be32::FromHost(length), prm::Be32::FromHost(lkey)),
               prm::Be64::FromHost(addr).raw());
}

}  // namespace onchip::driver::rings
