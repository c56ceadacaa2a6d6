// mlx5_err_cqe.syndrome: why the device completed a work request in error (kernel
// include/linux/mlx5/cq.h / rdma-core mlx5dv.h MLX5_CQE_SYNDROME_*). The layout is in
// uapi/prm/wqe.h (mlx5_err_cqe).
#pragma once

#include <cstdint>

namespace onchip::prm {

enum CqeSyndrome : uint8_t {
  MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR = 0x01,
  MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR = 0x02,
  MLX5_CQE_SYNDROME_LOCAL_PROT_ERR = 0x04,
  MLX5_CQE_SYNDROME_WR_FLUSH_ERR = 0x05,
  MLX5_CQE_SYNDROME_MW_BIND_ERR = 0x06,
  MLX5_CQE_SYNDROME_BAD_RESP_ERR = 0x10,
  MLX5_CQE_SYNDROME_LOCAL_ACCESS_ERR = 0x11,
  MLX5_CQE_SYNDROME_REMOTE_INVAL_REQ_ERR = 0x12,
  MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR = 0x13,
  MLX5_CQE_SYNDROME_REMOTE_OP_ERR = 0x14,
  MLX5_CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR = 0x15,
  MLX5_CQE_SYNDROME_RNR_RETRY_EXC_ERR = 0x16,
  MLX5_CQE_SYNDROME_REMOTE_ABORTED_ERR = 0x22,
};

}  // namespace onchip::prm
