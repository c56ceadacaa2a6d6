// tests/unit/alloc/recording_mapper.h: a DmaMapper that records every call and hands out IOVAs
// from a counter (deliberately unlike the virtual addresses), optionally failing.
#pragma once

#include <cerrno>
#include <cstdint>
#include <mutex>
#include <vector>

#include "alloc/dma_mapper.h"

namespace onchip::alloc::testing {

class RecordingMapper : public DmaMapper {
 public:
  struct Call {
    void* addr;
    size_t length;
    uint64_t iova;
  };
  Result<uint64_t> Map(const Region& r) override {
    std::lock_guard lock(mu);
    if (fail_next) {
      fail_next = false;
      return Fail(EFAULT, "recording mapper: asked to fail");
    }
    uint64_t iova = next_iova;
    next_iova += r.length + (uint64_t{1} << 30);
    maps.push_back({r.addr, r.length, iova});
    return iova;
  }
  void Unmap(const Region& r, uint64_t iova) override {
    std::lock_guard lock(mu);
    unmaps.push_back({r.addr, r.length, iova});
  }

  std::mutex mu;
  bool fail_next = false;
  uint64_t next_iova = uint64_t{0x7000} << 32;
  std::vector<Call> maps, unmaps;
};

}  // namespace onchip::alloc::testing
