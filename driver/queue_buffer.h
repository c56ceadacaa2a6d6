// The memory the driver owns for a queue: QP and SRQ rings, CQ rings, RWQ rings and doorbell
// records. Every such buffer comes from here, so a parent domain's allocator sees all of them.
//
// On a parent domain with allocators (parent_domain.h) the buffer is
// alloc(pd, pd_context, size, alignment, resource_type) with the mlx5dv resource type
// (MLX5DV_RES_TYPE_QP, _RWQ, _DBR, _SRQ, _CQ: RDMA_DRIVER_MLX5 << 32 | n) and goes back through
// free(pd, pd_context, ptr, the same type). IBV_ALLOCATOR_USE_DEFAULT means "use the driver's
// allocator"; NULL is a failure (ENOMEM). As in rdma-core, memory from a custom allocator is
// taken as it comes (zeroing and fork safety are the allocator's job); the pages under it are
// mapped for the device through the bus (Bus::MapHost) while the buffer lives.
//
// The driver's own allocator is the device's memory provider (alloc/): buffers carved from 2 MiB
// hugepages (or memfd pages when none are reserved), zeroed, MADV_DONTFORK, many small buffers
// to a page, each region mapped for the device once. Alignment up to 2 MiB. libmlx5's
// MLX_QP_ALLOC_TYPE, MLX_CQ_ALLOC_TYPE, MLX_SRQ_ALLOC_TYPE and MLX_RWQ_ALLOC_TYPE are read for
// that kind of queue: HUGE demands 2 MiB hugepages (ENOMEM when the provider has none to give);
// every other value is what the provider does anyway (hugepages first, then ordinary pages).
//
// Either way iova() is where the device reaches data() (what qpc/cqc/dbr_addr fields carry).
//
// A buffer pins the parent domain it came through until it is freed, so freeing the parent
// domain answers EBUSY while any queue's buffer lives (rdma-core pins only for QPs and CQs and
// would call a freed domain's `free` for an SRQ buffer; pinning all is the safe superset).
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>

#include "driver/bus/bus.h"
#include "driver/bus/dma_memory.h"
#include "driver/parent_domain.h"
#include "driver/pd.h"

namespace onchip::driver {

class QueueBuffer {
 public:
  // EINVAL: size 0, alignment not a power of two (or above 2 MiB for the driver's allocator),
  // or an unknown resource type; ENOMEM: the allocator said no; EIO: the device is closed; the
  // bus's error when the memory cannot be mapped for the device.
  static Result<QueueBuffer> Allocate(Pd* pd, size_t size, size_t alignment,
                                      uint64_t resource_type);
  // A queue no PD names (a CQ made without a parent domain): the device's memory provider, the
  // same checks; pins nothing.
  static Result<QueueBuffer> Allocate(Device& device, size_t size, size_t alignment,
                                      uint64_t resource_type);

  QueueBuffer() = default;
  QueueBuffer(QueueBuffer&& o) noexcept { *this = std::move(o); }
  QueueBuffer& operator=(QueueBuffer&& o) noexcept;
  QueueBuffer(const QueueBuffer&) = delete;
  QueueBuffer& operator=(const QueueBuffer&) = delete;
  ~QueueBuffer() { Reset(); }

  void* data() const { return data_; }
  size_t size() const { return size_; }
  // The device's address of data().
  uint64_t iova() const { return iova_; }
  uint64_t resource_type() const { return resource_type_; }
  // True when the parent domain's allocator provided it.
  bool custom() const { return custom_; }
  explicit operator bool() const { return data_ != nullptr; }
  void Reset();

 private:
  Pd* pd_ = nullptr;  // the PD or parent domain it was allocated for (pinned); may be null
  void* data_ = nullptr;
  size_t size_ = 0;
  uint64_t resource_type_ = 0;
  bool custom_ = false;
  uint64_t iova_ = 0;
  bus::DmaMapping mapping_;  // custom: the pages under data_, mapped for the device
  bus::DmaMemory memory_;    // default: the provider's buffer
};

}  // namespace onchip::driver
