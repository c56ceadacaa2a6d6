// Replays the firmware fuzz target's corpus (seeds plus anything the fuzzer found and was fixed),
// so CI runs the harness and its invariant checks, and pins that the seeds reach the firmware.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <map>
#include <string>
#include <vector>

#include "tools/fuzz/corpus.h"
#include "tools/sim/fuzz/firmware_fuzz.h"

namespace onchip::sim::fuzz {
namespace {

using ::onchip::fuzz::CorpusDir;
using ::onchip::fuzz::ReadCorpus;

constexpr char kCorpus[] = "tools/sim/fuzz/corpus";

TEST(FirmwareFuzzReplay, SeedsReachTheFirmwareAndKeepItConsistent) {
  std::map<std::string, FuzzResult> got;
  // FuzzFirmware aborts on a broken invariant.
  for (const auto& input : ReadCorpus(CorpusDir(kCorpus)))
    got[input.name] = FuzzFirmware(input.bytes.data(), input.bytes.size());
  ASSERT_GE(got.size(), 4u) << "corpus missing under " << CorpusDir(kCorpus);
  EXPECT_EQ(got.at("cmdq_bringup").completed, 4);
  EXPECT_EQ(got.at("cmdq_bringup").commands, 4);
  EXPECT_EQ(got.at("cmdq_resources").completed, 5);
  EXPECT_GE(got.at("raw_resources").commands, 12);
  EXPECT_EQ(got.at("raw_bringup").commands, 6);
}

// The commands the harness itself runs before the input: bring-up (ENABLE_HCA, SET_ISSI,
// MANAGE_PAGES, INIT_HCA) and, with objects, one UAR, TD, PD, MEMIC, SW ICM and five mkeys.
int SetupCommands(uint8_t flags) {
  int n = 0;
  if (flags & kFlagBringUp) n += 4;
  if ((flags & kFlagBringUp) && (flags & kFlagObjects)) n += 10;
  return n;
}

// Raw mode records, counted independently of the harness: {u16 in_len, u16 out_len, in_len
// bytes}, the last one possibly short.
int RawRecords(const std::vector<uint8_t>& data, std::size_t size) {
  int n = 0;
  for (std::size_t pos = 1; pos + 4 <= size; ++n)
    pos += 4 + std::min<std::size_t>((data[pos] << 8) | data[pos + 1], size - pos - 4);
  return n;
}

// Random bytes in every mode: each record reaches the firmware (none silently dropped), the
// device completes no more cmdq entries than were handed to it (rung, or owned by the device
// per their ownership bit), and the firmware's tables stay
// consistent (FuzzFirmware aborts otherwise). Inputs too short to hold a command run nothing.
TEST(FirmwareFuzzReplay, GarbageReachesTheFirmwareAndIsContained) {
  std::vector<uint8_t> junk(70000);
  uint32_t x = 12345;
  int raw_commands = 0;
  for (int flags = 0; flags < 8; ++flags) {
    SCOPED_TRACE(flags);
    for (auto& b : junk) b = static_cast<uint8_t>((x = x * 1103515245 + 12345) >> 16);
    junk[0] = static_cast<uint8_t>(flags);
    if (flags & kFlagRaw) {
      // Short records, so that one input carries many commands.
      for (std::size_t pos = 1; pos + 4 <= junk.size(); pos += 4 + junk[pos + 1]) {
        junk[pos] = 0;
        junk[pos + 2] = 0;
      }
    }
    const FuzzResult all = FuzzFirmware(junk.data(), junk.size());
    const int setup = SetupCommands(junk[0]);
    if (flags & kFlagRaw) {
      const int records = RawRecords(junk, junk.size());
      EXPECT_GT(records, 100);
      EXPECT_EQ(all.commands, setup + records);
      EXPECT_EQ(all.completed, 0);
      raw_commands += all.commands - setup;
    } else {
      const uint32_t doorbell =
          (uint32_t{junk[1]} << 24) | (uint32_t{junk[2]} << 16) | (uint32_t{junk[3]} << 8) | junk[4];
      // The device runs the rung slots and those whose ownership bit hands them to it:
      // 32 entries of 64 bytes at the start of the arena (input byte 5 on).
      uint32_t handed_over = doorbell;
      for (uint32_t slot = 0; slot < 32; ++slot)
        if (junk[5 + slot * 64 + 63] & 1) handed_over |= 1u << slot;
      EXPECT_GE(all.completed, 0);
      EXPECT_LE(all.completed, std::popcount(handed_over));
      EXPECT_GE(all.commands, setup);
      EXPECT_LE(all.commands - setup, all.completed);
    }
    const FuzzResult short_input = FuzzFirmware(junk.data(), 3);
    EXPECT_EQ(short_input.commands, setup);
    EXPECT_EQ(short_input.completed, 0);
  }
  EXPECT_GT(raw_commands, 400);
  const FuzzResult none = FuzzFirmware(nullptr, 0);
  EXPECT_EQ(none.commands, 0);
  EXPECT_EQ(none.completed, 0);
}

}  // namespace
}  // namespace onchip::sim::fuzz
