#include "tools/simd/owned_objects.h"

#include <algorithm>

#include "uapi/prm/cmd_layout.h"
#include "uapi/prm/commands.h"
#include "uapi/prm/field.h"
#include "uapi/prm/memic.h"
#include "uapi/prm/mkey.h"
#include "uapi/prm/opcodes.h"
#include "uapi/prm/qp.h"

namespace onchip::simd {

bool CarriesUid(uint16_t opcode) {
  const prm::Command* c = prm::FindCommand(opcode);
  return c != nullptr && c->uid;
}

bool UserMayIssue(uint16_t opcode) {
  const prm::Command* c = prm::FindCommand(opcode);
  return c != nullptr && c->user;
}

namespace {

uint16_t OpcodeOf(std::span<const std::byte> in) {
  return static_cast<uint16_t>(prm::Get(in, prm::mbox_in::opcode));
}

}  // namespace

const char* OwnedObjects::Refusal(std::span<const std::byte> in) const {
  switch (OpcodeOf(in)) {
    case prm::DEALLOC_MEMIC: {
      if (in.size() < prm::size_bytes<prm::dealloc_memic_in>) return nullptr;  // firmware refuses
      const uint64_t addr = prm::Get(in, prm::dealloc_memic_in::memic_start_addr);
      return Owns(ObjectKind::kMemic, addr)
                 ? nullptr
                 : "DEALLOC_MEMIC of device memory this client did not allocate";
    }
    case prm::CREATE_MKEY: {
      // A MEMIC key reaches the range its mkc names: it must lie in one of the client's own
      // allocations, as the kernel makes a DM MR only over the caller's own ibv_dm
      // (drivers/infiniband/hw/mlx5/dm.c, mlx5_ib_reg_dm_mr).
      using C = prm::create_mkey_in;
      constexpr auto mkc = C::memory_key_mkey_entry;
      if (in.size() < prm::size_bytes<C>) return nullptr;  // firmware refuses it
      const uint64_t mode =
          prm::Get(in, mkc.access_mode_1_0) | (prm::Get(in, mkc.access_mode_4_2) << 2);
      if (mode != prm::MKC_ACCESS_MODE_MEMIC) return nullptr;
      return OwnsMemicRange(prm::Get(in, mkc.start_addr), prm::Get(in, mkc.len))
                 ? nullptr
                 : "CREATE_MKEY over device memory this client did not allocate";
    }
    default:
      return nullptr;
  }
}

bool OwnedObjects::OwnsMemicRange(uint64_t start, uint64_t len) const {
  return std::any_of(objects_.begin(), objects_.end(), [&](const Object& o) {
    return o.kind == ObjectKind::kMemic && start >= o.id && start - o.id <= o.carried &&
           len <= o.carried - (start - o.id);
  });
}

void OwnedObjects::Forget(ObjectKind kind, uint64_t id) {
  const auto it = std::find_if(objects_.begin(), objects_.end(),
                               [&](const Object& o) { return o.kind == kind && o.id == id; });
  if (it != objects_.end()) objects_.erase(it);
}

void OwnedObjects::Note(std::span<const std::byte> in, std::span<const std::byte> out) {
  if (in.size() < 16 || out.size() < 16) return;
  const uint16_t opcode = OpcodeOf(in);
  if (const prm::ObjectKindRow* row = prm::CreatedBy(opcode)) {
    const std::optional<uint64_t> id = prm::GetAt(out, row->created);
    const std::optional<uint64_t> carried =
        row->carried_in.present() ? prm::GetAt(in, row->carried_in) : uint64_t{0};
    if (id && carried) objects_.push_back(Object{row->kind, *id, *carried});
  } else if (const prm::ObjectKindRow* gone = prm::DestroyedBy(opcode)) {
    if (const std::optional<uint64_t> id = prm::GetAt(in, gone->destroyed)) Forget(gone->kind, *id);
  }
}

std::vector<std::vector<std::byte>> OwnedObjects::ReleaseCommands() const {
  std::vector<std::vector<std::byte>> cmds;
  // Every QP to ERR first: the data engine stops touching its queues.
  for (const Object& o : objects_) {
    if (o.kind != ObjectKind::kQp) continue;
    prm::Message<prm::qp_2err_in> in;
    in.set(prm::qp_2err_in::opcode, prm::QP_2ERR).set(prm::qp_2err_in::qpn, o.id);
    cmds.emplace_back(in.bytes().begin(), in.bytes().end());
  }
  // Then every object, the newest first: children before the parents they were created on.
  for (auto it = objects_.rbegin(); it != objects_.rend(); ++it) {
    const prm::ObjectKindRow& row = prm::RowOf(it->kind);
    std::vector<std::byte> in(row.destroy_bytes);
    prm::Bits(in).set(prm::mbox_in::opcode, row.destroy);
    (void)prm::SetAt(in, row.destroyed, it->id);  // the row's input size holds both fields
    if (row.carried_out.present()) (void)prm::SetAt(in, row.carried_out, it->carried);
    cmds.push_back(std::move(in));
  }
  return cmds;
}

std::array<uint32_t, prm::kObjectKindCount> OwnedObjects::counts() const {
  std::array<uint32_t, prm::kObjectKindCount> n{};
  for (const Object& o : objects_) ++n[static_cast<std::size_t>(o.kind)];
  return n;
}

bool OwnedObjects::Owns(ObjectKind kind, uint64_t id) const {
  return std::any_of(objects_.begin(), objects_.end(),
                     [&](const Object& o) { return o.kind == kind && o.id == id; });
}

uint64_t OwnedObjects::memic_bytes() const {
  uint64_t n = 0;
  for (const Object& o : objects_)
    if (o.kind == ObjectKind::kMemic) n += o.carried;
  return n;
}

}  // namespace onchip::simd
