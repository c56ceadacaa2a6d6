// What one client of the device daemon owns on its function, learned from the commands it
// issued: the kernel's uverbs file in miniature. The daemon notes every command that succeeded
// (a creation adds the object, a destruction removes it) and, when the client goes, builds the
// commands that release what is left: every QP moved to ERR first (so the data engine stops
// touching its queues and no new completion lands), then every object destroyed in the reverse
// order of creation, children before the parents they were created on.
//
// What a kind's creation and destruction look like is uapi/prm/objects.h's table. It also
// answers which commands a client may issue at all (what user space may send through
// DEVX), which carry the client's uid in the header (the firmware checks ownership by it), and
// whether a MEMIC range a DEALLOC_MEMIC or a MEMIC mkey names is the client's own (MEMIC carries
// no uid).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "uapi/prm/objects.h"

namespace onchip::simd {

using prm::ObjectKind;

// A user-space command the daemon passes on (uapi/prm/commands.h's user column); false for what
// only the function's owner issues (ENABLE/INIT/TEARDOWN/DISABLE_HCA, pages, SET_HCA_CAP,
// SET_ISSI, ACCESS_REG, ...) and for opcodes it does not know.
bool UserMayIssue(uint16_t opcode);
// Whether the command's header uid (input bytes 2-3) names the object owner (the table's uid
// column); the daemon writes the client's uid there, and 0 into every other command's header.
bool CarriesUid(uint16_t opcode);

class OwnedObjects {
 public:
  // A refusal reason (static text) when the client may not issue `in` now, else nullptr: a
  // DEALLOC_MEMIC, or a CREATE_MKEY of MEMIC access mode, naming device memory the client did
  // not allocate (MEMIC carries no uid, so the daemon keeps its owner, as the kernel does).
  const char* Refusal(std::span<const std::byte> in) const;
  // After `in` succeeded with output `out`: records a creation or forgets a destruction.
  void Note(std::span<const std::byte> in, std::span<const std::byte> out);

  // The commands that release everything left, in order (inputs without uid; stamp it). Each
  // wants a 16-byte output.
  std::vector<std::vector<std::byte>> ReleaseCommands() const;
  void Clear() { objects_.clear(); }

  // Live objects per kind, in prm::kObjectKinds order.
  std::array<uint32_t, prm::kObjectKindCount> counts() const;
  uint64_t memic_bytes() const;
  // Whether the client created object `id` of `kind` (a PD number, an mkey index, ...).
  bool Owns(ObjectKind kind, uint64_t id) const;
  std::size_t size() const { return objects_.size(); }

 private:
  struct Object {
    ObjectKind kind;
    uint64_t id = 0;       // the number the firmware gave (uar, pd, mkey index, ...; MEMIC: address)
    uint64_t carried = 0;  // the creation's field the destruction repeats (MEMIC size, obj_type)
  };
  void Forget(ObjectKind kind, uint64_t id);
  // Whether [start, start + len) lies inside one of the client's MEMIC allocations.
  bool OwnsMemicRange(uint64_t start, uint64_t len) const;
  std::vector<Object> objects_;  // creation order
};

}  // namespace onchip::simd
