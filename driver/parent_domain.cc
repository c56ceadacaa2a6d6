#include "driver/parent_domain.h"

#include <cerrno>

namespace onchip::driver {

namespace {

constexpr uint32_t kKnownMask = IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS |
                                IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT |
                                kParentDomainAllowCcUnprotectedAlloc;

}  // namespace

Result<Pd*> AllocParentDomain(const std::shared_ptr<Device>& device,
                              const ibv_parent_domain_init_attr& attr) {
  if (attr.pd == nullptr) return Fail(EINVAL, "alloc_parent_domain: pd is NULL");
  if (attr.comp_mask & ~kKnownMask) return Fail(EINVAL, "alloc_parent_domain: unknown comp_mask bit");
  Pd* pd = Pd::Parent(attr.pd);
  if (pd->is_parent_domain()) return Fail(EINVAL, "alloc_parent_domain: pd is a parent domain");
  Td* td = attr.td ? Td::From(attr.td) : nullptr;
  if (pd->device != device || (td && td->device != device))
    return Fail(EINVAL, "alloc_parent_domain: PD or TD of another device");

  ONCHIP_TRY(auto op, device->registry().Begin("alloc_parent_domain: device closed"));
  ParentPins pins;
  if (!pins.Take(pd->life) || (td && !pins.Take(td->life)))
    return Fail(EBUSY, "alloc_parent_domain: its PD or TD is being freed");
  auto* pad = new ParentDomain{};
  pad->pd.device = device;
  pad->pd.pdn = pd->pdn;
  pad->pd.protection_domain = pd;
  pad->pd.free_face = [](Pd* face) { return DeallocParentDomain(ParentDomain::From(face)); };
  pad->pd.ibv.context = pd->ibv.context;
  pad->pd.ibv.handle = pd->ibv.handle;
  pad->td = td;
  if (attr.comp_mask & IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS) {
    pad->alloc = attr.alloc;
    pad->free = attr.free;
  }
  if (attr.comp_mask & IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT) pad->pd_context = attr.pd_context;
  pins.Keep();
  device->registry().Publish<ObjectKind::kParentDomain>(op, pad, pad->pd.life);
  return &pad->pd;
}

Result<void> ReleaseParentDomain(ParentDomain& pad, Release) {
  pad.pd.protection_domain->life.Unpin();
  if (pad.td) pad.td->life.Unpin();
  return {};
}

Result<void> DeallocParentDomain(ParentDomain* pad) {
  return Destroy<ObjectKind::kParentDomain>(pad->pd.device->registry(), pad, pad->pd.life,
                                            "dealloc_pd: queues still use this parent domain");
}

Result<Bfreg*> SendBfregFor(Pd* pd) {
  if (pd == nullptr) return Fail(EINVAL, "send bfreg: null PD");
  if (ParentDomain* pad = ParentDomain::From(pd); pad && pad->td) return pad->td->bf;
  return pd->device->uars().Shared();
}

Result<void> KindTraits<ObjectKind::kParentDomain>::ReleaseOnDevice(ParentDomain& object, Release why) {
  return ReleaseParentDomain(object, why);
}

}  // namespace onchip::driver
