#include "driver/queue_buffer.h"

#include <infiniband/mlx5dv.h>
#include <sys/mman.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace onchip::driver {
namespace {

constexpr size_t kPage = 4096;

bool KnownResourceType(uint64_t t) {
  return t == MLX5DV_RES_TYPE_QP || t == MLX5DV_RES_TYPE_RWQ || t == MLX5DV_RES_TYPE_DBR ||
         t == MLX5DV_RES_TYPE_SRQ || t == MLX5DV_RES_TYPE_CQ;
}

// The driver's own allocator: whole zeroed pages, kept out of a forked child (the device writes
// to them); DefaultFree gives the pages their fork behaviour back before the heap reuses them.
size_t DefaultBytes(size_t size) { return (size + kPage - 1) & ~(kPage - 1); }

void* DefaultAllocate(size_t size, size_t alignment) {
  const size_t bytes = DefaultBytes(size);
  void* p = nullptr;
  if (posix_memalign(&p, std::max(alignment, kPage), bytes) != 0) return nullptr;
  std::memset(p, 0, bytes);
  (void)madvise(p, bytes, MADV_DONTFORK);
  return p;
}

void DefaultFree(void* p, size_t size) {
  (void)madvise(p, DefaultBytes(size), MADV_DOFORK);
  std::free(p);
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
      return buffer;
    }
  }
  buffer.data_ = DefaultAllocate(size, alignment);
  if (buffer.data_ == nullptr) return Fail(ENOMEM, "queue buffer: out of memory");
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
  }
  return *this;
}

void QueueBuffer::Reset() {
  if (pd_ == nullptr) return;
  if (data_ != nullptr) {
    if (custom_) {
      ParentDomain* pad = ParentDomain::From(pd_);
      pad->free(&pd_->ibv, pad->pd_context, data_, resource_type_);
    } else {
      DefaultFree(data_, size_);
    }
  }
  pd_->life.Unpin();
  pd_ = nullptr;
  data_ = nullptr;
  custom_ = false;
}

}  // namespace onchip::driver
