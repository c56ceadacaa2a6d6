#include "driver/pd.h"

#include <cerrno>

#include "driver/cmd/run.h"
#include "uapi/prm/resources.h"

namespace onchip::driver {

Result<Pd*> AllocPd(const std::shared_ptr<Device>& device) {
  if (!device) return Fail(EINVAL, "alloc_pd: no device");
  ONCHIP_TRY(auto op, device->registry().Begin("alloc_pd: device closed"));
  prm::Message<prm::alloc_pd_in> in;
  in.set(prm::alloc_pd_in::opcode, prm::ALLOC_PD);
  ONCHIP_TRY(auto out, cmd::Run<prm::alloc_pd_out>(device->commander(), in));
  auto* pd = new Pd{};
  pd->device = device;
  pd->pdn = out.get(prm::alloc_pd_out::pd);
  pd->ibv.context = device->verbs();
  pd->ibv.handle = pd->pdn;
  device->registry().Publish<ObjectKind::kPd>(op, pd, pd->life);
  return pd;
}

Result<void> ReleasePdOnDevice(Pd& pd, Release) {
  prm::Message<prm::dealloc_pd_in> in;
  in.set(prm::dealloc_pd_in::opcode, prm::DEALLOC_PD).set(prm::dealloc_pd_in::pd, pd.pdn);
  ONCHIP_TRY(auto out, cmd::Run<prm::dealloc_pd_out>(pd.device->commander(), in));
  (void)out;
  return {};
}

Result<void> DeallocPd(Pd* pd) {
  if (pd == nullptr) return Fail(EINVAL, "dealloc_pd: null");
  if (pd->free_face != nullptr) return pd->free_face(pd);  // a parent domain, or an imported face
  return Destroy<ObjectKind::kPd>(pd->device->registry(), pd, pd->life,
                                  "dealloc_pd: MRs, windows or parent domains still use it");
}

Result<void> KindTraits<ObjectKind::kPd>::ReleaseOnDevice(Pd& object, Release why) {
  return ReleasePdOnDevice(object, why);
}

}  // namespace onchip::driver
