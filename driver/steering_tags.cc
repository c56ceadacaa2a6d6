// PCIe TPH steering tags (steering_tags.h).
//
// Where tags come from. On a real platform the tag for (CPU, memory type) is firmware's answer:
// Linux asks the ACPI _DSM "TPH steering tag" method of the root port (pcie_tph_get_cpu_st). This
// driver runs in user space over VFIO or the software ConnectX and has no ACPI, so it uses a fixed
// platform rule instead, the same on every machine:
//
//     tag = (mem_type == IBV_TPH_MEM_TYPE_PM ? 0x8000 : 0) | (cpu & 0x7fff)
//
// a 16-bit extended steering tag (ST Upper:ST Lower) naming the CPU in bits 14:0 and persistent
// memory in bit 15. CPU ids reach this only after AllocDmah checked them against the configured
// CPUs, so the mask never folds two CPUs together on a real machine (32768 CPUs). On hardware
// whose root complex expects firmware-assigned tags the rule is wrong but harmless: a steering
// tag is a hint and never changes where data lands.
//
// Programming an entry: the tag goes into bits 31:16 of the entry's Vector Control dword
// (vpci::TphCapability), a read-modify-write that keeps bits 15:0 (bit 0 is the MSI-X vector mask)
// as a single relaxed 32-bit atomic store, so the device, which may read the entry at any time,
// sees either the old or the new tag and never half of one. Entries are programmed under the
// table lock before their index is handed out, and cleared to tag 0 when the last user goes.
#include "driver/steering_tags.h"

#include <algorithm>
#include <atomic>
#include <bit>
#include <cerrno>

#include "uapi/verbs/dmah.h"

namespace onchip::driver {
namespace {

// mkc.pcie_tph_steering_tag_index is 8 bits wide: a larger ST table is used up to entry 255.
constexpr uint32_t kMaxIndexedEntries = 256;
constexpr uint32_t kTagMask = 0xffffu << vpci::kMsixStShift;

uint32_t FromLittle(uint32_t v) {
  if constexpr (std::endian::native == std::endian::big) return std::byteswap(v);
  return v;
}

}  // namespace

SteeringTagTable::SteeringTagTable(bus::Bus& bus, std::optional<vpci::TphCapability> table,
                                   bool mkey_pcie_tph)
    : bus_(&bus), table_(table), mkey_pcie_tph_(mkey_pcie_tph) {
  // Entry 0 is never handed out, so a table needs two entries to be of any use.
  if (mkey_pcie_tph_ && table_ && table_->st_table_size >= 2)
    entries_.resize(std::min<uint32_t>(table_->st_table_size, kMaxIndexedEntries));
}

SteeringTagTable::SteeringTagTable(cmd::OwnerChannel& owner, bool mkey_pcie_tph)
    : owner_(&owner), mkey_pcie_tph_(mkey_pcie_tph) {
  if (mkey_pcie_tph_) entries_.resize(kMaxIndexedEntries);
}

uint16_t SteeringTagTable::TagFor(uint32_t cpu, uint8_t mem_type) {
  const uint16_t pm = mem_type == IBV_TPH_MEM_TYPE_PM ? 0x8000 : 0;
  return static_cast<uint16_t>(pm | (cpu & 0x7fff));
}

Result<void> SteeringTagTable::Program(uint8_t index, uint16_t tag) {
  const uint64_t offset =
      table_->st_table_offset + index * vpci::kMsixEntryBytes + vpci::kMsixVectorControlOffset;
  ONCHIP_TRY(std::byte* const p, bus_->Bar0Window(offset, sizeof(uint32_t)));
  std::atomic_ref<uint32_t> dword(*reinterpret_cast<uint32_t*>(p));
  const uint32_t old = FromLittle(dword.load(std::memory_order_relaxed));
  const uint32_t now = (old & ~kTagMask) | (uint32_t{tag} << vpci::kMsixStShift);
  dword.store(FromLittle(now), std::memory_order_relaxed);
  return {};
}

Result<uint8_t> SteeringTagTable::Acquire(uint32_t cpu, uint8_t mem_type) {
  std::lock_guard lock(mu_);
  if (entries_.empty()) return Fail(EOPNOTSUPP, "steering tag: the function has no ST table");
  if (owner_ != nullptr) {
    ONCHIP_TRY(const uint8_t index, owner_->AcquireSteeringTag(cpu, mem_type));
    if (index == 0 || index >= entries_.size()) {
      owner_->ReleaseSteeringTag(index);
      return Fail(EPROTO, "steering tag: the owner answered an index outside the table");
    }
    ++entries_[index].refs;
    return index;
  }
  uint32_t free_index = 0;
  for (uint32_t i = 1; i < entries_.size(); ++i) {
    Entry& e = entries_[i];
    if (e.refs == 0) {
      if (free_index == 0) free_index = i;
    } else if (e.cpu == cpu && e.mem_type == mem_type) {
      ++e.refs;
      return static_cast<uint8_t>(i);
    }
  }
  if (free_index == 0) return Fail(ENOSPC, "steering tag: every ST table entry is in use");
  ONCHIP_CHECK(Program(static_cast<uint8_t>(free_index), TagFor(cpu, mem_type)));
  entries_[free_index] = Entry{.cpu = cpu, .mem_type = mem_type, .refs = 1};
  return static_cast<uint8_t>(free_index);
}

void SteeringTagTable::Release(uint8_t index) {
  std::lock_guard lock(mu_);
  if (index == 0 || index >= entries_.size() || entries_[index].refs == 0) return;
  if (owner_ != nullptr) {
    --entries_[index].refs;
    owner_->ReleaseSteeringTag(index);
    return;
  }
  if (--entries_[index].refs == 0) {
    // The window was reachable when the entry was programmed and BAR0 does not shrink.
    (void)Program(index, 0);
    entries_[index] = Entry{};
  }
}

uint32_t SteeringTagTable::entries_in_use() const {
  std::lock_guard lock(mu_);
  uint32_t n = 0;
  for (uint32_t i = 1; i < entries_.size(); ++i) n += entries_[i].refs != 0;
  return n;
}

}  // namespace onchip::driver
