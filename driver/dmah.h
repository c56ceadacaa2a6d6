// DMA handles (ibv_alloc_dmah): where a memory region's DMA should be steered, as PCIe TPH
// processing hints. Shaped as rdma-core's struct verbs_dmah (ibv_dmah first, then the handle).
//
// Checks, in this order (rdma-core mlx5_alloc_dmah, then the kernel's uverbs and mlx5_ib):
// a comp_mask bit outside CPU_ID | PH | TPH_MEM_TYPE -> EOPNOTSUPP; PH missing -> EINVAL;
// exactly one of CPU_ID and TPH_MEM_TYPE -> EINVAL; ph > 3 -> EINVAL; cpu_id not a CPU of this
// machine -> EINVAL; a CPU outside the caller's affinity -> EPERM; a memory type other than VM
// or PM -> EOPNOTSUPP; no TPH on the device (no mkey_pcie_tph, or a CPU given and no
// steering-tag table) -> EOPNOTSUPP. With a CPU the handle holds a steering-tag entry
// (steering_tags.h) until it is freed.
//
// A memory region registered with a handle (mr.h) sets mkc.pcie_tph_en, pcie_tph_ph = ph and
// pcie_tph_steering_tag_index = st_index, and pins the handle: DeallocDmah answers EBUSY.
#pragma once

#include <atomic>
#include <memory>

#include "driver/device.h"
#include "driver/registry.h"
#include "uapi/verbs/dmah.h"

namespace onchip::driver {

struct Dmah {
  ibv_dmah ibv;  // first: From() converts back
  uint32_t handle = 0;  // verbs_dmah.handle
  std::shared_ptr<Device> device;
  uint8_t ph = 0;
  bool has_cpu = false;
  uint32_t cpu_id = 0;
  uint8_t mem_type = 0;
  uint8_t st_index = 0;             // 0: no steering tag (no CPU given)
  Life life;                        // pinned by the MRs registered with it

  static Dmah* From(ibv_dmah* d) { return reinterpret_cast<Dmah*>(d); }
};

Result<Dmah*> AllocDmah(const std::shared_ptr<Device>& device, const ibv_dmah_init_attr& attr);
// EBUSY while an MR uses it (it stays usable); otherwise the steering-tag entry is released and
// the Dmah deleted.
Result<void> DeallocDmah(Dmah* dmah);
// Releases the steering-tag entry only; for Device::Close with the registry lock held.
Result<void> ReleaseDmahOnDevice(Dmah& dmah, Release why);

// The registry's view of the kind (registry.h KindTraits).
template <>
struct KindTraits<ObjectKind::kDmah> {
  using Object = Dmah;
  static Result<void> ReleaseOnDevice(Dmah& object, Release why);  // dmah.cc
};

}  // namespace onchip::driver
