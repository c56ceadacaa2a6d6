// alloc/hugepage_pool.h: what the kernel has reserved in 2 MiB hugepages.
//
// Read from /sys/kernel/mm/hugepages/hugepages-2048kB. Used to explain fallbacks ("no hugepages
// reserved (nr_hugepages=0)") and by tier2 tests to decide whether to skip.
#pragma once

#include <cstdint>
#include <optional>

namespace onchip::alloc {

struct HugepagePool {
  uint64_t reserved = 0;  // nr_hugepages
  uint64_t free = 0;      // free_hugepages (reserved but not in use)
};

// nullopt when the kernel has no 2 MiB hugepage support (the sysfs directory is missing).
std::optional<HugepagePool> ReadHugepagePool();

}  // namespace onchip::alloc
