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
  Pd* pd = Pd::From(attr.pd);
  if (pd->is_parent_domain()) return Fail(EINVAL, "alloc_parent_domain: pd is a parent domain");
  Td* td = attr.td ? Td::From(attr.td) : nullptr;
  if (pd->device != device || (td && td->device != device))
    return Fail(EINVAL, "alloc_parent_domain: PD or TD of another device");

  auto lock = device->Locked();
  if (device->closed() || !pd->live || (td && !td->live))
    return Fail(EIO, "alloc_parent_domain: device closed");
  auto* pad = new ParentDomain{};
  pad->pd.device = device;
  pad->pd.pdn = pd->pdn;
  pad->pd.protection_domain = pd;
  pad->pd.ibv.context = pd->ibv.context;
  pad->pd.ibv.handle = pd->ibv.handle;
  pad->td = td;
  if (attr.comp_mask & IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS) {
    pad->alloc = attr.alloc;
    pad->free = attr.free;
  }
  if (attr.comp_mask & IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT) pad->pd_context = attr.pd_context;
  pd->usecnt.fetch_add(1);
  if (td) td->usecnt.fetch_add(1);
  device->AddLocked(&pad->pd);
  return &pad->pd;
}

void ReleaseParentDomain(ParentDomain& pad) {
  if (!pad.pd.live) return;
  pad.pd.live = false;
  pad.pd.protection_domain->usecnt.fetch_sub(1);
  if (pad.td) pad.td->usecnt.fetch_sub(1);
}

Result<void> DeallocParentDomain(ParentDomain* pad) {
  {
    auto lock = pad->pd.device->Locked();
    if (pad->pd.live) {
      if (pad->pd.usecnt.load() != 0)
        return Fail(EBUSY, "dealloc_pd: queues still use this parent domain");
      ReleaseParentDomain(*pad);
      pad->pd.device->RemoveLocked(&pad->pd);
    }
  }
  delete pad;
  return {};
}

Result<Bfreg*> SendBfregFor(Pd* pd) {
  if (pd == nullptr) return Fail(EINVAL, "send bfreg: null PD");
  if (ParentDomain* pad = ParentDomain::From(pd); pad && pad->td) return pad->td->bf;
  return pd->device->uars().Shared();
}

}  // namespace onchip::driver
