// Writing a scatter list into a receive or SRQ WQE: one data segment per non-empty SGE, then a
// terminator entry when fewer than `max_gs` were written (a full list has none).
#pragma once

#include <infiniband/verbs.h>

#include <cstddef>
#include <cstdint>

#include "uapi/prm/recv_wqe.h"
#include "uapi/prm/send_wqe.h"

namespace onchip::driver::rings {

inline void WriteScatter(std::byte* at, const ibv_sge* sges, int num_sge, uint32_t max_gs) {
  auto* seg = reinterpret_cast<prm::pod::mlx5_wqe_data_seg*>(at);
  uint32_t n = 0;
  for (int i = 0; i < num_sge; ++i) {
    if (sges[i].length == 0) continue;
    seg[n].byte_count = prm::Be32::FromHost(sges[i].length);
    seg[n].lkey = prm::Be32::FromHost(sges[i].lkey);
    seg[n].addr = prm::Be64::FromHost(sges[i].addr);
    ++n;
  }
  if (n < max_gs) {
    seg[n].byte_count = prm::Be32::FromHost(0);
    seg[n].lkey = prm::Be32::FromHost(prm::MLX5_INVALID_LKEY);
    seg[n].addr = prm::Be64::FromHost(0);
  }
}

}  // namespace onchip::driver::rings
