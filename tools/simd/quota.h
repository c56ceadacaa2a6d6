// What one client of the device daemon may hold on its function at once: a number of objects
// of each kind, MEMIC bytes, DMA mappings and TPH steering-tag entries. The kernel bounds the same with the rdma cgroup
// (kernel/cgroup/rdma.c, rdmacg_try_charge: EAGAIN past a limit); the daemon, serving every
// client from one function, bounds each client so that none can take what the others need.
//
// Defaults (Quota::Default): a quarter or less of what the software ConnectX has of each
// scarce kind (UARs and EQs, which every context needs one of, an eighth); MEMIC bytes and
// mappings unbounded beyond RLIMIT_MEMLOCK, as under the kernel. `onchip-simd --quota NAME=N`
// changes one (names: the object kinds of uapi/prm/objects.h, memic_bytes, mappings,
// steering_tags).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string_view>

#include "tools/simd/owned_objects.h"
#include "uapi/prm/objects.h"

namespace onchip::simd {

struct Quota {
  std::array<uint32_t, prm::kObjectKindCount> objects{};  // per kind, in kObjectKinds order
  uint64_t memic_bytes = std::numeric_limits<uint64_t>::max();
  uint64_t mappings = std::numeric_limits<uint64_t>::max();
  // Distinct TPH steering-tag entries (the table has 63 for every client together).
  uint32_t steering_tags = 16;

  static Quota Default();
  // Applies one "NAME=N"; false when the name is unknown or N is not a number.
  bool Set(std::string_view assignment);
};

// Why creating `in` (a command the client sends) would take it past `quota`, or nullptr: a
// creation of a kind it holds `quota.objects` of, or an ALLOC_MEMIC past memic_bytes.
const char* OverQuota(const Quota& quota, const OwnedObjects& owned, std::span<const std::byte> in);

}  // namespace onchip::simd
