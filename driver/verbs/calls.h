// The verbs with exactly rdma-core's signatures and error conventions, over the driver's objects
// (dm.h, pd.h, parent_domain.h, td.h, mr.h, mw.h, dmah.h, cq.h, qp.h, srq.h, ah.h): what the libibverbs provider puts in
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

// Whether `object` was made in this process (its device is this process's: Device::
// InThisProcess). A forked child inherits its parent's objects as memory only: their device's
// threads and command path stayed in the parent, so the provider refuses to command them there,
// and the calls below do not find them as arguments of this process's objects (as the kernel
// finds no handle of another uverbs file). True for null (refused as null where it matters).
bool OfThisProcess(ibv_pd* pd);
bool OfThisProcess(ibv_dm* dm);
bool OfThisProcess(ibv_mw* mw);
bool OfThisProcess(ibv_td* td);
bool OfThisProcess(ibv_mr* mr);
bool OfThisProcess(ibv_cq* cq);
bool OfThisProcess(ibv_qp* qp);
bool OfThisProcess(ibv_srq* srq);
bool OfThisProcess(ibv_ah* ah);
bool OfThisProcess(ibv_xrcd* xrcd);
bool OfThisProcess(ibv_dmah* dmah);

ibv_dm* alloc_dm(ibv_context* context, ibv_alloc_dm_attr* attr);
ibv_dm* dv_alloc_dm(ibv_context* context, ibv_alloc_dm_attr* attr, mlx5dv_alloc_dm_attr* dv_attr);
int free_dm(ibv_dm* dm);
ibv_pd* alloc_pd(ibv_context* context);
int dealloc_pd(ibv_pd* pd);
// ibv_import_pd / ibv_import_mr / ibv_import_dm: another context's face of an object of the
// same uverbs file, found by its handle (ENOENT when none; driver/import.h). The unimport calls
// free a face (libibverbs gives them no return value).
ibv_pd* import_pd(ibv_context* context, uint32_t pd_handle);
ibv_mr* import_mr(ibv_pd* pd, uint32_t mr_handle);
ibv_dm* import_dm(ibv_context* context, uint32_t dm_handle);
void unimport_pd(ibv_pd* pd);
void unimport_mr(ibv_mr* mr);
void unimport_dm(ibv_dm* dm);
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

// ibv_create_comp_channel for a context of this device: a pipe whose read end is the
// channel's fd and whose write end the device's event thread keeps (driver/events.h); the struct
// is malloc'd, as libibverbs' ibv_destroy_comp_channel frees it. EOPNOTSUPP when the device
// delivers no interrupts.
ibv_comp_channel* create_comp_channel(ibv_context* context);

// Completion queues (driver/cq.h). A channel unknown to the device or of another context EBADF.
// Both are provider ops: libibverbs runs verbs_init_cq on what they return (channel reference,
// cq_context, event counters; ibv_create_cq in libibverbs/verbs.c, ibv_create_cq_ex in
// libibverbs/device.c __lib_ibv_create_cq_ex), so neither takes the channel's reference.
// create_cq_ex: comp_mask beyond FLAGS and PD EINVAL.
ibv_cq* create_cq(ibv_context* context, int cqe, ibv_comp_channel* channel, int comp_vector);
ibv_cq_ex* create_cq_ex(ibv_context* context, ibv_cq_init_attr_ex* attr);
int destroy_cq(ibv_cq* cq);
// ibv_resize_cq and ibv_modify_cq's provider ops: 0 or the errno (driver/cq.h).
int resize_cq(ibv_cq* cq, int cqe);
int modify_cq(ibv_cq* cq, ibv_modify_cq_attr* attr);

// Queue pairs (driver/qp.h). create_qp is ibv_create_qp's provider op (libibverbs fills nothing
// after it); create_qp_ex is ibv_create_qp_ex whole: comp_mask beyond PD, CREATE_FLAGS and
// SEND_OPS_FLAGS and XRCD EINVAL, TSO headers, RSS and create flags other than
// BLOCK_SELF_MCAST_LB EOPNOTSUPP, no PD EINVAL; an XRC receive QP takes IBV_QP_INIT_ATTR_XRCD
// instead of a PD (XRCD on any other type, or XRC_RECV without it, EINVAL).
// Both write back the capabilities the QP has (max_send_wr, max_recv_wr, max_inline_data, ...).
ibv_qp* create_qp(ibv_pd* pd, ibv_qp_init_attr* attr);
ibv_qp* create_qp_ex(ibv_context* context, ibv_qp_init_attr_ex* attr);
int modify_qp(ibv_qp* qp, ibv_qp_attr* attr, int attr_mask);
int query_qp(ibv_qp* qp, ibv_qp_attr* attr, int attr_mask, ibv_qp_init_attr* init_attr);
int destroy_qp(ibv_qp* qp);
// ibv_bind_mw: a type 1 window bound through a UMR WQE on `qp`'s send queue (mw_bind.h's
// checks first); on success mw->rkey is the new key.
int bind_mw(ibv_qp* qp, ibv_mw* mw, ibv_mw_bind* mw_bind);

// Shared receive queues (driver/srq.h): create_srq is the provider op (libibverbs then fills
// context, srq_context, pd and the event fields); create_srq_ex: comp_mask beyond TYPE, PD,
// XRCD, CQ and TM EINVAL, tag-matching SRQs EOPNOTSUPP; IBV_SRQT_XRC needs PD, XRCD and CQ
// (EINVAL). get_srq_num: the SRQ's number (what an XRC sender names).
ibv_srq* create_srq(ibv_pd* pd, ibv_srq_init_attr* attr);
ibv_srq* create_srq_ex(ibv_context* context, ibv_srq_init_attr_ex* attr);
int get_srq_num(ibv_srq* srq, uint32_t* srq_num);
int modify_srq(ibv_srq* srq, ibv_srq_attr* attr, int attr_mask);

// XRC domains (driver/xrcd.h): open_xrcd as libibverbs' ibv_cmd_open_xrcd checks comp_mask
// (bits beyond FD | OFLAGS EOPNOTSUPP, FD and OFLAGS both required EINVAL), then fd -1 or an
// open file (EBADF), a file with no domain needs O_CREAT (EAGAIN), O_EXCL on one that has a
// domain EINVAL, fd -1 always a new domain; close_xrcd: 0 or the errno (EBUSY while in use).
ibv_xrcd* open_xrcd(ibv_context* context, ibv_xrcd_init_attr* attr);
int close_xrcd(ibv_xrcd* xrcd);
int query_srq(ibv_srq* srq, ibv_srq_attr* attr);
int destroy_srq(ibv_srq* srq);

// Address handles (driver/ah.h). A port outside the device's: NULL with errno untouched.
ibv_ah* create_ah(ibv_pd* pd, ibv_ah_attr* attr);
int destroy_ah(ibv_ah* ah);

}  // namespace onchip::driver::verbs
