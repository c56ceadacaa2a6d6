#include "alloc/parent_domain_allocator.h"

#include <rdma/ib_user_ioctl_verbs.h>

#include <cerrno>
#include <cstdio>
#include <type_traits>

#include "log/log.h"

namespace onchip::alloc {

static_assert(kRdmaDriverMlx5 == RDMA_DRIVER_MLX5);
static_assert(std::is_same_v<decltype(&ParentDomainAllocator::Alloc), decltype(ibv_parent_domain_init_attr::alloc)>);
static_assert(std::is_same_v<decltype(&ParentDomainAllocator::Free), decltype(ibv_parent_domain_init_attr::free)>);
static_assert(std::is_same_v<decltype(&onchip_parent_domain_alloc), decltype(ibv_parent_domain_init_attr::alloc)>);
static_assert(std::is_same_v<decltype(&onchip_parent_domain_free), decltype(ibv_parent_domain_init_attr::free)>);

ResourceType ClassifyResourceType(uint64_t resource_type) {
  if (resource_type >> 32 != kRdmaDriverMlx5) return ResourceType::kOther;
  uint64_t n = resource_type & 0xffffffffu;
  return n >= 1 && n < kResourceTypeCount ? static_cast<ResourceType>(n) : ResourceType::kOther;
}

void ParentDomainAllocator::Install(ibv_parent_domain_init_attr& attr) {
  attr.alloc = &ParentDomainAllocator::Alloc;
  attr.free = &ParentDomainAllocator::Free;
  attr.pd_context = this;
  attr.comp_mask |= IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS | IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT;
}

void* ParentDomainAllocator::Alloc(ibv_pd*, void* pd_context, size_t size, size_t alignment,
                                   uint64_t resource_type) {
  if (pd_context == nullptr) {
    errno = EINVAL;
    return nullptr;
  }
  return static_cast<ParentDomainAllocator*>(pd_context)->DoAlloc(size, alignment, resource_type);
}

void ParentDomainAllocator::Free(ibv_pd*, void* pd_context, void* ptr, uint64_t resource_type) {
  if (pd_context == nullptr) {
    log::Say(log::Level::kWarn, "onchip alloc: parent-domain free of %p without pd_context: ignored", ptr);
    return;
  }
  static_cast<ParentDomainAllocator*>(pd_context)->DoFree(ptr, resource_type);
}

void* ParentDomainAllocator::DoAlloc(size_t size, size_t alignment, uint64_t resource_type) {
  const ResourceType type = ClassifyResourceType(resource_type);
  Counters& c = counters_[static_cast<int>(type)];
  if (alignment > kMaxAlignment && (alignment & (alignment - 1)) == 0) {
    // Regions are 2 MiB aligned; the provider's own allocator serves larger alignments.
    c.defaulted.fetch_add(1, std::memory_order_relaxed);
    return IBV_ALLOCATOR_USE_DEFAULT;
  }
  auto a = provider_.Allocate(size, alignment, static_cast<uint8_t>(type));
  if (!a) {
    c.failed_allocations.fetch_add(1, std::memory_order_relaxed);
    errno = a.error().errno_value();
    return nullptr;
  }
  c.allocations.fetch_add(1, std::memory_order_relaxed);
  c.live.fetch_add(1, std::memory_order_relaxed);
  c.bytes_in_use.fetch_add(a->length, std::memory_order_relaxed);
  return a->addr;
}

void ParentDomainAllocator::DoFree(void* ptr, uint64_t resource_type) {
  if (ptr == nullptr) return;  // like free(NULL)
  const ResourceType type = ClassifyResourceType(resource_type);
  auto a = provider_.Free(ptr);
  if (!a) {
    counters_[static_cast<int>(type)].rejected_frees.fetch_add(1, std::memory_order_relaxed);
    log::Say(log::Level::kWarn, "onchip alloc: parent-domain free(%p, resource_type 0x%llx) rejected: %s",
             ptr, static_cast<unsigned long long>(resource_type), a.error().describe().c_str());
    return;
  }
  // Account against the type the buffer was allocated as; note a caller that disagrees.
  Counters& owner = counters_[a->tag < kResourceTypeCount ? a->tag : 0];
  if (a->tag != static_cast<uint8_t>(type)) {
    counters_[static_cast<int>(type)].type_mismatches.fetch_add(1, std::memory_order_relaxed);
  }
  owner.frees.fetch_add(1, std::memory_order_relaxed);
  owner.live.fetch_sub(1, std::memory_order_relaxed);
  owner.bytes_in_use.fetch_sub(a->length, std::memory_order_relaxed);
}

ResourceStats ParentDomainAllocator::stats(ResourceType t) const {
  const Counters& c = counters_[static_cast<int>(t)];
  ResourceStats s;
  s.allocations = c.allocations.load(std::memory_order_relaxed);
  s.failed_allocations = c.failed_allocations.load(std::memory_order_relaxed);
  s.defaulted = c.defaulted.load(std::memory_order_relaxed);
  s.frees = c.frees.load(std::memory_order_relaxed);
  s.live = c.live.load(std::memory_order_relaxed);
  s.bytes_in_use = c.bytes_in_use.load(std::memory_order_relaxed);
  s.rejected_frees = c.rejected_frees.load(std::memory_order_relaxed);
  s.type_mismatches = c.type_mismatches.load(std::memory_order_relaxed);
  return s;
}

ResourceStats ParentDomainAllocator::total() const {
  ResourceStats t;
  for (int i = 0; i < kResourceTypeCount; ++i) {
    ResourceStats s = stats(static_cast<ResourceType>(i));
    t.allocations += s.allocations;
    t.failed_allocations += s.failed_allocations;
    t.defaulted += s.defaulted;
    t.frees += s.frees;
    t.live += s.live;
    t.bytes_in_use += s.bytes_in_use;
    t.rejected_frees += s.rejected_frees;
    t.type_mismatches += s.type_mismatches;
  }
  return t;
}

}  // namespace onchip::alloc

extern "C" void* onchip_parent_domain_alloc(struct ibv_pd* pd, void* pd_context, size_t size,
                                            size_t alignment, uint64_t resource_type) {
  return onchip::alloc::ParentDomainAllocator::Alloc(pd, pd_context, size, alignment, resource_type);
}

extern "C" void onchip_parent_domain_free(struct ibv_pd* pd, void* pd_context, void* ptr,
                                          uint64_t resource_type) {
  onchip::alloc::ParentDomainAllocator::Free(pd, pd_context, ptr, resource_type);
}
