// A small test-side command writer for the software ConnectX, built on uapi/ only (cmdq codec
// and PRM layouts), never on the driver: it plays the driver's part of the command interface.
//
// It maps BAR0 from the device's fd, owns one DMA arena mapped through MapDma (the cmdq page,
// a pool of 1 KiB-aligned mailbox blocks, and pages to give with MANAGE_PAGES), programs
// cmdq_phy_addr, and runs a command by preparing the output chain, encoding the input, storing
// the doorbell bit, kicking the device and polling ownership.
#pragma once

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include "tools/sim/device.h"
#include "uapi/cmd_status.h"
#include "uapi/cmdq/mailbox.h"
#include "uapi/prm/field.h"
#include "uapi/result.h"

namespace onchip::sim::testing {

struct Reply {
  prm::DeliveryStatus delivery = prm::DeliveryStatus::OK;
  uint8_t status = 0;
  uint32_t syndrome = 0;
  std::vector<std::byte> out;  // output_length bytes (valid if delivery is OK)

  template <class F>
  uint64_t get(F f) const {
    return prm::Get(std::span<const std::byte>(out), f);
  }
  bool ok() const { return delivery == prm::DeliveryStatus::OK && status == 0; }
};

class CommandWriter {
 public:
  static constexpr uint64_t kArenaIova = uint64_t{1} << 32;
  static constexpr std::size_t kArenaBytes = 8 << 20;
  static constexpr std::size_t kBlockPoolOffset = 64 << 10;     // after the cmdq page
  static constexpr std::size_t kBlockPoolBytes = 3 << 20;       // 3072 blocks of 1 KiB
  static constexpr std::size_t kPagePoolOffset = 4 << 20;       // pages for MANAGE_PAGES

  explicit CommandWriter(Device& device);
  // How a test places the arena itself: `arena` (kArenaBytes, 4 KiB aligned, zeroed) is the
  // caller's and outlives the writer; `map` maps it into the device's IOMMU at kArenaIova (as
  // process memory, in pieces) and returns the (iova, length) pieces, which the destructor unmaps.
  using Piece = std::pair<uint64_t, uint64_t>;
  using ArenaMapper = std::function<std::vector<Piece>(Device&, std::byte* arena)>;
  CommandWriter(Device& device, std::byte* arena, const ArenaMapper& map);
  ~CommandWriter();
  CommandWriter(const CommandWriter&) = delete;
  CommandWriter& operator=(const CommandWriter&) = delete;

  // Runs one command in `slot` and waits for it (ETIMEDOUT after `timeout`).
  Result<Reply> Run(std::span<const std::byte> in, std::size_t out_len, uint32_t slot = 0,
                    std::chrono::milliseconds timeout = std::chrono::milliseconds{5000});

  // Split steps, for tests that corrupt entries or run several slots at once. Build encodes the
  // entry for `slot` into a private copy (its mailboxes into the slot's blocks) without handing
  // it over; Publish copies it into the cmdq with the ownership byte stored last; Post does both.
  using EntryBytes = std::array<std::byte, cmdq::kEntryBytes>;
  Result<EntryBytes> Build(std::span<const std::byte> in, std::size_t out_len, uint32_t slot);
  void Publish(uint32_t slot, const EntryBytes& e);
  Result<void> Post(std::span<const std::byte> in, std::size_t out_len, uint32_t slot);
  // The i-th input / output mailbox block of `slot` (as Build lays them out for `in_len`).
  uint64_t in_block(uint32_t slot, std::size_t i) const { return block_iova(slot * kBlocksPerSlot + i); }
  uint64_t out_block(uint32_t slot, std::size_t in_len, std::size_t i) const {
    return block_iova(slot * kBlocksPerSlot + cmdq::BlocksFor(in_len) + i);
  }
  static constexpr std::size_t kBlocksPerSlot = 96;
  void Ring(uint32_t slot_mask);
  Result<Reply> Wait(uint32_t slot, std::chrono::milliseconds timeout);
  bool Owned(uint32_t slot) const;

  // Brings the HCA to kInitialized the way mlx5_core does: ENABLE_HCA, QUERY_ISSI, SET_ISSI 1,
  // QUERY_PAGES boot + MANAGE_PAGES, ACCESS_REG host endianness, QUERY_PAGES init +
  // MANAGE_PAGES, INIT_HCA.
  Result<void> BringUp();
  // Gives `n` fresh pages; returns the reply of MANAGE_PAGES.
  Result<Reply> GivePages(uint32_t n);

  std::span<std::byte> entry(uint32_t slot);
  std::byte* arena() { return arena_; }
  uint64_t block_iova(std::size_t i) const { return kArenaIova + kBlockPoolOffset + i * 1024; }
  std::byte* host(uint64_t iova) { return arena_ + (iova - kArenaIova); }
  std::byte* bar() { return bar_; }
  Device& device() { return device_; }
  uint8_t next_token() { return token_; }

 private:
  class Access;
  Device& device_;
  std::byte* bar_ = nullptr;
  std::size_t bar_size_ = 0;
  std::byte* arena_ = nullptr;
  bool owns_arena_ = true;
  std::vector<Piece> pieces_;
  std::unique_ptr<Access> access_;
  uint8_t token_ = 1;
  std::size_t next_page_ = 0;
  std::vector<std::size_t> out_lens_ = std::vector<std::size_t>(32);
};

}  // namespace onchip::sim::testing
