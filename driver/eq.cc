#include "driver/eq.h"

#include <cerrno>
#include <atomic>
#include <cstring>

#include "driver/cmd/run.h"
#include "mmio/barriers.h"
#include "uapi/prm/caps.h"
#include "uapi/prm/eq.h"
#include "uapi/prm/opcodes.h"
#include "uapi/prm/uar_page.h"

namespace onchip::driver {
namespace {

// The EQE's owner byte (struct mlx5_eqe: byte 63, bit 0).
constexpr std::size_t kEqeOwnerByte = 63;

}  // namespace

Result<std::unique_ptr<CompletionEq>> CompletionEq::Create(cmd::Commander& commander,
                                                           alloc::MemoryProvider& memory,
                                                           const Caps& caps, uint32_t uar_index,
                                                           uint64_t event_mask, uint16_t vector) {
  if (caps.cur(prm::CAP_GENERAL).get(prm::cmd_hca_cap::log_max_eq_sz) < kLogEntries)
    return Fail(EINVAL, "completion EQ: the device's EQs are smaller than the driver needs");
  const std::size_t bytes = std::size_t{kEqeBytes} << kLogEntries;
  const std::size_t pages = bytes / prm::ADAPTER_PAGE_SIZE;
  std::unique_ptr<CompletionEq> eq(new CompletionEq());
  ONCHIP_TRY(eq->ring_, bus::DmaMemory::Allocate(memory, bytes, prm::ADAPTER_PAGE_SIZE));
  // Every EQE device-owned before the device's first pass over the ring.
  for (uint32_t i = 0; i < eq->entries(); ++i)
    eq->ring_.host()[std::size_t{i} * kEqeBytes + kEqeOwnerByte] = std::byte{1};

  using In = prm::create_eq_in;
  constexpr auto eqc = In::eq_context_entry;
  prm::Message<In> in(pages * 8);
  in.set(In::opcode, prm::CREATE_EQ)
      .set(In::uid, 0)
      .set(eqc.log_eq_size, kLogEntries)
      .set(eqc.uar_page, uar_index)
      .set(eqc.intr, vector)
      .set(eqc.log_page_size, 0)  // 4 KiB pages: log_page_size counts from 4 KiB
      .set(In::event_bitmask[0], event_mask);
  for (std::size_t i = 0; i < pages; ++i)
    in.set(In::pas[i], eq->ring_.iova() + i * prm::ADAPTER_PAGE_SIZE);
  ONCHIP_TRY(auto out, cmd::Run<prm::create_eq_out>(commander, in));
  eq->eqn_ = out.get(prm::create_eq_out::eq_number);
  eq->uar_index_ = uar_index;
  return eq;
}

const prm::pod::mlx5_eqe* CompletionEq::Next() const {
  const std::byte* at = ring_.host() + std::size_t{ci_ & (entries() - 1)} * kEqeBytes;
  const auto owner = std::atomic_ref<const std::byte>(at[kEqeOwnerByte]).load(std::memory_order_acquire);
  // Software's iff the owner bit equals the consumer's pass parity.
  if (((std::to_integer<uint32_t>(owner) ^ (ci_ >> kLogEntries)) & 1) != 0) return nullptr;
  return reinterpret_cast<const prm::pod::mlx5_eqe*>(at);
}

void CompletionEq::UpdateCi(bus::Bus& bus, bool arm) const {
  // Every EQE before ci is read before the device may write over its slot (x86 keeps earlier
  // loads before a later store; the barrier keeps the compiler from sinking them).
  mmio::ToDeviceBarrier();
  bus.Write32(prm::UarPageOffset(uar_index_) + (arm ? prm::kEqDoorbellArm : prm::kEqDoorbellUpdateCi),
              eqn_ << 24 | (ci_ & 0xffffff));
  bus.Notify();
}

Result<void> CompletionEq::Destroy(cmd::Commander& commander) {
  prm::Message<prm::destroy_eq_in> in;
  in.set(prm::destroy_eq_in::opcode, prm::DESTROY_EQ).set(prm::destroy_eq_in::eq_number, eqn_);
  ONCHIP_TRY(auto out, cmd::Run<prm::destroy_eq_out>(commander, in));
  (void)out;
  return {};
}

}  // namespace onchip::driver
