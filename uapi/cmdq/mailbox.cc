#include "uapi/cmdq/mailbox.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <unordered_set>

#include "uapi/prm/cmd_layout.h"
#include "uapi/prm/opcodes.h"

namespace onchip::cmdq {
namespace {

using E = prm::cmd_queue_entry;
using Box = prm::cmd_if_box;
using prm::DeliveryStatus;

static_assert(prm::size_bytes<E> == kEntryBytes);
static_assert(prm::size_bytes<Box> == kBlockBytes);
static_assert(Box::mailbox_data.count * Box::mailbox_data.element_width / 8 == kBlockDataBytes);
static_assert(E::command_input_inline_data.count == kInlineBytes);
static_assert(E::command_output_inline_data.count == kInlineBytes);

// The PRM splits each mailbox pointer into a high dword and the aligned part of the low dword
// (input_mailbox_pointer_63_32 / _31_9, next_pointer_63_32 / _31_10); the bits below are
// reserved. On the wire it is one big-endian qword (the kernel writes lay->in_ptr as be64), so
// it is read whole here and a set low bit is a misaligned pointer.
template <class Hi, class Lo, prm::Name N>
using WholePointer = prm::Field<Hi::bit_offset, 64, N>;
template <class Hi, class Lo>
constexpr bool kPointerPair = Hi::bit_width == 32 && Lo::bit_offset == Hi::bit_offset + 32 &&
                              Lo::bit_offset % 32 == 0;
static_assert(kPointerPair<decltype(E::input_mailbox_pointer_63_32),
                           decltype(E::input_mailbox_pointer_31_9)>);
static_assert(kPointerPair<decltype(E::output_mailbox_pointer_63_32),
                           decltype(E::output_mailbox_pointer_31_9)>);
static_assert(kPointerPair<decltype(Box::next_pointer_63_32), decltype(Box::next_pointer_31_10)>);
// Every block pointer is kBlockAlign aligned: the next pointer cannot express anything finer.
static_assert((uint64_t{1} << (32 - Box::next_pointer_31_10.bit_width)) == kBlockAlign);

constexpr WholePointer<decltype(E::input_mailbox_pointer_63_32),
                       decltype(E::input_mailbox_pointer_31_9), "cmd_queue_entry.input_mailbox_pointer">
    kInputPointer{};
constexpr WholePointer<decltype(E::output_mailbox_pointer_63_32),
                       decltype(E::output_mailbox_pointer_31_9), "cmd_queue_entry.output_mailbox_pointer">
    kOutputPointer{};
constexpr WholePointer<decltype(Box::next_pointer_63_32), decltype(Box::next_pointer_31_10),
                       "cmd_if_box.next_pointer">
    kNextPointer{};

constexpr std::size_t kInputInline = E::command_input_inline_data.bit_offset / 8;
constexpr std::size_t kOutputInline = E::command_output_inline_data.bit_offset / 8;
constexpr std::size_t kEntrySignature = E::signature.bit_offset / 8;
constexpr std::size_t kStatusOwn = E::ownership.bit_offset / 8;
static_assert(E::status.bit_offset / 8 == kStatusOwn, "status and ownership share one byte");
constexpr unsigned kOwnershipShift = 7 - E::ownership.bit_offset % 8;
constexpr unsigned kStatusShift = 8 - E::status.bit_offset % 8 - E::status.bit_width;

constexpr std::size_t kBoxData = Box::mailbox_data.bit_offset / 8;
// The control part of a block: everything after the data up to (not including) ctrl_signature.
constexpr std::size_t kBoxControl = kBoxData + kBlockDataBytes;
constexpr std::size_t kBoxCtrlSignature = Box::ctrl_signature.bit_offset / 8;
constexpr std::size_t kBoxSignature = Box::signature.bit_offset / 8;
static_assert(kBoxSignature == kBlockBytes - 1 && kBoxCtrlSignature == kBoxSignature - 1);
static_assert(kEntrySignature < kEntryBytes && kStatusOwn == kEntryBytes - 1);

// memcpy for copies that may be empty: an empty span's data() may be null, which memcpy forbids
// even for zero bytes.
void CopyBytes(std::byte* dst, const std::byte* src, std::size_t n) {
  if (n != 0) std::memcpy(dst, src, n);
}

uint8_t Xor8(std::span<const std::byte> bytes) {
  uint8_t x = 0;
  for (std::byte b : bytes) x ^= std::to_integer<uint8_t>(b);
  return x;
}

// Signatures as mlx5 defines them: each signature byte makes the XOR over its span 0xff.
bool EntrySignatureOk(std::span<const std::byte, kEntryBytes> e) { return Xor8(e) == 0xff; }
bool BlockControlSignatureOk(std::span<const std::byte, kBlockBytes> b) {
  return Xor8(b.subspan(kBoxControl, kBoxCtrlSignature + 1 - kBoxControl)) == 0xff;
}
bool BlockSignatureOk(std::span<const std::byte, kBlockBytes> b) {
  return BlockControlSignatureOk(b) && Xor8(b) == 0xff;
}
void SignBlock(std::span<std::byte, kBlockBytes> b) {
  b[kBoxCtrlSignature] = std::byte{0};
  b[kBoxSignature] = std::byte{0};
  b[kBoxCtrlSignature] =
      ~std::byte{Xor8(b.subspan(kBoxControl, kBoxCtrlSignature - kBoxControl))};
  b[kBoxSignature] = ~std::byte{Xor8(b.first(kBoxSignature))};
}
// Signs the entry as it will read once status_own holds `status_own`.
void SignEntry(Entry e, std::byte status_own) {
  std::array<std::byte, kEntryBytes> copy;
  std::memcpy(copy.data(), e.data(), kEntryBytes);
  copy[kStatusOwn] = status_own;
  copy[kEntrySignature] = std::byte{0};
  e[kEntrySignature] = ~std::byte{Xor8(copy)};
}

// The status_own byte is the handover point: the last store of the side giving the entry away,
// the first load of the side taking it.
void PublishStatusOwn(Entry e, std::byte v) {
  std::atomic_ref<std::byte>(e[kStatusOwn]).store(v, std::memory_order_release);
}
std::byte LoadStatusOwn(ConstEntry e) {
  // atomic_ref needs a mutable object; the load does not write.
  return std::atomic_ref<std::byte>(const_cast<std::byte&>(e[kStatusOwn]))
      .load(std::memory_order_acquire);
}

// Reserved entry bits, other than the ones below a mailbox pointer (those are alignment).
bool EntryReservedClear(std::span<const std::byte, kEntryBytes> e) {
  for (const prm::ReservedBits& r : E::reserved_ranges) {
    const bool pointer_low_bits = r.bit_offset / 32 == E::input_mailbox_pointer_31_9.bit_offset / 32 ||
                                  r.bit_offset / 32 == E::output_mailbox_pointer_31_9.bit_offset / 32;
    if (pointer_low_bits) continue;
    if (prm::detail::GetBits(e.data(), r.bit_offset, r.bit_width) != 0) return false;
  }
  return true;
}

// Which statuses a chain reports: the input chain's or the output chain's.
struct Side {
  DeliveryStatus pointer_error;  // misaligned or unmapped block pointer
  DeliveryStatus length_error;   // chain ends before the message does
};
constexpr Side kInputSide{DeliveryStatus::IN_PTR_ALIGN_ERR, DeliveryStatus::IN_LENGTH_ERR};
constexpr Side kOutputSide{DeliveryStatus::OUT_PTR_ALIGN_ERR, DeliveryStatus::OUT_LENGTH_ERR};

enum class SignatureCheck {
  kNone,
  kControl,  // output blocks before the device fills them: only the control part is signed data
  kFull,
};

// Walks the first `count` blocks of a chain, validating each from a private snapshot (so a
// block changing under us cannot pass one check and fail another). The walk stops at `count`:
// what the last needed block points to is never followed (the kernel's cached messages are
// longer than the command, so a longer chain is legal). A block revisited within the walk is a
// loop.
class ChainWalk {
 public:
  ChainWalk(BlockAccess& blocks, uint64_t first, std::size_t count, uint8_t token, Side side,
            SignatureCheck sig)
      : blocks_(blocks), next_(first), count_(count), token_(token), side_(side), sig_(sig) {}

