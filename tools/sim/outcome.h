// What a firmware command handler answers: a PRM command status and the syndrome that names the
// failed check (uapi/sim/syndrome.h), plus the checks every handler starts with.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

#include "uapi/cmd_status.h"
#include "uapi/prm/cmd_layout.h"
#include "uapi/prm/field.h"
#include "uapi/sim/syndrome.h"

namespace onchip::sim {

struct Outcome {
  prm::CommandStatus status = prm::CommandStatus::OK;
  uint32_t syndrome = 0;

  static constexpr Outcome Ok() { return {}; }
  constexpr bool ok() const { return status == prm::CommandStatus::OK; }
};

// A refusal: the syndrome of the failed check, with the status its row gives.
constexpr Outcome Refuse(Syndrome syndrome) {
  return {SyndromeStatus(syndrome), static_cast<uint32_t>(syndrome)};
}

// An op_mod the command does not define.
constexpr Outcome BadOpMod() { return Refuse(Syndrome::BAD_OP_MOD); }

// True if bits [bit_offset, bit_offset + width) of `bytes` are all zero (bytes covers them).
bool BitsZero(std::span<const std::byte> bytes, std::size_t bit_offset, std::size_t width);

// A layout's reserved bits are all zero in `in` (which holds at least the layout).
template <class L>
bool ReservedClear(std::span<const std::byte> in, L) {
  for (const auto& r : L::reserved_ranges)
    if (!BitsZero(in, r.bit_offset, r.bit_width)) return false;
  return true;
}

// The checks firmware makes before it looks at a command's fields: the input holds the whole
// layout In, the output has room for Out, and In's reserved bits are clear.
template <class In, class Out>
Outcome CheckShape(std::span<const std::byte> in, std::span<std::byte> out) {
  if (in.size() < prm::size_bytes<In>)
    return Refuse(Syndrome::INPUT_TOO_SHORT);
  if (out.size() < prm::size_bytes<Out>)
    return Refuse(Syndrome::OUTPUT_TOO_SHORT);
  if (!ReservedClear(in, In{}))
    return Refuse(Syndrome::RESERVED_NOT_ZERO);
  return Outcome::Ok();
}

// CheckShape for a command whose own layout leaves the header's uid reserved (the destroy and
// query commands of some objects): the uid is read from the header (bytes 2-3, where a user
// context's commands carry it) and left out of the reserved-bit check.
template <class In, class Out>
Outcome CheckShapeWithHeaderUid(std::span<const std::byte> in, std::span<std::byte> out,
                                uint16_t* uid) {
  if (in.size() < prm::size_bytes<In>)
    return Refuse(Syndrome::INPUT_TOO_SHORT);
  std::array<std::byte, prm::size_bytes<In>> copy;
  std::memcpy(copy.data(), in.data(), copy.size());
  *uid = static_cast<uint16_t>(prm::Get(std::span<const std::byte>(copy), prm::mbox_in::uid));
  prm::Bits(std::span<std::byte>(copy)).set(prm::mbox_in::uid, 0);
  return CheckShape<In, Out>(std::span<const std::byte>(copy), out);
}

}  // namespace onchip::sim
