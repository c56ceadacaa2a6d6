// uapi/prm/objects.h, the one table of object kinds, and the device daemon's bookkeeping that
// reads it (tools/simd/owned_objects.h): every kind a client creates is released with its own
// destroy command, naming the number the creation returned.
#include <gtest/gtest.h>

#include <set>
#include <string_view>
#include <vector>

#include "tools/simd/owned_objects.h"
#include "uapi/prm/commands.h"
#include "uapi/prm/objects.h"

namespace onchip {
namespace {

TEST(ObjectKinds, EveryRowNamesUserCommandsAndFieldsInsideThem) {
  std::set<std::string_view> names;
  for (const prm::ObjectKindRow& r : prm::kObjectKinds) {
    SCOPED_TRACE(r.name);
    EXPECT_TRUE(names.insert(r.name).second) << "name listed twice";
    for (uint16_t op : {uint16_t(r.create), uint16_t(r.destroy)}) {
      const prm::Command* c = prm::FindCommand(op);
      ASSERT_NE(c, nullptr) << "opcode 0x" << std::hex << op << " has no command row";
      EXPECT_TRUE(c->user) << c->name << ": a client could not issue it";
      EXPECT_TRUE(c->in_sim) << c->name;
    }
    EXPECT_TRUE(r.created.present());
    EXPECT_TRUE(r.destroyed.present());
    EXPECT_GE(r.destroy_bytes, 16u);
    std::vector<std::byte> destroy(r.destroy_bytes);
    EXPECT_TRUE(prm::SetAt(destroy, r.destroyed, 1)) << "the id field lies past the input";
    EXPECT_FALSE(prm::GetAt(std::span<const std::byte>(destroy).first(4), r.destroyed));
    EXPECT_EQ(r.carried_in.present(), r.carried_out.present());
    EXPECT_EQ(prm::CreatedBy(r.create), &r);
    EXPECT_EQ(prm::DestroyedBy(r.destroy), &r);
  }
}

// A creation's output with `id` where the row says the number is (and a carried field in the
// input), as the firmware would answer.
struct Created {
  std::vector<std::byte> in = std::vector<std::byte>(256);
  std::vector<std::byte> out = std::vector<std::byte>(256);
};
Created Creation(const prm::ObjectKindRow& r, uint64_t id, uint64_t carried) {
  Created c;
  prm::Bits(c.in).set(prm::mbox_in::opcode, r.create);
  prm::SetAt(c.out, r.created, id);
  if (r.carried_in.present()) prm::SetAt(c.in, r.carried_in, carried);
  return c;
}

TEST(ObjectKinds, WhatAClientLeavesIsReleasedNewestFirstWithItsOwnNumbers) {
  simd::OwnedObjects owned;
  uint64_t id = 0x10;
  for (const prm::ObjectKindRow& r : prm::kObjectKinds) {
    const Created c = Creation(r, id++, 0x40);
    owned.Note(c.in, c.out);
  }
  ASSERT_EQ(owned.size(), prm::kObjectKindCount);
  for (const prm::ObjectKindRow& r : prm::kObjectKinds) EXPECT_EQ(owned.counts()[size_t(r.kind)], 1u);
  EXPECT_TRUE(owned.Owns(prm::ObjectKind::kPd, 0x11));
  const auto cmds = owned.ReleaseCommands();
  ASSERT_EQ(cmds.size(), prm::kObjectKindCount + 1);  // the QP's move to ERR first
  EXPECT_EQ(prm::Get(cmds[0], prm::mbox_in::opcode), prm::QP_2ERR);
  for (std::size_t k = 0; k < prm::kObjectKindCount; ++k) {
    const prm::ObjectKindRow& r = prm::kObjectKinds[prm::kObjectKindCount - 1 - k];
    SCOPED_TRACE(r.name);
    const std::vector<std::byte>& in = cmds[k + 1];
    ASSERT_EQ(in.size(), r.destroy_bytes);
    EXPECT_EQ(prm::Get(in, prm::mbox_in::opcode), r.destroy);
    EXPECT_EQ(prm::GetAt(in, r.destroyed), 0x10 + prm::kObjectKindCount - 1 - k);
    if (r.carried_out.present()) {
      EXPECT_EQ(prm::GetAt(in, r.carried_out), 0x40u);
    }
  }
  EXPECT_EQ(owned.memic_bytes(), 0x40u);
  // A destruction forgets exactly its object.
  std::vector<std::byte> destroy(256), out(256);
  const prm::ObjectKindRow& cq = prm::RowOf(prm::ObjectKind::kCq);
  prm::Bits(destroy).set(prm::mbox_in::opcode, cq.destroy);
  prm::SetAt(destroy, cq.destroyed, 0x10 + static_cast<uint64_t>(prm::ObjectKind::kCq));
  owned.Note(destroy, out);
  EXPECT_EQ(owned.counts()[size_t(prm::ObjectKind::kCq)], 0u);
  EXPECT_EQ(owned.size(), prm::kObjectKindCount - 1);
}

}  // namespace
}  // namespace onchip
