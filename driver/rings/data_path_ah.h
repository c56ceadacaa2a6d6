// What a UD send needs of an address handle: the 48-byte address vector the WQE's datagram
// segment copies. The driver's AH object begins with this struct (its first member), so the
// send ring reaches the AV from the ibv_ah* of a work request without knowing the object.
#pragma once

#include <infiniband/verbs.h>

#include <cstddef>

#include "uapi/prm/send_wqe.h"

namespace onchip::driver::rings {

struct DataPathAh {
  ibv_ah verbs;  // first: an ibv_ah* casts back
  // Filled at create: rate/SL, RoCE v2 UDP source port, rmac, tclass, hop limit, GID/flow
  // label, the rgid. dqp_dct and the qkey are the work request's, written per send.
  prm::pod::mlx5_wqe_av av;

  static const DataPathAh* From(const ibv_ah* ah) {
    return reinterpret_cast<const DataPathAh*>(ah);
  }
};
static_assert(offsetof(DataPathAh, verbs) == 0);

}  // namespace onchip::driver::rings
