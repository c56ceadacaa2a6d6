// The device's view of its PCIe TPH steering-tag (ST) table.
//
// On ConnectX the ST table lives in the MSI-X table (PCIe "ST Table Location" = MSI-X table), so
// the software ConnectX models it as BAR0 bytes (tools/sim/bar_layout.h, `msix`): software
// programs entry i by storing the tag into the entry's Vector Control dword (little-endian like
// every MSI-X field; ST Lower bits 23:16, ST Upper bits 31:24; the layout vpci::TphCapability
// states), and the device reads the entry each time it needs the tag. A tag is therefore whatever
// the driver last stored: the device derives nothing itself. The device puts the tag of entry N
// into the TLPs that reach the memory of an mkey with pcie_tph_en = 1 and
// pcie_tph_steering_tag_index = N; N = 0 is MLX5_MKC_PCIE_TPH_NO_STEERING_TAG_INDEX (the TLPs
// carry the processing hint without a tag), so entry 0 is never consulted.
//
// Ordering: the driver may store an entry while the device reads it; each read is one relaxed
// 32-bit atomic load of the Vector Control dword (a tag is 16 bits of one dword, so it is never
// torn). The table owns nothing: the bytes belong to Bar0, which outlives every user.
#pragma once

#include <atomic>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

#include "uapi/vpci.h"

namespace onchip::sim {

// MLX5_MKC_PCIE_TPH_NO_STEERING_TAG_INDEX: mkc.pcie_tph_steering_tag_index 0 names no tag.
inline constexpr uint16_t kNoSteeringTagIndex = 0;

class SteeringTagTable {
 public:
  SteeringTagTable() = default;  // a function without TPH: no entries
  explicit SteeringTagTable(std::span<std::byte> entries) : entries_(entries) {}

  uint16_t size() const { return static_cast<uint16_t>(entries_.size() / vpci::kMsixEntryBytes); }

  // The tag entry `index` holds now (ST Upper << 8 | ST Lower), or nullopt past the table.
  std::optional<uint16_t> Tag(uint16_t index) const {
    if (index >= size()) return std::nullopt;
    std::byte* p = entries_.data() + index * vpci::kMsixEntryBytes + vpci::kMsixVectorControlOffset;
    uint32_t v = std::atomic_ref<uint32_t>(*reinterpret_cast<uint32_t*>(p))
                     .load(std::memory_order_relaxed);
    if constexpr (std::endian::native == std::endian::big) v = std::byteswap(v);
    return static_cast<uint16_t>(v >> vpci::kMsixStShift);
  }

 private:
  std::span<std::byte> entries_;
};

}  // namespace onchip::sim
