// Big-endian scalars for the hot-path views of device memory (WQE segments, CQEs, doorbell
// records, the UAR page).
//
// The device reads and writes these words big-endian. Be16/Be32/Be64 hold the bytes exactly as
// the device sees them and cannot be given a host integer by accident: no converting constructor,
// no assignment from an integer, no implicit conversion back. Conversion is spelled at the call:
//
//   seg.lkey = prm::Be32::FromHost(lkey);
//   const uint32_t n = cqe.byte_cnt.host();
//
// Each type is trivially copyable, has the size and alignment of its integer, and no padding,
// so a struct of them has the device's layout (checked with static_assert where it is declared).
#pragma once

#include <bit>
#include <cstdint>
#include <type_traits>

namespace onchip::prm {

template <class T>
class BigEndian {
  static_assert(std::is_unsigned_v<T> && sizeof(T) >= 2, "Be16, Be32 and Be64 only");

 public:
  using host_type = T;

  constexpr BigEndian() = default;
  static constexpr BigEndian FromHost(T v) { return BigEndian(ToBig(v)); }
  // The bytes as they lie in memory, reinterpreted as a host integer (for copying whole words).
  static constexpr BigEndian FromRaw(T raw) { return BigEndian(raw); }

  constexpr T host() const { return ToBig(raw_); }
  constexpr T raw() const { return raw_; }

  friend constexpr bool operator==(BigEndian, BigEndian) = default;

 private:
  constexpr explicit BigEndian(T raw) : raw_(raw) {}
  static constexpr T ToBig(T v) {
    if constexpr (std::endian::native == std::endian::little) return std::byteswap(v);
    return v;
  }

  T raw_;  // uninitialised on default-initialisation, like the integer: a trivial type
};

using Be16 = BigEndian<uint16_t>;
using Be32 = BigEndian<uint32_t>;
using Be64 = BigEndian<uint64_t>;

static_assert(sizeof(Be16) == 2 && alignof(Be16) == 2 && std::is_trivially_copyable_v<Be16>);
static_assert(sizeof(Be32) == 4 && alignof(Be32) == 4 && std::is_trivial_v<Be32>);
static_assert(sizeof(Be64) == 8 && alignof(Be64) == 8 && std::is_trivially_copyable_v<Be64>);
static_assert(!std::is_convertible_v<uint32_t, Be32> && !std::is_assignable_v<Be32&, uint32_t>,
              "a host integer never becomes a big-endian word silently");
static_assert(!std::is_convertible_v<Be32, uint32_t>);

}  // namespace onchip::prm
