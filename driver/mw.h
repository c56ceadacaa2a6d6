// Memory windows (ibv_alloc_mw): an rkey that exposes part of an MR remotely and can be moved or
// revoked without re-registering, shaped as rdma-core's struct ibv_mw.
//
// AllocMw is mlx5_ib's: the device must have windows (cmd_hca_cap.imaicl, else EOPNOTSUPP); the
// type must be IBV_MW_TYPE_1 or IBV_MW_TYPE_2 (EINVAL); then CREATE_MKEY with free = 1 (bound to
// nothing), umr_en = 1 (a UMR binds it), access mode KLMS with room for one KLM (4 octowords,
// mlx5_ib's minimum), en_rinval for type 2 (remote invalidation), qpn 0xffffff, lr = 1, and the
// PD. rkey = the mkey (index << 8 | variant). The window pins its PD (DeallocPd: EBUSY).
//
// Binding happens on a send queue (a UMR WQE, the data path). Each bind carries a new key byte:
// NextRkey(rkey) is ibv_inc_rkey, bumping only the low 8 bits, so a stale rkey from before a
// rebind no longer matches.
#pragma once

#include <infiniband/verbs.h>

#include <memory>

#include "driver/pd.h"
#include "driver/registry.h"

namespace onchip::driver {

struct Mw {
  ibv_mw ibv;  // first: From() converts back
  std::shared_ptr<Device> device;
  Pd* pd = nullptr;
  uint32_t mkey_index = 0;
  Life life;

  static Mw* From(ibv_mw* mw) { return reinterpret_cast<Mw*>(mw); }
};

// ibv_inc_rkey.
constexpr uint32_t NextRkey(uint32_t rkey) { return (rkey & ~0xffu) | ((rkey + 1) & 0xffu); }

Result<Mw*> AllocMw(Pd* pd, int type);
// DESTROY_MKEY; a firmware failure leaves the window allocated.
Result<void> DeallocMw(Mw* mw);
// DESTROY_MKEY, then the PD is unpinned; the handle stays. How Close() releases a window.
Result<void> ReleaseMwOnDevice(Mw& mw, Release why);

// The registry's view of the kind (registry.h KindTraits).
template <>
struct KindTraits<ObjectKind::kMw> {
  using Object = Mw;
  static Result<void> ReleaseOnDevice(Mw& object, Release why);  // mw.cc
};

}  // namespace onchip::driver
