// The memory the driver owns for a queue: QP and SRQ rings, CQ rings, RWQ rings and doorbell
// records. Every such buffer comes from here, so a parent domain's allocator sees all of them.
//
// On a parent domain with allocators (parent_domain.h) the buffer is
// alloc(pd, pd_context, size, alignment, resource_type) with the mlx5dv resource type
// (MLX5DV_RES_TYPE_QP, _RWQ, _DBR, _SRQ, _CQ: RDMA_DRIVER_MLX5 << 32 | n) and goes back through
// free(pd, pd_context, ptr, the same type). IBV_ALLOCATOR_USE_DEFAULT means "use the driver's
// allocator"; NULL is a failure (ENOMEM). As in rdma-core, memory from a custom allocator is
// taken as it comes (zeroing and fork safety are the allocator's job); the driver's own
// allocator zeroes and marks the pages MADV_DONTFORK.
//
// A buffer pins the parent domain it came through until it is freed, so freeing the parent
// domain answers EBUSY while any queue's buffer lives (rdma-core pins only for QPs and CQs and
// would call a freed domain's `free` for an SRQ buffer; pinning all is the safe superset).
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>

#include "driver/parent_domain.h"
#include "driver/pd.h"

namespace onchip::driver {

class QueueBuffer {
 public:
  // EINVAL: size 0, alignment not a power of two, or an unknown resource type; ENOMEM: the
  // allocator said no; EIO: the device is closed.
  static Result<QueueBuffer> Allocate(Pd* pd, size_t size, size_t alignment,
                                      uint64_t resource_type);

  QueueBuffer() = default;
  QueueBuffer(QueueBuffer&& o) noexcept { *this = std::move(o); }
  QueueBuffer& operator=(QueueBuffer&& o) noexcept;
  QueueBuffer(const QueueBuffer&) = delete;
  QueueBuffer& operator=(const QueueBuffer&) = delete;
  ~QueueBuffer() { Reset(); }

  void* data() const { return data_; }
  size_t size() const { return size_; }
  uint64_t resource_type() const { return resource_type_; }
  // True when the parent domain's allocator provided it.
  bool custom() const { return custom_; }
  explicit operator bool() const { return data_ != nullptr; }
  void Reset();

 private:
  Pd* pd_ = nullptr;  // the PD or parent domain it was allocated for
  void* data_ = nullptr;
  size_t size_ = 0;
  uint64_t resource_type_ = 0;
  bool custom_ = false;
};

}  // namespace onchip::driver
