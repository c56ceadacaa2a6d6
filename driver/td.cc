#include "driver/td.h"

#include <cerrno>

namespace onchip::driver {

Result<Td*> AllocTd(const std::shared_ptr<Device>& device, const ibv_td_init_attr& attr) {
  if (!device) return Fail(EINVAL, "alloc_td: no device");
  if (attr.comp_mask != 0) return Fail(EINVAL, "alloc_td: comp_mask must be 0");
  ONCHIP_TRY(auto op, device->registry().Begin("alloc_td: device closed"));
  auto td = std::make_unique<Td>();
  if (device->uars().blueflame()) {
    ONCHIP_TRY(td->dedicated, device->uars().AllocDedicated());
    td->bf = td->dedicated.get();
  } else {
    ONCHIP_TRY(td->bf, device->uars().Shared());
  }
  td->device = device;
  td->ibv.context = device->verbs();
  device->registry().Publish<ObjectKind::kTd>(op, td.get(), td->life);
  return td.release();
}

Result<void> ReleaseTdOnDevice(Td& td, Release) { return td.device->uars().FreeDedicated(td.dedicated); }

Result<void> DeallocTd(Td* td) {
  if (td == nullptr) return Fail(EINVAL, "dealloc_td: null");
  return Destroy<ObjectKind::kTd>(td->device->registry(), td, td->life,
                                  "dealloc_td: a parent domain still uses it");
}

Result<void> KindTraits<ObjectKind::kTd>::ReleaseOnDevice(Td& object, Release why) {
  return ReleaseTdOnDevice(object, why);
}

}  // namespace onchip::driver
