#include "driver/bus/dma_memory.h"

#include <cerrno>
#include <cstdio>

#include "log/log.h"

namespace onchip::driver::bus {

Result<DmaMemory> DmaMemory::Allocate(alloc::MemoryProvider& provider, size_t length,
                                      size_t alignment) {
  ONCHIP_TRY(alloc::Allocation a, provider.Allocate(length, alignment));
  DmaMemory memory(&provider, a);
  if (!a.dma_mapped) return Fail(EFAULT, "DMA memory: the provider maps nothing for the device");
  return memory;
}

DmaMemory& DmaMemory::operator=(DmaMemory&& o) noexcept {
  if (this != &o) {
    Reset();
    provider_ = std::exchange(o.provider_, nullptr);
    a_ = std::exchange(o.a_, alloc::Allocation{});
  }
  return *this;
}

void DmaMemory::Reset() {
  if (provider_ == nullptr) return;
  // The handle owns a live buffer that starts at a_.addr, so the provider cannot refuse it; if
  // it ever did, the memory stays allocated (never reused while the device might write it).
  if (auto freed = std::exchange(provider_, nullptr)->Free(a_.addr); !freed)
    log::Say(log::Level::kWarn, "onchip DMA memory: %s", freed.error().describe().c_str());
  a_ = {};
}

}  // namespace onchip::driver::bus
