// Thread domain (ibv_alloc_td): a promise that one thread at a time posts on the QPs created
// under it, so they get a doorbell of their own and take no locks.
//
// comp_mask must be 0 (EINVAL). With BlueFlame the domain owns a dedicated UAR and its bfreg
// (ALLOC_UAR, uar.h); without it, it uses the device's shared non-cached UAR (rdma-core's
// fallback). Parent domains reference it: DeallocTd answers EBUSY while one does.
#pragma once

#include <infiniband/verbs.h>

#include <memory>

#include "driver/device.h"
#include "driver/registry.h"
#include "driver/uar.h"

namespace onchip::driver {

struct Td {
  ibv_td ibv;  // first: From() converts back
  std::shared_ptr<Device> device;
  std::unique_ptr<Bfreg> dedicated;  // null when `bf` is the shared register
  Bfreg* bf = nullptr;               // what QPs on a parent domain with this TD ring
  Life life;                         // pinned by the parent domains referencing it

  static Td* From(ibv_td* td) { return reinterpret_cast<Td*>(td); }
};

Result<Td*> AllocTd(const std::shared_ptr<Device>& device, const ibv_td_init_attr& attr);
// EBUSY while a parent domain holds it; a DEALLOC_UAR failure leaves it allocated.
Result<void> DeallocTd(Td* td);
// DEALLOC_UAR of a dedicated UAR, the handle stays; how Close() releases a TD.
Result<void> ReleaseTdOnDevice(Td& td, Release why);

// The registry's view of the kind (registry.h KindTraits).
template <>
struct KindTraits<ObjectKind::kTd> {
  using Object = Td;
  static Result<void> ReleaseOnDevice(Td& object, Release why);  // td.cc
};

}  // namespace onchip::driver
