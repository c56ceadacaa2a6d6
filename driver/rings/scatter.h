// Writing a scatter list into a receive or SRQ WQE: one data segment per non-empty SGE, then a
// terminator entry {0, MLX5_INVALID_LKEY, 0} when fewer than `max_gs` were written (a full list
// has none).
#pragma once

#include <infiniband/verbs.h>

#include <cstddef>
#include <cstdint>

#include "driver/rings/wqe_segment.h"
#include "uapi/prm/recv_wqe.h"

namespace onchip::driver::rings {

inline void StoreScatterEnd(std::byte* at) { StoreDataSegment(at, prm::MLX5_INVALID_LKEY, 0, 0); }

inline void WriteScatter(std::byte* at, const ibv_sge* sges, int num_sge, uint32_t max_gs) {
  uint32_t n = 0;
  for (int i = 0; i < num_sge; ++i) {
    if (sges[i].length == 0) continue;
    StoreDataSegment(at + std::size_t{n} * sizeof(prm::pod::mlx5_wqe_data_seg), sges[i].lkey, sges[i].addr, sges[i].length);
    ++n;
  }
  if (n < max_gs) StoreScatterEnd(at + std::size_t{n} * sizeof(prm::pod::mlx5_wqe_data_seg));
}

}  // namespace onchip::driver::rings
