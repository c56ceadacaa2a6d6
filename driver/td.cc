#include "driver/td.h"

#include <cerrno>

namespace onchip::driver {

Result<Td*> AllocTd(const std::shared_ptr<Device>& device, const ibv_td_init_attr& attr) {
  if (!device) return Fail(EINVAL, "alloc_td: no device");
  if (attr.comp_mask != 0) return Fail(EINVAL, "alloc_td: comp_mask must be 0");
  auto lock = device->Locked();
  if (device->closed()) return Fail(EIO, "alloc_td: device closed");
  auto td = std::make_unique<Td>();
  if (device->uars().blueflame()) {
    ONCHIP_TRY(td->dedicated, device->uars().AllocDedicated());
    td->bf = td->dedicated.get();
  } else {
    ONCHIP_TRY(td->bf, device->uars().Shared());
  }
  td->device = device;
  td->ibv.context = device->verbs();
  device->AddLocked(td.get());
  return td.release();
}

Result<void> ReleaseTdOnDevice(Td& td) {
  td.live = false;
  return td.device->uars().FreeDedicated(td.dedicated);
}

Result<void> DeallocTd(Td* td) {
  if (td == nullptr) return Fail(EINVAL, "dealloc_td: null");
  {
    auto lock = td->device->Locked();
    if (td->live) {
      if (td->usecnt.load() != 0) return Fail(EBUSY, "dealloc_td: a parent domain still uses it");
      if (auto r = ReleaseTdOnDevice(*td); !r) {
        td->live = true;
        return r;
      }
      td->device->RemoveLocked(td);
    }
  }
  delete td;
  return {};
}

}  // namespace onchip::driver
