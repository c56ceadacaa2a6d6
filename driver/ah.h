// Address handles (ibv_create_ah): a UD destination as the 48-byte mlx5 address vector the send
// ring copies into each UD WQE. An Ah begins with the data path's DataPathAh (ibv_ah, then the
// AV), so the ibv_ah* of a work request reaches the AV directly. No firmware command: libmlx5
// builds AVs in user space, and so does this driver.
//
// CreateAh checks as libmlx5 does (providers/mlx5/verbs.c mlx5_create_ah): a port outside 1..num_ports gives
// NULL without errno (kPortOutOfRange below; the verbs layer leaves errno alone); a RoCE address
// without a GRH EINVAL; an sgid_index beyond the GID table EINVAL. On an InfiniBand port an
// address without a GRH is the normal case: the AV carries rlid = dlid, stat_rate_sl = rate code
// << 4 | sl, fl_mlid = src_path_bits, and with is_global the GRH fields below plus the GRH bit
// (grh_gid_fl bit 30). The RoCE AV (providers/mlx5/wqe.h struct mlx5_wqe_av):
// stat_rate_sl = rate code << 4 | (sl & 7) << 1 (RoCE carries the SL as Ethernet priority);
// udp_sport from the flow label (RoCE v2); rmac from a link-local GID; tclass; hop_limit as
// given; grh_gid_fl = sgid_index << 20 | flow label (no GRH bit on RoCE); rgid. The queue key and
// the remote QP number are the work request's.
//
// An AH pins its PD (DeallocPd: EBUSY).
#pragma once

#include <infiniband/verbs.h>

#include <memory>

#include "driver/pd.h"
#include "driver/registry.h"
#include "driver/rings/data_path_ah.h"

namespace onchip::driver {

struct Ah {
  rings::DataPathAh dp;  // first: From() converts back; dp.verbs is the ibv_ah
  std::shared_ptr<Device> device;
  Pd* pd = nullptr;
  Life life;

  static Ah* From(ibv_ah* ah) { return reinterpret_cast<Ah*>(ah); }
};

// The errno-less refusal of a port outside the device's (the error CreateAh returns for it).
inline constexpr int kPortOutOfRange = 0;

Result<Ah*> CreateAh(Pd* pd, const ibv_ah_attr& attr);
Result<void> DestroyAh(Ah* ah);
// Unpins the PD: how Close() releases an AH (there is no device object).
Result<void> ReleaseAh(Ah& ah, Release why);

// The registry's view of the kind (registry.h KindTraits).
template <>
struct KindTraits<ObjectKind::kAh> {
  using Object = Ah;
  static Result<void> ReleaseOnDevice(Ah& object, Release why);  // ah.cc
};

}  // namespace onchip::driver
