// Host pages lent to the firmware (QUERY_PAGES / MANAGE_PAGES).
//
// The firmware asks for 4 KiB pages at boot and init (and may later); the driver gives them as
// DMA memory from the device's memory provider (alloc/: carved from hugepages, mapped through
// the bus) and must get every one back (MANAGE_PAGES TAKE) before the function is disabled.
// Each GIVE is one DMA buffer; a buffer is freed once the firmware returned all of its pages.
// Page IOVAs the firmware hands back that this supply never gave are refused (EPROTO): memory
// is never freed on the firmware's word alone.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "alloc/provider.h"
#include "driver/bus/dma_memory.h"
#include "driver/cmd/commander.h"
#include "uapi/prm/opcodes.h"

namespace onchip::driver {

class PageSupply {
 public:
  // `memory` must outlive the supply.
  explicit PageSupply(alloc::MemoryProvider& memory) : memory_(memory) {}
  PageSupply(const PageSupply&) = delete;
  PageSupply& operator=(const PageSupply&) = delete;

  // QUERY_PAGES(op_mod), then GIVE what it asks for (nothing if it asks for none).
  Result<void> Satisfy(cmd::Commander& commander, prm::QueryPagesOpMod op_mod);
  // MANAGE_PAGES GIVE of `count` new pages. On failure the firmware holds none of them.
  Result<void> Give(cmd::Commander& commander, uint32_t count);
  // MANAGE_PAGES TAKE until the firmware holds none of our pages or returns none. Returns how
  // many came back; the pages still held (held() > 0 afterwards) stay allocated.
  Result<uint64_t> ReclaimAll(cmd::Commander& commander);

  uint64_t held() const;  // pages the firmware holds now

 private:
  struct Lent {
    bus::DmaMemory memory;
    uint32_t outstanding = 0;
  };

  alloc::MemoryProvider& memory_;
  mutable std::mutex mu_;
  std::vector<std::unique_ptr<Lent>> lent_;
  std::map<uint64_t, Lent*> page_owner_;  // page IOVA -> the buffer it came from
};

}  // namespace onchip::driver
