// PCIe TPH steering tags: the function's ST table and which entry serves which (CPU, memory type).
//
// A DMA handle with a CPU asks for the steering tag of (cpu_id, ibv_tph_mem_type): the tag the
// platform assigns to that CPU's cache for volatile (VM) or persistent (PM) memory. The table
// hands out entry indices with reference counts, one entry per distinct (cpu, memory type),
// programming the tag into the function's ST table (in its MSI-X table, vpci::TphCapability) on
// first use. Entry 0 is never handed out: mkc.pcie_tph_steering_tag_index = 0 means "no tag".
// On a function this process is attached to (a device daemon's), the table is the owner's: every
// Acquire and Release goes to the owner channel, which programs it (cmd/owner_channel.h).
//
// Thread safety: every call locks the table.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

#include "driver/bus/bus.h"
#include "driver/cmd/owner_channel.h"
#include "uapi/result.h"
#include "uapi/vpci.h"

namespace onchip::driver {

class SteeringTagTable {
 public:
  // `table`: the function's ST table, or nullopt (no TPH: Acquire answers EOPNOTSUPP).
  // `mkey_pcie_tph`: the device can put TPH fields in an mkey (cmd_hca_cap.mkey_pcie_tph).
  SteeringTagTable(bus::Bus& bus, std::optional<vpci::TphCapability> table, bool mkey_pcie_tph);
  // The owner's table, reached through `owner` (which outlives this).
  SteeringTagTable(cmd::OwnerChannel& owner, bool mkey_pcie_tph);

  // Whether TPH can be used at all (mkey_pcie_tph): DMA handles without a CPU need only this.
  bool mkey_pcie_tph() const { return mkey_pcie_tph_; }

  // The entry index for (cpu, mem_type), programming it on first use. EOPNOTSUPP without an ST
  // table (or one with fewer than 2 entries); ENOSPC when every entry is taken. Indices stop at
  // 255 (mkc.pcie_tph_steering_tag_index is 8 bits) whatever the table size.
  Result<uint8_t> Acquire(uint32_t cpu, uint8_t mem_type);
  // Drops one reference; the entry is free again (and cleared) when the last one goes.
  void Release(uint8_t index);

  // The tag the platform assigns to (cpu, mem_type): (PM ? 0x8000 : 0) | (cpu & 0x7fff), a
  // fixed rule in place of ACPI's _DSM; steering_tags.cc says why.
  static uint16_t TagFor(uint32_t cpu, uint8_t mem_type);

  uint32_t entries_in_use() const;

 private:
  struct Entry {
    uint32_t cpu = 0;
    uint8_t mem_type = 0;
    uint32_t refs = 0;
  };
  // Stores `tag` into entry `index` (mu_ held). EFAULT if the entry is outside BAR0.
  Result<void> Program(uint8_t index, uint16_t tag);

  bus::Bus* const bus_ = nullptr;           // this process's own table, or
  cmd::OwnerChannel* const owner_ = nullptr;  // the owner's
  const std::optional<vpci::TphCapability> table_;
  const bool mkey_pcie_tph_;
  mutable std::mutex mu_;
  // By index, entry 0 unused; empty without mkey_pcie_tph or a usable (>= 2 entries) ST table.
  // Through an owner, the references this process holds (cpu and mem_type unused).
  std::vector<Entry> entries_;
};

}  // namespace onchip::driver
