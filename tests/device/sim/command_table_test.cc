// uapi/prm/commands.h against the software ConnectX: the firmware implements exactly the rows
// marked in_sim, refuses the others and every opcode without a row with BAD_OP_ERR, and accepts
// each row in the HCA states the row names only.
#include <gtest/gtest.h>

#include <set>
#include <string_view>

#include "driver/cmd/commander.h"
#include "tools/sim/firmware.h"
#include "uapi/prm/commands.h"

namespace onchip {
namespace {

TEST(CommandTable, TheFirmwareImplementsExactlyTheRowsMarkedInSim) {
  for (uint32_t op = 0; op <= 0xffff; ++op) {
    const prm::Command* row = prm::FindCommand(static_cast<uint16_t>(op));
    EXPECT_EQ(sim::Firmware::Implements(static_cast<uint16_t>(op)), row != nullptr && row->in_sim)
        << "opcode 0x" << std::hex << op << (row ? " " : " (no row)")
        << (row ? row->name : std::string_view());
  }
}

TEST(CommandTable, RowsAreWellFormed) {
  std::set<uint16_t> opcodes;
  std::set<std::string_view> names;
  for (const prm::Command& c : prm::kCommands) {
    SCOPED_TRACE(c.name);
    EXPECT_TRUE(opcodes.insert(c.opcode).second) << "opcode listed twice";
    EXPECT_TRUE(names.insert(c.name).second) << "name listed twice";
    EXPECT_NE(c.states, 0) << "accepted in no state";
    EXPECT_TRUE(!c.uid || c.user) << "a uid only means something on a user's command";
    for (char ch : c.name) EXPECT_TRUE((ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '_');
  }
}

TEST(CommandTable, TheDriverNamesEveryCommandItSends) {
  // The refusal of a CREATE_SRQ names it (it used to read "UNKNOWN_OPCODE").
  EXPECT_STREQ(driver::cmd::OpcodeName(prm::CREATE_SRQ), "CREATE_SRQ");
  EXPECT_STREQ(driver::cmd::OpcodeName(prm::QUERY_HCA_VPORT_GID), "QUERY_HCA_VPORT_GID");
  EXPECT_STREQ(driver::cmd::OpcodeName(0x7fff), "UNKNOWN_OPCODE");
  for (const prm::Command& c : prm::kCommands) EXPECT_EQ(driver::cmd::OpcodeName(c.opcode), c.name);
}

}  // namespace
}  // namespace onchip
