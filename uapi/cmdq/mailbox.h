// The mlx5 command queue wire format: one 64-byte cmdq entry plus chains of mailbox blocks.
//
// A command message (input or output) of `len` bytes is split: the first 16 bytes travel inline
// in the entry (command_input_inline_data / command_output_inline_data), the rest in 512-byte
// data blocks of 576-byte mailboxes (cmd_if_box), chained by next_pointer, numbered 0,1,2... by
// block_number, each stamped with the command's token. Blocks are 1 KiB aligned (next_pointer_31_10).
// Signatures (ctrl_signature, signature, and the entry's signature) are optional.
//
// Both sides use this file: the driver encodes inputs and decodes outputs, the device decodes
// inputs and encodes outputs. The codec never dereferences an address itself: it asks a
// BlockAccess for the 576 bytes at a bus address, so the driver resolves through its DMA pool and
// the device through its IOMMU. A malformed chain (wrong token or block number, a loop, a
// misaligned or unmapped pointer, lengths that overflow) is reported, never followed out of bounds.
#pragma once

#include <cstddef>
#include <cstdint>
#include <expected>
#include <span>
#include <vector>

#include "uapi/cmd_status.h"
#include "uapi/result.h"

namespace onchip::cmdq {

inline constexpr std::size_t kEntryBytes = 64;
inline constexpr std::size_t kInlineBytes = 16;
inline constexpr std::size_t kBlockDataBytes = 512;
inline constexpr std::size_t kBlockBytes = 576;
inline constexpr std::size_t kBlockAlign = 1024;
// The largest message either side accepts: query_hca_cap_out is 4112 bytes; MANAGE_PAGES with
// thousands of pages is the longest real input. 1 MiB bounds any chain walk.
inline constexpr std::size_t kMaxMessageBytes = 1 << 20;

constexpr std::size_t BlocksFor(std::size_t len) {
  return len <= kInlineBytes ? 0 : (len - kInlineBytes + kBlockDataBytes - 1) / kBlockDataBytes;
}

// Resolves a mailbox block's bus address to its 576 bytes, or nullptr if nothing is mapped there.
class BlockAccess {
 public:
  virtual ~BlockAccess() = default;
  virtual std::byte* Block(uint64_t addr) = 0;
};

struct Options {
  bool signatures = false;  // compute (encode) and verify (decode) signatures
};

using Entry = std::span<std::byte, kEntryBytes>;
using ConstEntry = std::span<const std::byte, kEntryBytes>;
template <class T>
using Delivery = std::expected<T, prm::DeliveryStatus>;

// ---- both sides ----

// Whether the device owns the entry (its ownership bit is set): the handover test the driver
// polls for completion and the device checks before it takes a command. An acquire load, so
// what the other side wrote before handing the entry over is visible after it.
bool DeviceOwns(ConstEntry entry);

// ---- driver side ----

// Order: PrepareOutput, then EncodeInput. Each block list holds at least BlocksFor(len)
// addresses, each non-zero, kBlockAlign aligned, distinct and resolvable through `blocks`; the
// first BlocksFor(len) are used, chained in list order (EINVAL, EFAULT if unmapped, EMSGSIZE past
// kMaxMessageBytes).
//
// Writes type, input_length, the input inline data and input chain, clears the output inline
// data, signs when asked, and hands the entry to the device: ownership is the last store
// (release). `token` must be the one PrepareOutput stamped (EINVAL otherwise).
Result<void> EncodeInput(std::span<const std::byte> msg, std::span<const uint64_t> block_addrs,
                         uint8_t token, BlockAccess& blocks, Entry entry, Options opts = {});
// Zeroes the entry, then writes token, output_length, the output chain pointer and zeroed,
// numbered, token-stamped (and signed) output blocks for a `len`-byte output.
Result<void> PrepareOutput(std::size_t len, std::span<const uint64_t> block_addrs, uint8_t token,
                           BlockAccess& blocks, Entry entry, Options opts = {});
// After the device cleared ownership: the entry signature, the delivery status (its kernel
// errno: EBADR for TOK_ERR, EFAULT for IN_PTR_ALIGN_ERR, ...), then the output bytes (`out`
// holds output_length bytes). EBUSY if the device still owns the entry, EPROTO if the entry or
// the chain came back malformed.
Result<void> DecodeOutput(ConstEntry entry, BlockAccess& blocks, std::span<std::byte> out,
                          Options opts = {});

// ---- device side ----
//
// Both calls validate the entry as firmware does, in this order, and report the first failure:
//   type != PCI_CMD_XPORT                         CMD_DESCR_ERR
//   entry signature (when enabled)                SIGNAT_ERR
//   a reserved entry bit set                      RES_FLD_NOT_CLR_ERR
//   input_length / output_length > kMaxMessageBytes   IN_LENGTH_ERR / OUT_LENGTH_ERR
// then walk the chain BlocksFor(length) blocks deep, per block:
//   pointer misaligned or unmapped                IN_PTR_ALIGN_ERR / OUT_PTR_ALIGN_ERR
//   pointer 0 before the message ends             IN_LENGTH_ERR / OUT_LENGTH_ERR
//   block signature (when enabled)                SIGNAT_ERR
//   token != the entry's token                    TOK_ERR
//   block_number out of sequence, or a block revisited (a loop)   BAD_BLK_NUM_ERR
// The walk never follows the last needed block's next_pointer: a chain longer than the message
// is legal (the kernel reuses cached, longer chains). Blocks are copied before they are checked,
// so a driver rewriting them concurrently cannot make the device read out of bounds.

// Reads the whole input message described by the entry.
Delivery<std::vector<std::byte>> ReadInput(ConstEntry entry, BlockAccess& blocks,
                                           Options opts = {});
// Writes `out` (at most output_length bytes, else OUT_LENGTH_ERR: answer BAD_OUTP_LEN_ERR in the
// command status instead; the rest of output_length is zero-filled) into the entry's inline
// area and the driver's output chain. The chain is validated whole before anything is written;
// with signatures the output blocks' control signatures are checked and both block signatures
// rewritten.
Delivery<void> WriteOutput(Entry entry, BlockAccess& blocks, std::span<const std::byte> out,
                           Options opts = {});
// Completes the entry: delivery status into status[7:1], the entry re-signed when signatures are
// on, ownership cleared in the same byte, which is the last store (release).
void Complete(Entry entry, prm::DeliveryStatus status, Options opts = {});

}  // namespace onchip::cmdq
