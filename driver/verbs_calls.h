// The DM calls with exactly rdma-core's signatures and error conventions, over the objects in
// dm.h / pd.h / mr.h: what the libibverbs provider will put in its ops table, and what tests
// written against <infiniband/verbs.h> call.
//   - returning a pointer: NULL with errno set on failure (ibv_alloc_dm, mlx5dv_alloc_dm,
//     ibv_alloc_pd, ibv_reg_dm_mr);
//   - returning int: 0 or the errno itself (ibv_free_dm, ibv_dealloc_pd, ibv_dereg_mr,
//     mlx5dv_init_obj).
// The context must be a Device's embedded one (Device::embedded_verbs(), Context::verbs()).
#pragma once

#include <infiniband/mlx5dv.h>
#include <infiniband/verbs.h>

namespace onchip::driver::verbs {

ibv_dm* alloc_dm(ibv_context* context, ibv_alloc_dm_attr* attr);
ibv_dm* dv_alloc_dm(ibv_context* context, ibv_alloc_dm_attr* attr, mlx5dv_alloc_dm_attr* dv_attr);
int free_dm(ibv_dm* dm);
ibv_pd* alloc_pd(ibv_context* context);
int dealloc_pd(ibv_pd* pd);
ibv_mr* reg_dm_mr(ibv_pd* pd, ibv_dm* dm, uint64_t dm_offset, size_t length, unsigned int access);
int dereg_mr(ibv_mr* mr);
// mlx5dv_init_obj(MLX5DV_OBJ_DM) for one DM.
int dv_init_dm(ibv_dm* dm, mlx5dv_dm* out);

}  // namespace onchip::driver::verbs
