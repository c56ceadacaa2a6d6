// Receive WQEs as plain structs (prm::pod): an RQ WQE is a list of scatter entries
// (pod::mlx5_wqe_data_seg, uapi/prm/send_wqe.h); an SRQ WQE starts with a next segment that
// links the free list. A list shorter than the queue's stride ends with a terminator entry.
#pragma once

#include <cstddef>
#include <cstdint>

#include "uapi/prm/endian.h"
#include "uapi/prm/pod.h"
#include "uapi/prm/send_wqe.h"
#include "uapi/prm/wqe.h"

namespace onchip::prm {

// The lkey of the entry that ends a scatter list early ({byte_count 0, lkey, addr 0}); the
// kernel calls it MLX5_TERMINATE_SCATTER_LIST_LKEY. Never a valid key.
inline constexpr uint32_t MLX5_INVALID_LKEY = 0x100;

namespace pod {

// The first 16 bytes of an SRQ WQE: the index of the WQE that follows it in the free list.
struct mlx5_wqe_srq_next_seg {
  uint8_t rsvd0[2];
  Be16 next_wqe_index;
  uint8_t signature;
  uint8_t rsvd1[11];
};
static_assert(sizeof(mlx5_wqe_srq_next_seg) * 8 == prm::mlx5_wqe_srq_next_seg::size_bits);
ONCHIP_PRM_POD_MATCHES(mlx5_wqe_srq_next_seg, next_wqe_index,
                       prm::mlx5_wqe_srq_next_seg::next_wqe_index);
ONCHIP_PRM_POD_MATCHES(mlx5_wqe_srq_next_seg, signature, prm::mlx5_wqe_srq_next_seg::signature);

}  // namespace pod
}  // namespace onchip::prm
