#include "driver/dmah.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "driver/steering_tags.h"

namespace onchip::driver {
namespace {

constexpr uint32_t kKnownMask = IBV_DMAH_INIT_ATTR_MASK_CPU_ID | IBV_DMAH_INIT_ATTR_MASK_PH |
                                IBV_DMAH_INIT_ATTR_MASK_TPH_MEM_TYPE;
constexpr uint8_t kMaxPh = 3;  // a processing hint is 2 bits

// verbs_dmah.handle: unique in the process, hence on every device.
std::atomic<uint32_t> next_handle{1};

// The kernel's checks on cpu_id: a CPU this machine can have (cpu_id < nr_cpu_ids, here the
// configured CPUs) -> else EINVAL; one the calling thread may run on -> else EPERM.
Result<void> CheckCpu(uint32_t cpu) {
  const long configured = sysconf(_SC_NPROCESSORS_CONF);
  if (configured <= 0 || cpu >= static_cast<unsigned long>(configured))
    return Fail(EINVAL, "alloc_dmah: cpu_id is not a CPU of this machine");
  // The kernel's mask may be wider than the configured CPUs: grow until it fits.
  for (size_t n = std::max<size_t>(static_cast<size_t>(configured), CPU_SETSIZE);; n *= 2) {
    cpu_set_t* set = CPU_ALLOC(n);
    if (set == nullptr) return Fail(ENOMEM, "alloc_dmah: affinity mask");
    const size_t bytes = CPU_ALLOC_SIZE(n);
    const int rc = sched_getaffinity(0, bytes, set);
    const int err = errno;
    const bool allowed = rc == 0 && CPU_ISSET_S(cpu, bytes, set);
    CPU_FREE(set);
    if (rc == 0) {
      if (!allowed) return Fail(EPERM, "alloc_dmah: cpu_id is outside the caller's affinity");
      return {};
    }
    if (err != EINVAL || n >= (size_t{1} << 20)) return Fail(err, "alloc_dmah: sched_getaffinity");
  }
}

}  // namespace

Result<Dmah*> AllocDmah(const std::shared_ptr<Device>& device, const ibv_dmah_init_attr& attr) {
  if (!device) return Fail(EINVAL, "alloc_dmah: no device");
  // rdma-core's mlx5_alloc_dmah.
  if (attr.comp_mask & ~kKnownMask) return Fail(EOPNOTSUPP, "alloc_dmah: unknown comp_mask bits");
  if (!(attr.comp_mask & IBV_DMAH_INIT_ATTR_MASK_PH))
    return Fail(EINVAL, "alloc_dmah: a processing hint (PH) is required");
  const bool has_cpu = attr.comp_mask & IBV_DMAH_INIT_ATTR_MASK_CPU_ID;
  const bool has_type = attr.comp_mask & IBV_DMAH_INIT_ATTR_MASK_TPH_MEM_TYPE;
  if (has_cpu != has_type)
    return Fail(EINVAL, "alloc_dmah: CPU_ID and TPH_MEM_TYPE come together or not at all");
  // The kernel's uverbs and mlx5_ib.
  if (attr.ph > kMaxPh) return Fail(EINVAL, "alloc_dmah: ph above 3");
  if (has_cpu) ONCHIP_CHECK(CheckCpu(attr.cpu_id));
  if (has_type && attr.tph_mem_type > IBV_TPH_MEM_TYPE_PM)
    return Fail(EOPNOTSUPP, "alloc_dmah: unknown tph_mem_type");

  ONCHIP_TRY(auto op, device->registry().Begin("alloc_dmah: device closed"));
  SteeringTagTable& tags = device->steering_tags();
  if (!tags.mkey_pcie_tph()) return Fail(EOPNOTSUPP, "alloc_dmah: the device has no mkey TPH");
  auto dmah = std::make_unique<Dmah>();
  dmah->ibv.context = device->verbs();
  dmah->handle = next_handle.fetch_add(1, std::memory_order_relaxed);
  dmah->device = device;
  dmah->ph = attr.ph;
  if (has_cpu) {
    dmah->has_cpu = true;
    dmah->cpu_id = attr.cpu_id;
    dmah->mem_type = attr.tph_mem_type;
    ONCHIP_TRY(dmah->st_index, tags.Acquire(attr.cpu_id, attr.tph_mem_type));
  }
  device->registry().Publish<ObjectKind::kDmah>(op, dmah.get(), dmah->life);
  return dmah.release();
}

Result<void> ReleaseDmahOnDevice(Dmah& dmah, Release) {
  if (dmah.st_index != 0) {
    dmah.device->steering_tags().Release(dmah.st_index);
    dmah.st_index = 0;
  }
  return {};
}

Result<void> DeallocDmah(Dmah* dmah) {
  if (dmah == nullptr) return Fail(EINVAL, "dealloc_dmah: null");
  return Destroy<ObjectKind::kDmah>(dmah->device->registry(), dmah, dmah->life,
                                    "dealloc_dmah: memory regions still use it");
}

Result<void> KindTraits<ObjectKind::kDmah>::ReleaseOnDevice(Dmah& object, Release why) {
  return ReleaseDmahOnDevice(object, why);
}

}  // namespace onchip::driver
