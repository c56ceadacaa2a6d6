// Protection domain (ALLOC_PD / DEALLOC_PD), shaped as rdma-core's struct ibv_pd.
//
// A parent domain (parent_domain.h) is a Pd too, as in rdma-core: it wraps a real PD (same pdn
// and handle, no device object of its own) and is told apart by `protection_domain` being set.
// An imported PD (import.h) wraps one the same way, marked `imported`. ibv_dealloc_pd frees any
// of them; DeallocPd dispatches.
//
// Children pin their PD (Life::Pin, registry.h): MRs, windows and parent domains on a PD; queue
// buffers (queue_buffer.h) on a PD or parent domain. While any pin is held DeallocPd answers
// EBUSY and the PD stays usable.
#pragma once

#include <infiniband/verbs.h>

#include <memory>

#include "driver/device.h"
#include "driver/registry.h"

namespace onchip::driver {

struct Pd {
  ibv_pd ibv;  // first: From() converts back
  std::shared_ptr<Device> device;
  uint32_t pdn = 0;
  Life life;
  Pd* protection_domain = nullptr;  // set on a parent domain and an imported PD: the PD it wraps
  bool imported = false;            // another context's face of a PD (driver/import.h)
  // How DeallocPd frees a face (a parent domain, an imported PD): set by whoever made it
  // (parent_domain.cc, import.cc), so the PD names no kind above it; null for a PD.
  Result<void> (*free_face)(Pd* face) = nullptr;

  static Pd* From(ibv_pd* pd) { return reinterpret_cast<Pd*>(pd); }
  // The PD objects created on `pd` hang on: `pd` itself, or the original an imported face
  // reaches (a face is this context's handle only: unimporting it never waits for children).
  static Pd* Parent(ibv_pd* pd) {
    Pd* p = From(pd);
    return p->imported ? p->protection_domain : p;
  }
  bool is_parent_domain() const { return protection_domain != nullptr && !imported; }
  // The PD the device knows: this one, or the one a parent domain wraps.
  Pd& protection() { return protection_domain ? *protection_domain : *this; }
};

Result<Pd*> AllocPd(const std::shared_ptr<Device>& device);
// Frees a PD (DEALLOC_PD) or a parent domain. EBUSY while children use it (it stays usable); a
// firmware failure leaves it allocated and usable; on success the object is deleted.
Result<void> DeallocPd(Pd* pd);
// DEALLOC_PD only, the handle stays; how Close() releases a PD.
Result<void> ReleasePdOnDevice(Pd& pd, Release why);

// The registry's view of the kind (registry.h KindTraits).
template <>
struct KindTraits<ObjectKind::kPd> {
  using Object = Pd;
  static Result<void> ReleaseOnDevice(Pd& object, Release why);  // pd.cc
};

}  // namespace onchip::driver