  // The next block's live bytes; its validated contents are in `snapshot`.
  Delivery<std::byte*> Next(std::span<std::byte, kBlockBytes> snapshot) {
    const uint64_t addr = next_;
    if (addr == 0) return std::unexpected(side_.length_error);
    if (addr % kBlockAlign != 0) return std::unexpected(side_.pointer_error);
    std::byte* live = blocks_.Block(addr);
    if (live == nullptr) return std::unexpected(side_.pointer_error);
    if (!visited_.insert(addr).second) return std::unexpected(DeliveryStatus::BAD_BLK_NUM_ERR);
    std::memcpy(snapshot.data(), live, kBlockBytes);
    const std::span<const std::byte> b(snapshot);
    if (sig_ == SignatureCheck::kFull && !BlockSignatureOk(snapshot))
      return std::unexpected(DeliveryStatus::SIGNAT_ERR);
    if (sig_ == SignatureCheck::kControl && !BlockControlSignatureOk(snapshot))
      return std::unexpected(DeliveryStatus::SIGNAT_ERR);
    if (prm::Get(b, Box::token) != token_) return std::unexpected(DeliveryStatus::TOK_ERR);
    if (prm::Get(b, Box::block_number) != index_)
      return std::unexpected(DeliveryStatus::BAD_BLK_NUM_ERR);
    ++index_;
    next_ = index_ < count_ ? prm::Get(b, kNextPointer) : 0;
    return live;
  }

