// The verbs with exactly rdma-core's signatures and error conventions, over the driver's objects
// (dm.h, pd.h, parent_domain.h, td.h, mr.h, mw.h, dmah.h): what the libibverbs provider puts in
// its ops table (or exports), and what tests written against <infiniband/verbs.h> call.
//   - returning a pointer: NULL with errno set on failure (ibv_alloc_dm, mlx5dv_alloc_dm,
//     ibv_alloc_pd, ibv_reg_dm_mr, ibv_reg_mr, ibv_alloc_td, ibv_alloc_parent_domain,
//     ibv_alloc_mw, ibv_alloc_dmah, ibv_reg_mr_ex);
//   - returning int: 0 or the errno itself (ibv_free_dm, ibv_dealloc_pd, ibv_dereg_mr,
//     ibv_dealloc_td, ibv_dealloc_mw, ibv_dealloc_dmah, mlx5dv_init_obj);
//   - the provider half of ibv_rereg_mr: 0, or the errno itself with errno set too (libibverbs
//     turns any failure into IBV_REREG_MR_ERR_CMD and leaves errno to say why).
// The context is one a Device serves: its embedded one (Context::verbs()) or the provider's
// (Device::Serve).
#pragma once

#include <infiniband/mlx5dv.h>
#include <infiniband/verbs.h>

#include "uapi/verbs/dmah.h"

namespace onchip::driver::verbs {

ibv_dm* alloc_dm(ibv_context* context, ibv_alloc_dm_attr* attr);
ibv_dm* dv_alloc_dm(ibv_context* context, ibv_alloc_dm_attr* attr, mlx5dv_alloc_dm_attr* dv_attr);
int free_dm(ibv_dm* dm);
ibv_pd* alloc_pd(ibv_context* context);
int dealloc_pd(ibv_pd* pd);
ibv_mr* reg_dm_mr(ibv_pd* pd, ibv_dm* dm, uint64_t dm_offset, size_t length, unsigned int access);
int dereg_mr(ibv_mr* mr);
// What ibv_rereg_mr asks of the provider once its own checks passed. On success the MR's keys,
// pd, addr and length describe the new registration (driver/mr.h).
int rereg_mr(ibv_mr* mr, int flags, ibv_pd* pd, void* addr, size_t length, int access);
// mlx5dv_init_obj(MLX5DV_OBJ_DM) for one DM.
int dv_init_dm(ibv_dm* dm, mlx5dv_dm* out);

// ibv_reg_mr_iova2 (ibv_reg_mr is iova = addr).
ibv_mr* reg_mr(ibv_pd* pd, void* addr, size_t length, uint64_t iova, unsigned int access);
// ibv_reg_mr_ex: ADDR (with IOVA, default addr) and DMAH; FD registrations are EOPNOTSUPP.
ibv_mr* reg_mr_ex(ibv_pd* pd, ibv_mr_init_attr* attr);
ibv_td* alloc_td(ibv_context* context, ibv_td_init_attr* attr);
int dealloc_td(ibv_td* td);
ibv_pd* alloc_parent_domain(ibv_context* context, ibv_parent_domain_init_attr* attr);
ibv_mw* alloc_mw(ibv_pd* pd, ibv_mw_type type);
int dealloc_mw(ibv_mw* mw);
ibv_dmah* alloc_dmah(ibv_context* context, ibv_dmah_init_attr* attr);
int dealloc_dmah(ibv_dmah* dmah);

}  // namespace onchip::driver::verbs
