// Fuzz target for the device-side cmdq decoder (ReadInput / WriteOutput).
//
// The device reads whatever a driver (or a broken one) left in host memory. This target builds
// that memory from the fuzz input: a random cmdq entry and random mailbox blocks, each in its
// own heap allocation so that AddressSanitizer catches a read one byte past any of them, with
// random next pointers. Besides "never crashes, never reads out of bounds" it checks what a
// caller relies on, aborting on a violation:
//   - ReadInput succeeds => the message is input_length bytes, starts with the inline data, and
//     re-encoding it through EncodeInput reads back identical;
//   - WriteOutput fails  => the entry and every block are unchanged;
//   - WriteOutput succeeds => after Complete, the driver's DecodeOutput returns exactly the reply,
//     zero-filled to output_length.
//
// Input layout: see mailbox_fuzz.h.
#include "uapi/cmdq/fuzz/mailbox_fuzz.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "uapi/prm/cmd_layout.h"
#include "uapi/prm/opcodes.h"

namespace onchip::cmdq {
namespace {

constexpr std::size_t kHeaderBytes = 3;
constexpr std::size_t kMaxBlocks = 64;

// Violations of the codec's contract end the run loudly; the fuzzer records them as crashes.
#define FUZZ_REQUIRE(cond)                                                                 \
  do {                                                                                     \
    if (!(cond)) {                                                                         \
      __builtin_printf("mailbox_fuzz: contract violated: %s (%s:%d)\n", #cond, __FILE__, \
                       __LINE__);                                                          \
      std::abort();                                                                        \
    }                                                                                      \
  } while (0)

class FuzzBlocks : public BlockAccess {
 public:
  explicit FuzzBlocks(bool alias) : alias_(alias) {}

  std::byte* Block(uint64_t addr) override {
    if (alias_) addr &= 0xffffffff;
    if (addr % kBlockAlign != 0 || addr == 0) return nullptr;
    const uint64_t index = addr / kBlockAlign - 1;
    return index < blocks_.size() ? blocks_[index].get() : nullptr;
  }
  uint64_t Add(const uint8_t* data, std::size_t n) {
    auto b = std::make_unique<std::byte[]>(kBlockBytes);  // exactly 576: ASan sees any overrun
    std::memcpy(b.get(), data, n);
    blocks_.push_back(std::move(b));
    return blocks_.size() * kBlockAlign;
  }
  std::size_t size() const { return blocks_.size(); }
  std::vector<std::byte> Snapshot() const {
    std::vector<std::byte> all;
    for (const auto& b : blocks_) all.insert(all.end(), b.get(), b.get() + kBlockBytes);
    return all;
  }

 private:
  bool alias_;
  std::vector<std::unique_ptr<std::byte[]>> blocks_;
};

// ReadInput's result must survive a re-encode through the driver side.
void CheckReadBack(const std::vector<std::byte>& msg, uint8_t token, Options opts) {
  FuzzBlocks fresh(false);
  std::vector<uint64_t> addrs;
  static const uint8_t kZero[kBlockBytes] = {};
  for (std::size_t i = 0; i < BlocksFor(msg.size()); ++i) addrs.push_back(fresh.Add(kZero, 0));
  auto entry = std::make_unique<std::byte[]>(kEntryBytes);
  Entry e(entry.get(), kEntryBytes);
  FUZZ_REQUIRE(PrepareOutput(0, {}, token, fresh, e, opts).has_value());
  FUZZ_REQUIRE(EncodeInput(msg, addrs, token, fresh, e, opts).has_value());
  auto again = ReadInput(e, fresh, opts);
  FUZZ_REQUIRE(again.has_value() && *again == msg);
}

}  // namespace

FuzzOutcome FuzzMailbox(const uint8_t* data, std::size_t size) {
  FuzzOutcome outcome;
  if (size < kHeaderBytes + kEntryBytes) return outcome;
  const uint8_t flags = data[0];
  const std::size_t reply_len = (std::size_t{data[1]} << 8) | data[2];
  Options opts;
  opts.signatures = flags & 1;

  auto entry_mem = std::make_unique<std::byte[]>(kEntryBytes);
  std::memcpy(entry_mem.get(), data + kHeaderBytes, kEntryBytes);
  Entry entry(entry_mem.get(), kEntryBytes);
  if (flags & 8) prm::Bits(entry).set(prm::cmd_queue_entry::type, prm::PCI_CMD_XPORT);

  FuzzBlocks blocks(flags & 2);
  for (std::size_t at = kHeaderBytes + kEntryBytes; at < size && blocks.size() < kMaxBlocks;
       at += kBlockBytes)
    blocks.Add(data + at, std::min(kBlockBytes, size - at));

  const std::span<const std::byte> e(entry_mem.get(), kEntryBytes);
  const uint8_t token = prm::Get(e, prm::cmd_queue_entry::token);
  auto in = ReadInput(entry, blocks, opts);
  outcome.read = in ? prm::DeliveryStatus::OK : in.error();
  if (in) {
    const std::size_t len = prm::Get(e, prm::cmd_queue_entry::input_length);
    FUZZ_REQUIRE(in->size() == len && len <= kMaxMessageBytes);
    const std::size_t inline_at = prm::cmd_queue_entry::command_input_inline_data.bit_offset / 8;
    FUZZ_REQUIRE(std::equal(in->begin(), in->begin() + std::min(len, kInlineBytes),
                            entry_mem.get() + inline_at));
    CheckReadBack(*in, token, opts);
  }

  if (flags & 4) {
    std::vector<std::byte> reply(reply_len);
    for (std::size_t i = 0; i < reply_len; ++i) reply[i] = std::byte(static_cast<uint8_t>(i * 13 + 1));
    std::vector<std::byte> entry_before(entry_mem.get(), entry_mem.get() + kEntryBytes);
    const std::vector<std::byte> blocks_before = blocks.Snapshot();
    auto written = WriteOutput(entry, blocks, reply, opts);
    outcome.write = written ? prm::DeliveryStatus::OK : written.error();
    if (!written) {
      FUZZ_REQUIRE(std::memcmp(entry_before.data(), entry_mem.get(), kEntryBytes) == 0);
      FUZZ_REQUIRE(blocks.Snapshot() == blocks_before);
      Complete(entry, written.error(), opts);
    } else {
      Complete(entry, prm::DeliveryStatus::OK, opts);
      const std::size_t out_len = prm::Get(e, prm::cmd_queue_entry::output_length);
      std::vector<std::byte> out(out_len, std::byte{0xee});
      auto decoded = DecodeOutput(entry, blocks, out, opts);
      FUZZ_REQUIRE(decoded.has_value());
      FUZZ_REQUIRE(std::equal(reply.begin(), reply.end(), out.begin()));
      for (std::size_t i = reply.size(); i < out_len; ++i) FUZZ_REQUIRE(out[i] == std::byte{0});
    }
  }
  return outcome;
}

}  // namespace onchip::cmdq

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  onchip::cmdq::FuzzMailbox(data, size);
  return 0;
}
