// MEMIC: ALLOC_MEMIC, DEALLOC_MEMIC, MODIFY_MEMIC.
//
// Allocations are byte ranges of the MEMIC window of BAR0 (addresses are BAR offsets, as
// memic_bar_start_addr is). The window is the allocation's real storage: what the CPU stores
// through the BAR is what an mkey over it reads. A new allocation is zeroed.
//
// MODIFY_MEMIC: operation windows (atomic increment, test-and-set) are not modelled; the device
// advertises memic_operations = 0 and refuses every operation type.
#include <algorithm>

#include "tools/sim/firmware.h"
#include "uapi/prm/memic.h"

namespace onchip::sim {

using Bytes = std::span<const std::byte>;
using Out = std::span<std::byte>;

namespace {
constexpr uint64_t kMemicUnit = 64;  // 2^log_min_memic_alloc_size
uint64_t AlignUp(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }
}  // namespace

Outcome Firmware::AllocMemic(Bytes in, Out out) {
  using In = prm::alloc_memic_in;
  if (!config_.memic) return Refuse(Syndrome::MEMIC_UNSUPPORTED);
  if (Outcome s = CheckShape<In, prm::alloc_memic_out>(in, out); !s.ok()) return s;
  if (prm::Get(in, In::op_mod) != 0)
    return Refuse(Syndrome::BAD_OP_MOD);
  const uint64_t size = prm::Get(in, In::memic_size);
  if (size == 0 || size % kMemicUnit != 0 || size > config_.max_memic_size)
    return Refuse(Syndrome::MEMIC_SIZE);
  const uint32_t log_align = prm::Get(in, In::log_memic_addr_alignment);
  if (log_align > config_.log_max_memic_addr_alignment || log_align > 40)
    return Refuse(Syndrome::MEMIC_ALIGNMENT);
  const uint64_t align = kMemicUnit << log_align;
  const uint64_t range_start = prm::Get(in, In::range_start_addr);
  const uint64_t range_size = prm::Get(in, In::range_size);
  const uint64_t window_end = layout_.memic_start + layout_.memic_size;
  if (range_start < layout_.memic_start || range_start >= window_end ||
      range_size > window_end - range_start || range_size < size)
    return Refuse(Syndrome::MEMIC_RANGE);
  const uint64_t range_end = range_start + range_size;

  // First fit: the lowest aligned start in the range clear of every live allocation.
  uint64_t cand = AlignUp(range_start, align);
  for (const auto& [start, a] : memic_) {
    if (start + a.size <= cand) continue;
    if (start >= cand + size) break;
    cand = AlignUp(start + a.size, align);
  }
  if (cand + size > range_end) return Refuse(Syndrome::MEMIC_FULL);
  auto bytes = memic_window_.subspan(cand - layout_.memic_start, size);
  std::fill(bytes.begin(), bytes.end(), std::byte{0});
  memic_.emplace(cand, MemicAlloc{size});
  prm::Bits(out).set(prm::alloc_memic_out::memic_start_addr, cand);
  return Outcome::Ok();
}

Outcome Firmware::DeallocMemic(Bytes in, Out out) {
  using In = prm::dealloc_memic_in;
  if (!config_.memic) return Refuse(Syndrome::MEMIC_UNSUPPORTED);
  if (Outcome s = CheckShape<In, prm::dealloc_memic_out>(in, out); !s.ok()) return s;
  if (prm::Get(in, In::op_mod) != 0)
    return Refuse(Syndrome::BAD_OP_MOD);
  auto it = memic_.find(prm::Get(in, In::memic_start_addr));
  if (it == memic_.end() || it->second.size != prm::Get(in, In::memic_size))
    return Refuse(Syndrome::MEMIC_UNKNOWN);
  if (it->second.mkeys != 0) return Refuse(Syndrome::MEMIC_BUSY);
  memic_.erase(it);
  return Outcome::Ok();
}

Outcome Firmware::ModifyMemic(Bytes in, Out out) {
  using In = prm::modify_memic_in;
  if (!config_.memic) return Refuse(Syndrome::MEMIC_UNSUPPORTED);
  if (Outcome s = CheckShape<In, prm::modify_memic_out>(in, out); !s.ok()) return s;
  const uint32_t op_mod = prm::Get(in, In::op_mod);
  if (op_mod != prm::MODIFY_MEMIC_OP_MOD_ALLOC && op_mod != prm::MODIFY_MEMIC_OP_MOD_DEALLOC)
    return Refuse(Syndrome::BAD_OP_MOD);
  // memic_operations = 0: no operation type is valid.
  return Refuse(Syndrome::MEMIC_OPERATION_UNSUPPORTED);
}

}  // namespace onchip::sim
