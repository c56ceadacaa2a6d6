// The cmdq wire format: driver-side encode/decode against device-side read/write, byte placement
// checked against the layouts in uapi/cmdq (mlx5_ib's include/linux/mlx5/device.h mlx5_cmd_layout,
// mlx5_cmd_prot_block), and every malformation firmware
// reports with its delivery status.
#include "uapi/cmdq/mailbox.h"

#include <gtest/gtest.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <map>
#include <vector>

#include "uapi/prm/cmd_layout.h"

namespace onchip::cmdq {
namespace {

using prm::DeliveryStatus;
using E = prm::cmd_queue_entry;
using Box = prm::cmd_if_box;

// Host memory seen through bus addresses: 576-byte blocks at chosen addresses.
class FakeBlocks : public BlockAccess {
 public:
  std::byte* Block(uint64_t addr) override {
    auto it = blocks_.find(addr);
    return it == blocks_.end() ? nullptr : it->second.data();
  }
  // `n` mapped blocks at 1 KiB aligned, non-contiguous addresses starting at `base`.
  std::vector<uint64_t> Map(std::size_t n, uint64_t base) {
    std::vector<uint64_t> addrs;
    for (std::size_t i = 0; i < n; ++i) {
      const uint64_t a = base + i * 3 * kBlockAlign;
      blocks_[a].fill(std::byte{0xa5});  // garbage: the encoder must overwrite every byte
      addrs.push_back(a);
    }
    return addrs;
  }
  std::array<std::byte, kBlockBytes>& at(uint64_t addr) { return blocks_.at(addr); }

 private:
  std::map<uint64_t, std::array<std::byte, kBlockBytes>> blocks_;
};

std::vector<std::byte> Pattern(std::size_t len, uint8_t seed) {
  std::vector<std::byte> v(len);
  for (std::size_t i = 0; i < len; ++i) v[i] = std::byte(static_cast<uint8_t>(seed + i * 7 + i / 251));
  return v;
}

uint8_t Xor(std::span<const std::byte> s) {
  uint8_t x = 0;
  for (std::byte b : s) x ^= std::to_integer<uint8_t>(b);
  return x;
}

uint64_t Be64(const std::byte* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = (v << 8) | std::to_integer<uint64_t>(p[i]);
  return v;
}
uint32_t Be32(const std::byte* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v = (v << 8) | std::to_integer<uint32_t>(p[i]);
  return v;
}

// One command in flight: an entry, input and output chains, driver-side prepared.
struct Command {
  FakeBlocks mem;
  std::array<std::byte, kEntryBytes> entry{};
  std::vector<uint64_t> in_addrs, out_addrs;
  std::vector<std::byte> in;
  Options opts;
  static constexpr uint8_t kToken = 0x5c;

