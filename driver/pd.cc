#include "driver/pd.h"

#include <cerrno>

#include "driver/cmd/run.h"
#include "driver/parent_domain.h"
#include "uapi/prm/resources.h"

namespace onchip::driver {

Result<Pd*> AllocPd(const std::shared_ptr<Device>& device) {
  if (!device) return Fail(EINVAL, "alloc_pd: no device");
  auto lock = device->Locked();
  if (device->closed()) return Fail(EIO, "alloc_pd: device closed");
  prm::Message<prm::alloc_pd_in> in;
  in.set(prm::alloc_pd_in::opcode, prm::ALLOC_PD);
  ONCHIP_TRY(auto out, cmd::Run<prm::alloc_pd_out>(device->commander(), in));
  auto* pd = new Pd{};
  pd->device = device;
  pd->pdn = out.get(prm::alloc_pd_out::pd);
  pd->ibv.context = device->verbs();
  pd->ibv.handle = pd->pdn;
  device->AddLocked(pd);
  return pd;
}

Result<void> ReleasePdOnDevice(Pd& pd) {
  if (ParentDomain* pad = ParentDomain::From(&pd)) {
    ReleaseParentDomain(*pad);
    return {};
  }
  pd.live = false;
  prm::Message<prm::dealloc_pd_in> in;
  in.set(prm::dealloc_pd_in::opcode, prm::DEALLOC_PD).set(prm::dealloc_pd_in::pd, pd.pdn);
  ONCHIP_TRY(auto out, cmd::Run<prm::dealloc_pd_out>(pd.device->commander(), in));
  (void)out;
  return {};
}

Result<void> DeallocPd(Pd* pd) {
  if (pd == nullptr) return Fail(EINVAL, "dealloc_pd: null");
  if (ParentDomain* pad = ParentDomain::From(pd)) return DeallocParentDomain(pad);
  {
    auto lock = pd->device->Locked();
    if (pd->live) {
      if (pd->usecnt.load() != 0) return Fail(EBUSY, "dealloc_pd: MRs, windows or parent domains still use it");
      if (auto r = ReleasePdOnDevice(*pd); !r) {
        pd->live = true;  // still allocated on the device: keep it usable
        return r;
      }
      pd->device->RemoveLocked(pd);
    }
  }
  delete pd;
  return {};
}

}  // namespace onchip::driver