 private:
  BlockAccess& blocks_;
  uint64_t next_;
  std::size_t count_;
  std::size_t index_ = 0;
  uint8_t token_;
  Side side_;
  SignatureCheck sig_;
  std::unordered_set<uint64_t> visited_;
};

// The checks every entry passes before either chain is touched.
Delivery<void> CheckEntry(std::span<const std::byte, kEntryBytes> e, const Options& opts) {
  if (prm::Get(e, E::type) != prm::PCI_CMD_XPORT)
    return std::unexpected(DeliveryStatus::CMD_DESCR_ERR);
  if (opts.signatures && !EntrySignatureOk(e)) return std::unexpected(DeliveryStatus::SIGNAT_ERR);
  if (!EntryReservedClear(e)) return std::unexpected(DeliveryStatus::RES_FLD_NOT_CLR_ERR);
  if (prm::Get(e, E::input_length) > kMaxMessageBytes)
    return std::unexpected(DeliveryStatus::IN_LENGTH_ERR);
  if (prm::Get(e, E::output_length) > kMaxMessageBytes)
    return std::unexpected(DeliveryStatus::OUT_LENGTH_ERR);
  return {};
}

// What a malformed output chain means to the driver: static strings for onchip::Error.
const char* OutputChainError(DeliveryStatus s) {
  switch (s) {
    case DeliveryStatus::SIGNAT_ERR: return "cmdq output: bad signature";
    case DeliveryStatus::TOK_ERR: return "cmdq output: block token mismatch";
    case DeliveryStatus::BAD_BLK_NUM_ERR: return "cmdq output: bad block number or loop";
    case DeliveryStatus::OUT_PTR_ALIGN_ERR: return "cmdq output: misaligned or unmapped block";
    case DeliveryStatus::OUT_LENGTH_ERR: return "cmdq output: chain shorter than output_length";
    default: return "cmdq output: malformed";
  }
}

// Driver side: checks a caller's block list and writes a numbered, token-stamped chain whose
// data comes from `data` (zero past its end). Returns the first block's address (0 if none).
Result<uint64_t> BuildChain(std::size_t len, std::span<const std::byte> data,
                            std::span<const uint64_t> block_addrs, uint8_t token,
                            BlockAccess& blocks, const Options& opts) {
  if (len > kMaxMessageBytes) return Fail(EMSGSIZE, "cmdq: message longer than kMaxMessageBytes");
  const std::size_t n = BlocksFor(len);
  if (block_addrs.size() < n) return Fail(EINVAL, "cmdq: fewer mailbox blocks than the message needs");
  std::vector<std::byte*> live(n);
  for (std::size_t k = 0; k < n; ++k) {
    const uint64_t addr = block_addrs[k];
    if (addr == 0 || addr % kBlockAlign != 0)
      return Fail(EINVAL, "cmdq: mailbox block address zero or not 1 KiB aligned");
    if (std::find(block_addrs.begin(), block_addrs.begin() + k, addr) != block_addrs.begin() + k)
      return Fail(EINVAL, "cmdq: mailbox block listed twice");
    live[k] = blocks.Block(addr);
    if (live[k] == nullptr) return Fail(EFAULT, "cmdq: mailbox block not mapped");
  }
  for (std::size_t k = 0; k < n; ++k) {
    std::span<std::byte, kBlockBytes> b(live[k], kBlockBytes);
    std::memset(b.data(), 0, kBlockBytes);
    const std::size_t from = kInlineBytes + k * kBlockDataBytes;
    if (from < data.size()) {
      const std::size_t c = std::min(kBlockDataBytes, data.size() - from);
      std::memcpy(b.data() + kBoxData, data.data() + from, c);
    }
    prm::Bits bits(b);
    bits.set(kNextPointer, k + 1 < n ? block_addrs[k + 1] : 0)
        .set(Box::block_number, k)
        .set(Box::token, token);
    if (opts.signatures) SignBlock(b);
  }
  return n == 0 ? 0 : block_addrs[0];
}

}  // namespace

bool DeviceOwns(ConstEntry entry) {
  return ((std::to_integer<unsigned>(LoadStatusOwn(entry)) >> kOwnershipShift) & 1) != 0;
}

// ---- driver side ----

Result<void> PrepareOutput(std::size_t len, std::span<const uint64_t> block_addrs, uint8_t token,
                           BlockAccess& blocks, Entry entry, Options opts) {
  ONCHIP_TRY(const uint64_t first, BuildChain(len, {}, block_addrs, token, blocks, opts));
  std::memset(entry.data(), 0, kEntryBytes);
  prm::Bits(entry)
      .set(E::output_length, len)
      .set(kOutputPointer, first)
      .set(E::token, token);
  return {};
}

Result<void> EncodeInput(std::span<const std::byte> msg, std::span<const uint64_t> block_addrs,
                         uint8_t token, BlockAccess& blocks, Entry entry, Options opts) {
  if (prm::Get(std::span<const std::byte>(entry), E::token) != token)
    return Fail(EINVAL, "cmdq: input token differs from the one PrepareOutput stamped");
  ONCHIP_TRY(const uint64_t first, BuildChain(msg.size(), msg, block_addrs, token, blocks, opts));
  std::memset(entry.data() + kInputInline, 0, kInlineBytes);
  CopyBytes(entry.data() + kInputInline, msg.data(), std::min(msg.size(), kInlineBytes));
  std::memset(entry.data() + kOutputInline, 0, kInlineBytes);
  prm::Bits(entry)
      .set(E::type, prm::PCI_CMD_XPORT)
      .set(E::input_length, msg.size())
      .set(kInputPointer, first)
      .set(E::signature, 0);
  const std::byte status_own{static_cast<uint8_t>(1u << kOwnershipShift)};
  if (opts.signatures) SignEntry(entry, status_own);
  PublishStatusOwn(entry, status_own);
  return {};
}

Result<void> DecodeOutput(ConstEntry entry, BlockAccess& blocks, std::span<std::byte> out,
                          Options opts) {
  const std::byte status_own = LoadStatusOwn(entry);
  if ((std::to_integer<unsigned>(status_own) >> kOwnershipShift) & 1)
    return Fail(EBUSY, "cmdq: entry still owned by the device");
  std::array<std::byte, kEntryBytes> e;
  std::memcpy(e.data(), entry.data(), kEntryBytes);
  e[kStatusOwn] = status_own;
  if (opts.signatures && !EntrySignatureOk(e)) return Fail(EPROTO, "cmdq output: bad entry signature");
  const uint8_t delivery = prm::Get(std::span<const std::byte>(e), E::status);
  if (delivery != 0)
    return Fail(prm::DeliveryStatusErrno(delivery), prm::DeliveryStatusName(delivery));
  const std::size_t len = prm::Get(std::span<const std::byte>(e), E::output_length);
  if (len != out.size()) return Fail(EPROTO, "cmdq output: output_length changed");
  CopyBytes(out.data(), e.data() + kOutputInline, std::min(len, kInlineBytes));
  ChainWalk walk(blocks, prm::Get(std::span<const std::byte>(e), kOutputPointer), BlocksFor(len),
                 prm::Get(std::span<const std::byte>(e), E::token), kOutputSide,
                 opts.signatures ? SignatureCheck::kFull : SignatureCheck::kNone);
  std::array<std::byte, kBlockBytes> snap;
  for (std::size_t k = 0, at = kInlineBytes; k < BlocksFor(len); ++k, at += kBlockDataBytes) {
    auto block = walk.Next(snap);
    if (!block) return Fail(EPROTO, OutputChainError(block.error()));
    std::memcpy(out.data() + at, snap.data() + kBoxData, std::min(kBlockDataBytes, len - at));
  }
  return {};
}

// ---- device side ----

Delivery<std::vector<std::byte>> ReadInput(ConstEntry entry, BlockAccess& blocks, Options opts) {
  std::array<std::byte, kEntryBytes> e;
  std::memcpy(e.data(), entry.data(), kEntryBytes);
  const std::span<const std::byte, kEntryBytes> ce(e);
  if (auto ok = CheckEntry(ce, opts); !ok) return std::unexpected(ok.error());
  const std::size_t len = prm::Get(ce, E::input_length);
  std::vector<std::byte> msg(len);
  CopyBytes(msg.data(), e.data() + kInputInline, std::min(len, kInlineBytes));
  ChainWalk walk(blocks, prm::Get(ce, kInputPointer), BlocksFor(len), prm::Get(ce, E::token),
                 kInputSide, opts.signatures ? SignatureCheck::kFull : SignatureCheck::kNone);
  std::array<std::byte, kBlockBytes> snap;
  for (std::size_t k = 0, at = kInlineBytes; k < BlocksFor(len); ++k, at += kBlockDataBytes) {
    auto block = walk.Next(snap);
    if (!block) return std::unexpected(block.error());
    std::memcpy(msg.data() + at, snap.data() + kBoxData, std::min(kBlockDataBytes, len - at));
  }
  return msg;
}

Delivery<void> WriteOutput(Entry entry, BlockAccess& blocks, std::span<const std::byte> out,
                           Options opts) {
  std::array<std::byte, kEntryBytes> e;
  std::memcpy(e.data(), entry.data(), kEntryBytes);
  const std::span<const std::byte, kEntryBytes> ce(e);
  if (auto ok = CheckEntry(ce, opts); !ok) return std::unexpected(ok.error());
  const std::size_t len = prm::Get(ce, E::output_length);
  if (out.size() > len) return std::unexpected(DeliveryStatus::OUT_LENGTH_ERR);
  // Validate the whole chain before writing anything: a bad chain leaves the output untouched.
  const std::size_t n = BlocksFor(len);
  ChainWalk walk(blocks, prm::Get(ce, kOutputPointer), n, prm::Get(ce, E::token), kOutputSide,
                 opts.signatures ? SignatureCheck::kControl : SignatureCheck::kNone);
  std::vector<std::byte*> live(n);
  std::array<std::byte, kBlockBytes> snap;
  for (std::size_t k = 0; k < n; ++k) {
    auto block = walk.Next(snap);
    if (!block) return std::unexpected(block.error());
    live[k] = *block;
  }
  std::memset(entry.data() + kOutputInline, 0, kInlineBytes);
  CopyBytes(entry.data() + kOutputInline, out.data(), std::min(out.size(), kInlineBytes));
  for (std::size_t k = 0, at = kInlineBytes; k < n; ++k, at += kBlockDataBytes) {
    std::byte* data = live[k] + kBoxData;
    std::memset(data, 0, kBlockDataBytes);
    if (at < out.size()) std::memcpy(data, out.data() + at, std::min(kBlockDataBytes, out.size() - at));
    if (opts.signatures) SignBlock(std::span<std::byte, kBlockBytes>(live[k], kBlockBytes));
  }
  return {};
}

void Complete(Entry entry, prm::DeliveryStatus status, Options opts) {
  const std::byte status_own{static_cast<uint8_t>(static_cast<unsigned>(status) << kStatusShift)};
  if (opts.signatures) SignEntry(entry, status_own);
  PublishStatusOwn(entry, status_own);
}

}  // namespace onchip::cmdq
