#include "driver/queue_buffer.h"

#include <infiniband/mlx5dv.h>

#include <strings.h>

#include <bit>
#include <cerrno>
#include <cstdlib>

#include "alloc/region.h"

namespace onchip::driver {
namespace {

bool KnownResourceType(uint64_t t) {
  return t == MLX5DV_RES_TYPE_QP || t == MLX5DV_RES_TYPE_RWQ || t == MLX5DV_RES_TYPE_DBR ||
         t == MLX5DV_RES_TYPE_SRQ || t == MLX5DV_RES_TYPE_CQ;
}

// libmlx5's per-queue allocation type variable for a buffer of this type (none for doorbell
// records, which libmlx5 carves from pages of its own).
const char* AllocTypeVariable(uint64_t t) {
  if (t == MLX5DV_RES_TYPE_QP) return "MLX_QP_ALLOC_TYPE";
  if (t == MLX5DV_RES_TYPE_RWQ) return "MLX_RWQ_ALLOC_TYPE";
  if (t == MLX5DV_RES_TYPE_SRQ) return "MLX_SRQ_ALLOC_TYPE";
  if (t == MLX5DV_RES_TYPE_CQ) return "MLX_CQ_ALLOC_TYPE";
  return nullptr;
}

// The driver's allocator's buffer for `resource_type`, refused when the application demanded
// hugepages for that kind of queue (MLX_<QUEUE>_ALLOC_TYPE=HUGE) and the buffer is not on one.
Result<bus::DmaMemory> DriverMemory(Device& device, size_t size, size_t alignment,
                                    uint64_t resource_type) {
  ONCHIP_TRY(bus::DmaMemory memory, bus::DmaMemory::Allocate(device.memory(), size, alignment));
  const char* variable = AllocTypeVariable(resource_type);
  const char* demanded = variable ? std::getenv(variable) : nullptr;
  if (demanded && strcasecmp(demanded, "HUGE") == 0 &&
      memory.allocation().page_size < alloc::kHugePageBytes)
    return Fail(ENOMEM, "queue buffer: HUGE asked for and the provider has no 2 MiB hugepage to give");
  return memory;
}

}  // namespace

Result<QueueBuffer> QueueBuffer::Allocate(Pd* pd, size_t size, size_t alignment,
                                          uint64_t resource_type) {
  if (pd == nullptr) return Fail(EINVAL, "queue buffer: null PD");
  if (size == 0) return Fail(EINVAL, "queue buffer: size 0");
  if (alignment == 0 || !std::has_single_bit(alignment))
    return Fail(EINVAL, "queue buffer: alignment not a power of two");
  if (!KnownResourceType(resource_type)) return Fail(EINVAL, "queue buffer: unknown resource type");

  // Pin first, so a concurrent DeallocPd answers EBUSY; call the allocator after.
  if (pd->life.released()) return Fail(EIO, "queue buffer: device closed");
  if (!pd->life.Pin()) return Fail(EBUSY, "queue buffer: the PD is being freed");
  QueueBuffer buffer;
  buffer.pd_ = pd;
  buffer.size_ = size;
  buffer.resource_type_ = resource_type;
  if (ParentDomain* pad = ParentDomain::From(pd); pad && pad->custom_allocators()) {
    void* p = pad->alloc(&pd->ibv, pad->pd_context, size, alignment, resource_type);
    if (p == nullptr) return Fail(ENOMEM, "queue buffer: the parent domain's allocator failed");
    if (p != IBV_ALLOCATOR_USE_DEFAULT) {
      buffer.data_ = p;
      buffer.custom_ = true;
      // The application's memory: the whole pages under it, mapped for the device.
      const auto start = reinterpret_cast<uintptr_t>(p);
      const uintptr_t first = start & ~(bus::kPageSize - 1);
      auto mapped = pd->device->bus().MapHost(reinterpret_cast<std::byte*>(first),
                                              bus::RoundUpPage(start + size) - first);
      if (!mapped) return std::unexpected(mapped.error());  // Reset gives p back
      buffer.iova_ = mapped->iova() + (start - first);
      buffer.mapping_ = std::move(*mapped);
      return buffer;
    }
  }
  auto memory = DriverMemory(*pd->device, size, alignment, resource_type);
  if (!memory) return std::unexpected(memory.error());
  buffer.memory_ = std::move(*memory);
  buffer.data_ = buffer.memory_.host();
  buffer.iova_ = buffer.memory_.iova();
  return buffer;
}

Result<QueueBuffer> QueueBuffer::Allocate(Device& device, size_t size, size_t alignment,
                                          uint64_t resource_type) {
  if (size == 0) return Fail(EINVAL, "queue buffer: size 0");
  if (alignment == 0 || !std::has_single_bit(alignment))
    return Fail(EINVAL, "queue buffer: alignment not a power of two");
  if (!KnownResourceType(resource_type)) return Fail(EINVAL, "queue buffer: unknown resource type");
  if (device.closed()) return Fail(EIO, "queue buffer: device closed");
  ONCHIP_TRY(bus::DmaMemory memory, DriverMemory(device, size, alignment, resource_type));
  QueueBuffer buffer;
  buffer.size_ = size;
  buffer.resource_type_ = resource_type;
  buffer.memory_ = std::move(memory);
  buffer.data_ = buffer.memory_.host();
  buffer.iova_ = buffer.memory_.iova();
  return buffer;
}

QueueBuffer& QueueBuffer::operator=(QueueBuffer&& o) noexcept {
  if (this != &o) {
    Reset();
    pd_ = std::exchange(o.pd_, nullptr);
    data_ = std::exchange(o.data_, nullptr);
    size_ = std::exchange(o.size_, 0);
    resource_type_ = std::exchange(o.resource_type_, 0);
    custom_ = std::exchange(o.custom_, false);
    iova_ = std::exchange(o.iova_, 0);
    mapping_ = std::move(o.mapping_);
    memory_ = std::move(o.memory_);
  }
  return *this;
}

void QueueBuffer::Reset() {
  // A buffer that never got memory may still hold its PD's pin.
  if (custom_) {
    // The device loses its mapping before the application gets the memory back.
    (void)mapping_.Reset();
    ParentDomain* pad = ParentDomain::From(pd_);
    pad->free(&pd_->ibv, pad->pd_context, data_, resource_type_);
  } else {
    memory_.Reset();
  }
  if (pd_) pd_->life.Unpin();
  pd_ = nullptr;
  data_ = nullptr;
  custom_ = false;
  iova_ = 0;
}

}  // namespace onchip::driver
