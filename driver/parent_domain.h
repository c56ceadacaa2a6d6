// Parent domain (ibv_alloc_parent_domain): a PD plus how the driver should allocate the buffers
// it will own for queues on it (custom allocators) and, optionally, a thread domain.
//
// Checks, in rdma-core's order: pd NULL -> EINVAL; comp_mask outside ALLOCATORS | PD_CONTEXT |
// ALLOW_CC_UNPROTECTED_ALLOC -> EINVAL (the last is accepted and does nothing: this device has
// no confidential-computing DMA bounce). alloc/free are kept only with ALLOCATORS, pd_context
// only with PD_CONTEXT. The parent domain pins its PD and its TD (EBUSY on freeing them) and is
// freed through DeallocPd (ibv_dealloc_pd), which answers EBUSY while queue buffers allocated
// through it live (queue_buffer.h).
#pragma once

#include <infiniband/verbs.h>

#include "driver/pd.h"
#include "driver/registry.h"
#include "driver/td.h"

namespace onchip::driver {

// IBV_PARENT_DOMAIN_INIT_ATTR_ALLOW_CC_UNPROTECTED_ALLOC: newer than rdma-core 44's headers.
inline constexpr uint32_t kParentDomainAllowCcUnprotectedAlloc = 1u << 2;

struct ParentDomain {
  Pd pd;  // first: From() converts back; pd.protection_domain is set
  Td* td = nullptr;
  void* (*alloc)(ibv_pd* pd, void* pd_context, size_t size, size_t alignment,
                 uint64_t resource_type) = nullptr;
  void (*free)(ibv_pd* pd, void* pd_context, void* ptr, uint64_t resource_type) = nullptr;
  void* pd_context = nullptr;

  // The parent domain `pd` is, or null for a plain PD.
  static ParentDomain* From(Pd* pd) {
    return pd && pd->is_parent_domain() ? reinterpret_cast<ParentDomain*>(pd) : nullptr;
  }
  bool custom_allocators() const { return alloc != nullptr && free != nullptr; }
};

Result<Pd*> AllocParentDomain(const std::shared_ptr<Device>& device,
                              const ibv_parent_domain_init_attr& attr);
// Called by DeallocPd; EBUSY while queue buffers use it.
Result<void> DeallocParentDomain(ParentDomain* pad);
// Drops its PD and TD pins (no device object of its own); how Close() releases it.
Result<void> ReleaseParentDomain(ParentDomain& pad, Release why);

// The register a QP created on `pd` rings: its thread domain's (lock-free when the TD has a
// dedicated BlueFlame register) when `pd` is a parent domain with a TD, else the device's shared
// register (need_lock set).
Result<Bfreg*> SendBfregFor(Pd* pd);

// The registry's view of the kind (registry.h KindTraits).
template <>
struct KindTraits<ObjectKind::kParentDomain> {
  using Object = ParentDomain;
  static Result<void> ReleaseOnDevice(ParentDomain& object, Release why);  // parent_domain.cc
};

}  // namespace onchip::driver
