// The typed PRM accessors: big-endian placement, refusal instead of truncation, arrays, nesting.
#include <gtest/gtest.h>

#include <cstdint>
#include <type_traits>

#include "uapi/prm/cmd_layout.h"
#include "uapi/prm/hca.h"
#include "uapi/prm/memic.h"
#include "uapi/prm/mkey.h"

namespace onchip::prm {
namespace {

uint8_t Byte(const Message<create_mkey_in>& m, size_t i) {
  return std::to_integer<uint8_t>(m.bytes()[i]);
}

TEST(Field, OpcodeIsTheFirstBigEndianHalfword) {
  Message<alloc_memic_in> in;
  in.set(alloc_memic_in::opcode, 0x205);
  EXPECT_EQ(std::to_integer<int>(in.bytes()[0]), 0x02);
  EXPECT_EQ(std::to_integer<int>(in.bytes()[1]), 0x05);
  EXPECT_EQ(in.get(alloc_memic_in::opcode), 0x205u);
  EXPECT_TRUE(in.ok());
}

TEST(Field, SixtyFourBitFieldsAreBigEndian) {
  Message<alloc_memic_in> in;
  in.set(alloc_memic_in::range_start_addr, 0x0102030405060708ull);
  const size_t at = alloc_memic_in::range_start_addr.bit_offset / 8;
  for (size_t i = 0; i < 8; ++i) EXPECT_EQ(std::to_integer<size_t>(in.bytes()[at + i]), i + 1);
  EXPECT_EQ(in.get(alloc_memic_in::range_start_addr), 0x0102030405060708ull);
  static_assert(std::is_same_v<decltype(in.get(alloc_memic_in::range_start_addr)), uint64_t>);
}

TEST(Field, SubDwordFieldsLeaveTheirNeighboursAlone) {
  Message<create_mkey_in> in;
  const auto& mkc = create_mkey_in::memory_key_mkey_entry;
  in.set(mkc.access_mode_1_0, 0x3).set(mkc.lr, 1).set(mkc.lw, 1).set(mkc.umr_en, 1);
  // mkc dword 0 sits at byte 16; bits 0x10..0x17 are its third byte: umr_en (0x10) is that
  // byte's most significant bit, lw 0x14, lr 0x15, access_mode_1_0 the two lowest bits.
  EXPECT_EQ(Byte(in, 16), 0x00);
  EXPECT_EQ(Byte(in, 17), 0x00);
  EXPECT_EQ(Byte(in, 18), 0x8f);
  EXPECT_EQ(Byte(in, 19), 0x00);
  in.set(mkc.lw, 0);
  EXPECT_EQ(Byte(in, 18), 0x87);
  EXPECT_EQ(in.get(mkc.access_mode_1_0), 3u);
}

TEST(Field, NestedLayoutsUseAbsoluteOffsets) {
  static_assert(create_mkey_in::memory_key_mkey_entry.bit_offset == 0x80);
  static_assert(create_mkey_in::memory_key_mkey_entry.pd.bit_offset == 0x80 + mkc::pd.bit_offset);
  static_assert(create_mkey_in::memory_key_mkey_entry.pd.name == "mkc.pd");
  Message<create_mkey_in> in;
  in.set(create_mkey_in::memory_key_mkey_entry.pd, 0xabcdef);
  EXPECT_EQ(Byte(in, 16 + 13), 0xab);
  EXPECT_EQ(Byte(in, 16 + 14), 0xcd);
  EXPECT_EQ(Byte(in, 16 + 15), 0xef);
}

TEST(Field, AValueThatDoesNotFitIsRefusedNotTruncated) {
  Message<create_mkey_in> in;
  in.set(create_mkey_in::memory_key_mkey_entry.pd, 0x1000000);  // 25 bits into 24
  EXPECT_FALSE(in.ok());
  EXPECT_EQ(in.refused(), "mkc.pd");
  EXPECT_EQ(in.get(create_mkey_in::memory_key_mkey_entry.pd), 0u) << "nothing was written";
  in.set(create_mkey_in::opcode, 0x200);  // later sets still land, the first refusal is kept
  EXPECT_EQ(in.get(create_mkey_in::opcode), 0x200u);
  EXPECT_EQ(in.refused(), "mkc.pd");
}

TEST(Field, OpenEndedArraysLiveInTheExtraBytes) {
  constexpr size_t kPages = 3;
  Message<manage_pages_in> in(kPages * 8);
  for (size_t i = 0; i < kPages; ++i) in.set(manage_pages_in::pas[i], 0x1000 * (i + 1));
  EXPECT_TRUE(in.ok());
  EXPECT_EQ(in.size(), size_bytes<manage_pages_in> + kPages * 8);
  EXPECT_EQ(in.get(manage_pages_in::pas[2]), 0x3000u);
  in.set(manage_pages_in::pas[kPages], 0x4000);  // one past the end of the buffer
  EXPECT_FALSE(in.ok());
  EXPECT_EQ(in.refused(), "manage_pages_in.pas");
}

TEST(Field, ByteArraysDoNotTouchTheirNeighbours) {
  Message<cmd_queue_entry> entry;
  entry.set(cmd_queue_entry::command_input_inline_data[15], 0xaa);
  EXPECT_EQ(std::to_integer<int>(entry.bytes()[16 + 15]), 0xaa);
  EXPECT_EQ(std::to_integer<int>(entry.bytes()[16 + 14]), 0);
  EXPECT_EQ(std::to_integer<int>(entry.bytes()[16 + 16]), 0);
}

TEST(Field, ReadingPastAShortBufferAborts) {
  std::byte small[4]{};
  EXPECT_DEATH(Get(std::span<const std::byte>(small), alloc_memic_in::range_start_addr),
               "alloc_memic_in.range_start_addr");
}

TEST(Field, ReservedRangesCoverTheGaps) {
  size_t named = 0, reserved = 0;
  for (const ReservedBits& r : mkc::reserved_ranges) reserved += r.bit_width;
  named = 1 + 3 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 1 + 2 + 2 + 24 + 8 + 1 + 1 + 1 + 1 + 1 + 24 + 64 +
          64 + 32 + 16 + 32 + 1 + 6 + 1 + 2 + 8;
  EXPECT_EQ(named + reserved, mkc::size_bits);
}

}  // namespace
}  // namespace onchip::prm
