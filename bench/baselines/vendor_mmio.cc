#include "bench/baselines/vendor_mmio.h"

namespace onchip::bench {

void VendorCopyToDm(void* dm, const void* host, std::size_t length) {
  auto* dm_ptr = static_cast<uint32_t*>(dm);
  const auto* host_ptr = static_cast<const uint32_t*>(host);
  for (const uint32_t* end = host_ptr + length / 4; host_ptr != end; ++host_ptr, ++dm_ptr)
    std::atomic_ref<uint32_t>(*dm_ptr).store(*host_ptr, std::memory_order_relaxed);
}

void VendorCopyFromDm(void* host, const void* dm, std::size_t length) {
  auto* host_ptr = static_cast<uint32_t*>(host);
  auto* dm_ptr = const_cast<uint32_t*>(static_cast<const uint32_t*>(dm));
  for (uint32_t* end = host_ptr + length / 4; host_ptr != end; ++host_ptr, ++dm_ptr)
    *host_ptr = std::atomic_ref<uint32_t>(*dm_ptr).load(std::memory_order_relaxed);
}

}  // namespace onchip::bench
