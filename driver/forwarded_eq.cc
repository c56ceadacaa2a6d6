#include "driver/forwarded_eq.h"

#include <atomic>
#include <cerrno>

namespace onchip::driver {
namespace {
constexpr uint64_t kEqeBytes = 64;
constexpr uint32_t kMaxLogEntries = 12;
}  // namespace

Result<std::unique_ptr<ForwardedEq>> ForwardedEq::Open(const bus::Bus& bus,
                                                       const cmd::EventForwarding& f) {
  if (f.log_entries > kMaxLogEntries || f.ci_offset % sizeof(uint32_t) != 0)
    return Fail(EINVAL, "forwarded events: a ring the driver cannot read");
  ONCHIP_TRY(std::byte* const ring, bus.Bar0Window(f.ring_offset, kEqeBytes << f.log_entries));
  ONCHIP_TRY(std::byte* const ci, bus.Bar0Window(f.ci_offset, sizeof(uint32_t)));
  return std::unique_ptr<ForwardedEq>(
      new ForwardedEq(f.eqn, f.log_entries, ring, reinterpret_cast<uint32_t*>(ci)));
}

const prm::pod::mlx5_eqe* ForwardedEq::Next() const {
  const std::byte* at = ring_ + (ci_ & ((uint32_t{1} << log_entries_) - 1)) * kEqeBytes;
  if (!SoftwareOwns(at, ci_, log_entries_)) return nullptr;
  return reinterpret_cast<const prm::pod::mlx5_eqe*>(at);
}

void ForwardedEq::UpdateCi(bus::Bus&, bool) const {
  // Every EQE before ci is read before the owner may write over its slot.
  std::atomic_ref<uint32_t>(*ci_word_).store(ci_, std::memory_order_release);
}

}  // namespace onchip::driver
