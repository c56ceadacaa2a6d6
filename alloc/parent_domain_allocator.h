// alloc/parent_domain_allocator.h: the libibverbs parent-domain allocator hook, backed by a
// MemoryProvider.
//
// ibv_alloc_parent_domain() accepts alloc/free callbacks; the mlx5 provider then asks them for
// every QP, RWQ, SRQ and CQ buffer and for every 8-byte doorbell record, passing the resource
// type (RDMA_DRIVER_MLX5 << 32 | n). This adapter routes those calls to the provider, so every
// driver buffer lands in hugepage-backed, zeroed, fork-safe memory, and counts them per type.
//
//   ParentDomainAllocator hook(*provider);
//   ibv_parent_domain_init_attr attr = {};
//   attr.pd = pd;
//   hook.Install(attr);             // alloc, free, pd_context = &hook, comp_mask bits
//   ibv_pd* pad = ibv_alloc_parent_domain(ctx, &attr);
//
// The hook must outlive the parent domain and every object created on it.
// alloc contract: a zeroed buffer, NULL with errno set (EINVAL, ENOMEM) on failure, or
// IBV_ALLOCATOR_USE_DEFAULT for an alignment above 2 MiB (counted as `defaulted`).
// free contract: cannot report errors, so a double free, a foreign or interior pointer, is
// rejected without touching memory, counted in `rejected_frees` and logged (ONCHIP_LOG=warn).
#pragma once

#include <infiniband/verbs.h>

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>

#include "alloc/provider.h"

namespace onchip::alloc {

// mlx5dv resource types (mlx5dv.h MLX5DV_RES_TYPE_*), low 32 bits of resource_type.
enum class ResourceType : uint8_t { kOther = 0, kQp = 1, kRwq = 2, kDbr = 3, kSrq = 4, kCq = 5 };
inline constexpr int kResourceTypeCount = 6;
inline constexpr uint64_t kRdmaDriverMlx5 = 1;  // enum rdma_driver_id in rdma/ib_user_ioctl_verbs.h

constexpr uint64_t Mlx5ResourceType(ResourceType t) {
  return kRdmaDriverMlx5 << 32 | static_cast<uint64_t>(t);
}
// kOther for anything that is not one of the five mlx5 types.
ResourceType ClassifyResourceType(uint64_t resource_type);

struct ResourceStats {
  uint64_t allocations = 0;
  uint64_t failed_allocations = 0;
  uint64_t defaulted = 0;         // IBV_ALLOCATOR_USE_DEFAULT returned
  uint64_t frees = 0;
  uint64_t live = 0;
  uint64_t bytes_in_use = 0;
  uint64_t rejected_frees = 0;    // double free, foreign or interior pointer
  uint64_t type_mismatches = 0;   // freed with a different resource_type than allocated with
};

class ParentDomainAllocator {
 public:
  explicit ParentDomainAllocator(MemoryProvider& provider) : provider_(provider) {}
  ParentDomainAllocator(const ParentDomainAllocator&) = delete;
  ParentDomainAllocator& operator=(const ParentDomainAllocator&) = delete;

  // Sets attr.alloc, attr.free, attr.pd_context and the ALLOCATORS | PD_CONTEXT comp_mask bits.
  void Install(ibv_parent_domain_init_attr& attr);

  // The callbacks, with exactly libibverbs' signatures; pd_context is the ParentDomainAllocator.
  static void* Alloc(ibv_pd* pd, void* pd_context, size_t size, size_t alignment, uint64_t resource_type);
  static void Free(ibv_pd* pd, void* pd_context, void* ptr, uint64_t resource_type);

  ResourceStats stats(ResourceType t) const;
  ResourceStats total() const;

 private:
  struct Counters {
    std::atomic<uint64_t> allocations{0}, failed_allocations{0}, defaulted{0}, frees{0}, live{0},
        bytes_in_use{0}, rejected_frees{0}, type_mismatches{0};
  };
  void* DoAlloc(size_t size, size_t alignment, uint64_t resource_type);
  void DoFree(void* ptr, uint64_t resource_type);

  MemoryProvider& provider_;
  std::array<Counters, kResourceTypeCount> counters_;
};

}  // namespace onchip::alloc

// The same callbacks under C linkage, for C callers.
extern "C" {
void* onchip_parent_domain_alloc(struct ibv_pd* pd, void* pd_context, size_t size, size_t alignment,
                                 uint64_t resource_type);
void onchip_parent_domain_free(struct ibv_pd* pd, void* pd_context, void* ptr, uint64_t resource_type);
}