  Command(std::size_t in_len, std::size_t out_len, bool signatures = false)
      : in(Pattern(in_len, 3)) {
    opts.signatures = signatures;
    in_addrs = mem.Map(BlocksFor(in_len), 0x10000);
    out_addrs = mem.Map(BlocksFor(out_len), 0x10000 + kBlockAlign);
    EXPECT_TRUE(PrepareOutput(out_len, out_addrs, kToken, mem, entry, opts).has_value());
    EXPECT_TRUE(EncodeInput(in, in_addrs, kToken, mem, entry, opts).has_value());
  }
  Delivery<std::vector<std::byte>> Read() { return ReadInput(entry, mem, opts); }
  std::byte* block(std::size_t k, bool output = false) {
    return mem.at(output ? out_addrs.at(k) : in_addrs.at(k)).data();
  }
  void SetEntry(auto field, uint64_t v) { prm::Bits(entry).set(field, v); }
  void SetBlock(std::size_t k, auto field, uint64_t v, bool output = false) {
    prm::Bits(std::span<std::byte>(block(k, output), kBlockBytes)).set(field, v);
  }
};

constexpr std::size_t kBoundaryLengths[] = {0,   1,   15,   16,   17,   527,  528,  529, 1039,
                                            1040, 1041, 1552, 4111, 4112, 4113, 4624, 5000};

// ---- wire placement (PRM 1.3/1.4, independent of the generated layouts) ----

TEST(MailboxWire, EntryAndBlocksAreWhereThePrmPutsThem) {
  Command c(600, 16);
  const std::byte* e = c.entry.data();
  EXPECT_EQ(std::to_integer<int>(e[0]), 7);                 // type = PCI_CMD_XPORT
  EXPECT_EQ(Be32(e + 4), 600u);                             // input_length
  EXPECT_EQ(Be64(e + 8), c.in_addrs[0]);                    // input mailbox pointer
  EXPECT_EQ(std::memcmp(e + 16, c.in.data(), 16), 0);       // inline input
  EXPECT_EQ(Be64(e + 48), 0u);                              // no output blocks for 16 bytes
  EXPECT_EQ(Be32(e + 56), 16u);                             // output_length
  EXPECT_EQ(std::to_integer<int>(e[60]), Command::kToken);  // token
  EXPECT_EQ(std::to_integer<int>(e[63]), 1);                // status 0, ownership = HW

  const std::byte* b0 = c.block(0);
  const std::byte* b1 = c.block(1);
  EXPECT_EQ(std::memcmp(b0, c.in.data() + 16, 512), 0);
  EXPECT_EQ(std::memcmp(b1, c.in.data() + 528, 600 - 528), 0);
  EXPECT_EQ(std::to_integer<int>(b1[600 - 528]), 0);  // data past the message is zeroed
  EXPECT_EQ(Be64(b0 + 560), c.in_addrs[1]);           // next
  EXPECT_EQ(Be64(b1 + 560), 0u);                      // last block ends the chain
  EXPECT_EQ(Be32(b0 + 568), 0u);                      // block_number
  EXPECT_EQ(Be32(b1 + 568), 1u);
  EXPECT_EQ(std::to_integer<int>(b0[573]), Command::kToken);
  EXPECT_EQ(std::to_integer<int>(b1[573]), Command::kToken);
  EXPECT_EQ(std::to_integer<int>(b1[574]), 0);  // no signatures unless asked
  EXPECT_EQ(std::to_integer<int>(b1[575]), 0);
}

TEST(MailboxWire, SignaturesMakeEachSpanXorToFF) {
  Command c(1100, 600, /*signatures=*/true);
  EXPECT_EQ(Xor(c.entry), 0xff);
  for (std::size_t k = 0; k < c.in_addrs.size(); ++k) {
    std::span<const std::byte> b(c.block(k), kBlockBytes);
    EXPECT_EQ(Xor(b.subspan(512, 63)), 0xff) << "ctrl_signature, block " << k;  // 0x200..0x23E
    EXPECT_EQ(Xor(b), 0xff) << "signature, block " << k;
  }
  std::span<const std::byte> out0(c.block(0, true), kBlockBytes);
  EXPECT_EQ(Xor(out0.subspan(512, 63)), 0xff);
  EXPECT_EQ(Xor(out0), 0xff);
}

// ---- round trips ----

void RoundTrip(std::size_t in_len, std::size_t out_len, bool signatures) {
  SCOPED_TRACE(testing::Message() << "in " << in_len << " out " << out_len << " sig " << signatures);
  Command c(in_len, out_len, signatures);
  auto got = c.Read();
  ASSERT_TRUE(got.has_value()) << static_cast<int>(got.error());
  EXPECT_EQ(*got, c.in);

  const std::vector<std::byte> reply = Pattern(out_len, 11);
  ASSERT_TRUE(WriteOutput(c.entry, c.mem, reply, c.opts).has_value());
  Complete(c.entry, DeliveryStatus::OK, c.opts);
  std::vector<std::byte> out(out_len, std::byte{0xee});
  auto decoded = DecodeOutput(c.entry, c.mem, out, c.opts);
  ASSERT_TRUE(decoded.has_value()) << decoded.error().what();
  EXPECT_EQ(out, reply);
}

TEST(MailboxRoundTrip, EveryLengthUpTo5000) {
  for (std::size_t len = 0; len <= 5000; ++len) {
    RoundTrip(len, 5000 - len, false);
    if (HasFatalFailure()) return;
  }
}

TEST(MailboxRoundTrip, BlockBoundariesWithAndWithoutSignatures) {
  for (bool sig : {false, true})
    for (std::size_t in_len : kBoundaryLengths)
      for (std::size_t out_len : kBoundaryLengths) {
        RoundTrip(in_len, out_len, sig);
        if (HasFatalFailure()) return;
      }
}

TEST(MailboxRoundTrip, ShortReplyIsZeroFilledToOutputLength) {
  Command c(16, 1100);
  const std::vector<std::byte> reply = Pattern(700, 1);
  ASSERT_TRUE(WriteOutput(c.entry, c.mem, reply, c.opts).has_value());
  Complete(c.entry, DeliveryStatus::OK);
  std::vector<std::byte> out(1100, std::byte{0xee});
  ASSERT_TRUE(DecodeOutput(c.entry, c.mem, out).has_value());
  EXPECT_TRUE(std::equal(reply.begin(), reply.end(), out.begin()));
  for (std::size_t i = 700; i < 1100; ++i) ASSERT_EQ(out[i], std::byte{0}) << i;
}

// The handover bit both sides poll: set by EncodeInput, cleared by Complete, in the entry's last
// byte (PRM 1.3: status[7:1] | ownership[0] at byte 0x3f), whatever the status bits hold.
TEST(MailboxRoundTrip, DeviceOwnsFromEncodeUntilComplete) {
  Command c(16, 16);
  EXPECT_TRUE(DeviceOwns(c.entry));
  EXPECT_EQ(std::to_integer<uint8_t>(c.entry[0x3f]) & 1, 1);
  Complete(c.entry, DeliveryStatus::TOK_ERR);
  EXPECT_FALSE(DeviceOwns(c.entry));
  std::array<std::byte, kEntryBytes> raw{};
  raw[0x3f] = std::byte{0xfe};  // every status bit, ownership clear
  EXPECT_FALSE(DeviceOwns(raw));
  raw[0x3f] = std::byte{0x01};
  EXPECT_TRUE(DeviceOwns(raw));
}

TEST(MailboxRoundTrip, MaximumMessage) {
  RoundTrip(kMaxMessageBytes, 16, false);
}

TEST(MailboxRoundTrip, ChainLongerThanTheMessageIsLegal) {
  // The kernel reuses cached chains sized for a larger message; firmware reads only what
  // input_length needs and never follows the last needed block's next pointer.
  Command c(600, 16);
  auto extra = c.mem.Map(1, 0x900000);
  prm::Bits(std::span<std::byte>(c.block(1), kBlockBytes))
      .set(prm::Field<Box::next_pointer_63_32.bit_offset, 64, "next">{}, extra[0]);
  auto got = c.Read();
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(*got, c.in);
}

// ---- device side: each malformation and its delivery status ----

void ExpectRead(Command& c, DeliveryStatus want) {
  auto got = c.Read();
  ASSERT_FALSE(got.has_value());
  EXPECT_EQ(got.error(), want) << prm::DeliveryStatusName(static_cast<uint8_t>(got.error()));
}
void ExpectWrite(Command& c, DeliveryStatus want, std::size_t out_len) {
  const std::vector<std::byte> reply = Pattern(out_len, 9);
  auto got = WriteOutput(c.entry, c.mem, reply, c.opts);
  ASSERT_FALSE(got.has_value());
  EXPECT_EQ(got.error(), want) << prm::DeliveryStatusName(static_cast<uint8_t>(got.error()));
}

TEST(MailboxDevice, WrongTypeIsCmdDescrErr) {
  Command c(100, 100);
  c.SetEntry(E::type, 3);
  ExpectRead(c, DeliveryStatus::CMD_DESCR_ERR);
  ExpectWrite(c, DeliveryStatus::CMD_DESCR_ERR, 100);
}

TEST(MailboxDevice, LengthsPastTheMaximum) {
  Command c(100, 100);
  c.SetEntry(E::input_length, kMaxMessageBytes + 1);
  ExpectRead(c, DeliveryStatus::IN_LENGTH_ERR);
  c.SetEntry(E::input_length, 0xffffffff);
  ExpectRead(c, DeliveryStatus::IN_LENGTH_ERR);
  Command d(100, 100);
  d.SetEntry(E::output_length, 0xffffffff);
  ExpectRead(d, DeliveryStatus::OUT_LENGTH_ERR);
  ExpectWrite(d, DeliveryStatus::OUT_LENGTH_ERR, 100);
}

TEST(MailboxDevice, InputLengthBeyondTheChainIsInLengthErr) {
  Command c(600, 16);  // two blocks; claim a third
  c.SetEntry(E::input_length, 600 + 512);
  ExpectRead(c, DeliveryStatus::IN_LENGTH_ERR);
  Command d(100, 16);  // blocks needed, none given
  d.SetEntry(E::input_mailbox_pointer_63_32, 0);
  d.SetEntry(E::input_mailbox_pointer_31_9, 0);
  ExpectRead(d, DeliveryStatus::IN_LENGTH_ERR);
}

TEST(MailboxDevice, MisalignedInputPointer) {
  Command c(100, 16);
  c.SetEntry(E::input_mailbox_pointer_31_9, (c.in_addrs[0] >> 9) | 1);  // 512, not 1024 aligned
  ExpectRead(c, DeliveryStatus::IN_PTR_ALIGN_ERR);
  Command d(100, 16);
  d.entry[15] = std::byte{0x08};  // a reserved low pointer bit
  ExpectRead(d, DeliveryStatus::IN_PTR_ALIGN_ERR);
  Command n(1100, 16);
  n.SetBlock(0, Box::next_pointer_31_10, (n.in_addrs[1] >> 10) + 1);  // unmapped but aligned
  ExpectRead(n, DeliveryStatus::IN_PTR_ALIGN_ERR);
  Command m(1100, 16);
  m.block(0)[567] = std::byte{0x01};  // next pointer's reserved low bits
  ExpectRead(m, DeliveryStatus::IN_PTR_ALIGN_ERR);
}

TEST(MailboxDevice, UnmappedInputBlock) {
  Command c(100, 16);
  c.SetEntry(E::input_mailbox_pointer_63_32, 0x7);  // aligned, nothing there
  ExpectRead(c, DeliveryStatus::IN_PTR_ALIGN_ERR);
}

TEST(MailboxDevice, TokenMismatchIsTokErr) {
  Command c(1100, 16);
  c.SetBlock(2, Box::token, Command::kToken + 1);
  ExpectRead(c, DeliveryStatus::TOK_ERR);
  Command d(100, 16);
  d.SetEntry(E::token, Command::kToken ^ 0x80);
  ExpectRead(d, DeliveryStatus::TOK_ERR);
}

TEST(MailboxDevice, BlockNumberOutOfSequenceIsBadBlkNumErr) {
  Command c(1100, 16);
  c.SetBlock(1, Box::block_number, 2);
  ExpectRead(c, DeliveryStatus::BAD_BLK_NUM_ERR);
  Command d(1100, 16);
  d.SetBlock(0, Box::block_number, 0xffffffff);
  ExpectRead(d, DeliveryStatus::BAD_BLK_NUM_ERR);
}

TEST(MailboxDevice, LoopIsBadBlkNumErr) {
  // Block 1 points back at block 0: the walk revisits it instead of running forever.
  Command c(2000, 16);
  prm::Bits(std::span<std::byte>(c.block(1), kBlockBytes))
      .set(prm::Field<Box::next_pointer_63_32.bit_offset, 64, "next">{}, c.in_addrs[0]);
  ExpectRead(c, DeliveryStatus::BAD_BLK_NUM_ERR);
  // A block pointing at itself, even with a block number that would pass.
  Command d(2000, 16);
  prm::Bits(std::span<std::byte>(d.block(0), kBlockBytes))
      .set(prm::Field<Box::next_pointer_63_32.bit_offset, 64, "next">{}, d.in_addrs[0]);
  ExpectRead(d, DeliveryStatus::BAD_BLK_NUM_ERR);
}

TEST(MailboxDevice, ReservedEntryBitIsResFldNotClrErr) {
  Command c(100, 16);
  c.entry[1] = std::byte{0x01};  // reserved bits after type
  ExpectRead(c, DeliveryStatus::RES_FLD_NOT_CLR_ERR);
}

TEST(MailboxDevice, SignaturesCheckedOnlyWhenEnabled) {
  Command on(1100, 600, true);
  on.block(1)[17] ^= std::byte{0x40};  // one data bit of the input
  ExpectRead(on, DeliveryStatus::SIGNAT_ERR);
  Command ctrl(1100, 600, true);
  ctrl.block(2)[568 + 3] ^= std::byte{0x01};  // block_number bit: ctrl_signature fails
  ExpectRead(ctrl, DeliveryStatus::SIGNAT_ERR);
  Command entry(100, 16, true);
  entry.entry[20] ^= std::byte{0x01};
  ExpectRead(entry, DeliveryStatus::SIGNAT_ERR);
  Command out(16, 600, true);
  out.block(0, true)[570] ^= std::byte{0x01};
  ExpectWrite(out, DeliveryStatus::SIGNAT_ERR, 600);

  Command off(1100, 600, false);
  off.block(1)[17] ^= std::byte{0x40};
  auto got = off.Read();
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ((*got)[16 + 512 + 17], off.in[16 + 512 + 17] ^ std::byte{0x40});
}

TEST(MailboxDevice, BadOutputChainLeavesEverythingUntouched) {
  Command c(16, 1600);
  c.SetBlock(3, Box::token, 1, /*output=*/true);
  const auto entry_before = c.entry;
  std::vector<std::array<std::byte, kBlockBytes>> before;
  for (uint64_t a : c.out_addrs) before.push_back(c.mem.at(a));
  ExpectWrite(c, DeliveryStatus::TOK_ERR, 1600);
  EXPECT_EQ(c.entry, entry_before);
  for (std::size_t k = 0; k < c.out_addrs.size(); ++k) EXPECT_EQ(c.mem.at(c.out_addrs[k]), before[k]);
}

TEST(MailboxDevice, OutputChainMalformations) {
  Command misaligned(16, 600);
  misaligned.SetEntry(E::output_mailbox_pointer_31_9, (misaligned.out_addrs[0] >> 9) | 1);
  ExpectWrite(misaligned, DeliveryStatus::OUT_PTR_ALIGN_ERR, 600);
  Command unmapped(16, 1100);
  unmapped.SetBlock(0, Box::next_pointer_63_32, 0x55, true);
  ExpectWrite(unmapped, DeliveryStatus::OUT_PTR_ALIGN_ERR, 1100);
  Command numbered(16, 1100);
  numbered.SetBlock(1, Box::block_number, 0, true);
  ExpectWrite(numbered, DeliveryStatus::BAD_BLK_NUM_ERR, 1100);
  Command shortchain(16, 600);
  shortchain.SetEntry(E::output_length, 600 + 512);
  ExpectWrite(shortchain, DeliveryStatus::OUT_LENGTH_ERR, 600);
  Command toolong(16, 600);
  ExpectWrite(toolong, DeliveryStatus::OUT_LENGTH_ERR, 601);  // reply larger than output_length
}

TEST(MailboxDevice, CompleteWritesStatusAndReleasesOwnership) {
  Command c(16, 16);
  Complete(c.entry, DeliveryStatus::BAD_BLK_NUM_ERR);
  EXPECT_EQ(std::to_integer<int>(c.entry[63]), 0x3 << 1);
  Complete(c.entry, DeliveryStatus::CMD_DESCR_ERR);
  EXPECT_EQ(std::to_integer<int>(c.entry[63]), 0x10 << 1);
}

// ---- driver side ----

TEST(MailboxDriver, DeliveryStatusBecomesTheKernelErrno) {
  struct Case {
    DeliveryStatus status;
    int err;
  };
  for (Case k : {Case{DeliveryStatus::TOK_ERR, EBADR}, Case{DeliveryStatus::IN_PTR_ALIGN_ERR, EFAULT},
                 Case{DeliveryStatus::CMD_DESCR_ERR, ENOMSG}, Case{DeliveryStatus::FW_ERR, EIO}}) {
    Command c(16, 16);
    Complete(c.entry, k.status);
    std::vector<std::byte> out(16);
    auto r = DecodeOutput(c.entry, c.mem, out);
    ASSERT_FALSE(r.has_value());
    EXPECT_EQ(r.error().errno_value(), k.err) << r.error().what();
  }
}

TEST(MailboxDriver, StillOwnedByTheDevice) {
  Command c(16, 16);
  std::vector<std::byte> out(16);
  auto r = DecodeOutput(c.entry, c.mem, out);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().errno_value(), EBUSY);
}

TEST(MailboxDriver, MalformedOutputIsEproto) {
  auto decode = [](Command& c, std::size_t len) {
    EXPECT_TRUE(WriteOutput(c.entry, c.mem, Pattern(len, 2), c.opts).has_value());
    Complete(c.entry, DeliveryStatus::OK, c.opts);
  };
  auto expect_eproto = [](Command& c, std::size_t len) {
    std::vector<std::byte> out(len);
    auto r = DecodeOutput(c.entry, c.mem, out, c.opts);
    ASSERT_FALSE(r.has_value());
    EXPECT_EQ(r.error().errno_value(), EPROTO) << r.error().what();
  };
  Command tok(16, 1100);
  decode(tok, 1100);
  tok.SetBlock(1, Box::token, 0, true);
  expect_eproto(tok, 1100);
  Command num(16, 1100);
  decode(num, 1100);
  num.SetBlock(2, Box::block_number, 7, true);
  expect_eproto(num, 1100);
  Command len(16, 1100);
  decode(len, 1100);
  len.SetEntry(E::output_length, 1101);
  expect_eproto(len, 1100);  // the caller's buffer no longer matches
  Command sig(16, 1100, true);
  decode(sig, 1100);
  sig.block(0, true)[3] ^= std::byte{1};
  expect_eproto(sig, 1100);
  Command esig(16, 16, true);
  decode(esig, 16);
  esig.entry[33] ^= std::byte{1};
  expect_eproto(esig, 16);
}

TEST(MailboxDriver, EncodeRefusesBadBlockLists) {
  FakeBlocks mem;
  std::array<std::byte, kEntryBytes> entry{};
  auto addrs = mem.Map(3, 0x4000);
  const std::vector<std::byte> msg = Pattern(1100, 0);  // needs 3 blocks
  ASSERT_TRUE(PrepareOutput(16, {}, 1, mem, entry).has_value());

  auto err = [&](std::span<const uint64_t> list) {
    auto r = EncodeInput(msg, list, 1, mem, entry);
    return r ? 0 : r.error().errno_value();
  };
  EXPECT_EQ(err(std::span(addrs).first(2)), EINVAL);  // too few
  std::vector<uint64_t> misaligned = {addrs[0], addrs[1] + 512, addrs[2]};
  EXPECT_EQ(err(misaligned), EINVAL);
  std::vector<uint64_t> dup = {addrs[0], addrs[1], addrs[0]};
  EXPECT_EQ(err(dup), EINVAL);
  std::vector<uint64_t> zero = {0, addrs[1], addrs[2]};
  EXPECT_EQ(err(zero), EINVAL);
  std::vector<uint64_t> unmapped = {addrs[0], addrs[1], 0x7777400};
  EXPECT_EQ(err(unmapped), EFAULT);
  EXPECT_EQ(std::to_integer<int>(entry[63]), 0);  // never handed to the device

  auto other_token = EncodeInput(msg, addrs, 2, mem, entry);
  ASSERT_FALSE(other_token.has_value());
  EXPECT_EQ(other_token.error().errno_value(), EINVAL);

  std::vector<std::byte> huge(kMaxMessageBytes + 1);
  auto r = EncodeInput(huge, addrs, 1, mem, entry);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().errno_value(), EMSGSIZE);
  EXPECT_TRUE(EncodeInput(msg, addrs, 1, mem, entry).has_value());
}

}  // namespace
}  // namespace onchip::cmdq
