#include "tests/device/sim/cmd_writer.h"

#include <sys/mman.h>

#include <atomic>
#include <bit>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "uapi/prm/caps.h"
#include "uapi/prm/cmd_layout.h"
#include "uapi/prm/hca.h"
#include "uapi/prm/init_seg.h"
#include "uapi/prm/opcodes.h"

namespace onchip::sim::testing {

class CommandWriter::Access final : public cmdq::BlockAccess {
 public:
  explicit Access(std::byte* arena) : arena_(arena) {}
  std::byte* Block(uint64_t addr) override {
    if (addr < kArenaIova || addr - kArenaIova + cmdq::kBlockBytes > kArenaBytes) return nullptr;
    return arena_ + (addr - kArenaIova);
  }

 private:
  std::byte* arena_;
};

namespace {
void StoreBe32(std::byte* p, uint32_t v) {
  std::atomic_ref<uint32_t>(*reinterpret_cast<uint32_t*>(p))
      .store(std::byteswap(v), std::memory_order_release);
}
}  // namespace

CommandWriter::CommandWriter(Device& device)
    : CommandWriter(device, nullptr, [](Device& d, std::byte* arena) {
        if (!d.MapDma({kArenaIova, kArenaBytes, arena, -1, 0})) std::abort();
        return std::vector<Piece>{{kArenaIova, kArenaBytes}};
      }) {}

CommandWriter::CommandWriter(Device& device, std::byte* arena, const ArenaMapper& map)
    : device_(device) {
  const auto bar = device.bar0();
  bar_size_ = bar.size;
  void* p = mmap(nullptr, bar.size, PROT_READ | PROT_WRITE, MAP_SHARED, bar.fd, 0);
  if (p == MAP_FAILED) std::abort();
  bar_ = static_cast<std::byte*>(p);
  owns_arena_ = arena == nullptr;
  if (owns_arena_) {
    arena = static_cast<std::byte*>(std::aligned_alloc(4096, kArenaBytes));
    std::memset(arena, 0, kArenaBytes);
  }
  arena_ = arena;
  access_ = std::make_unique<Access>(arena_);
  pieces_ = map(device, arena_);
  // cmdq_phy_addr: high dword, then the low dword (the kernel's order).
  StoreBe32(bar_ + prm::initial_seg::cmdq_phy_addr_63_32.bit_offset / 8,
            static_cast<uint32_t>(kArenaIova >> 32));
  StoreBe32(bar_ + prm::initial_seg::cmdq_phy_addr_31_12.bit_offset / 8,
            static_cast<uint32_t>(kArenaIova));
}

CommandWriter::~CommandWriter() {
  for (const auto& [iova, length] : pieces_) (void)device_.UnmapDma(iova, length);
  if (owns_arena_) std::free(arena_);
  munmap(bar_, bar_size_);
}

std::span<std::byte> CommandWriter::entry(uint32_t slot) {
  return {arena_ + slot * cmdq::kEntryBytes, cmdq::kEntryBytes};
}

bool CommandWriter::Owned(uint32_t slot) const {
  const auto b = std::atomic_ref<uint8_t>(
                     *reinterpret_cast<uint8_t*>(arena_ + slot * cmdq::kEntryBytes + 63))
                     .load(std::memory_order_acquire);
  return b & 1;
}

Result<CommandWriter::EntryBytes> CommandWriter::Build(std::span<const std::byte> in,
                                                      std::size_t out_len, uint32_t slot) {
  // Each slot uses its own kBlocksPerSlot blocks of the pool: inputs first, outputs after.
  const std::size_t in_blocks = cmdq::BlocksFor(in.size());
  const std::size_t out_blocks = cmdq::BlocksFor(out_len);
  if (in_blocks + out_blocks > kBlocksPerSlot) return Fail(EMSGSIZE, "cmd writer: message too big");
  std::vector<uint64_t> in_addrs, out_addrs;
  for (std::size_t i = 0; i < in_blocks; ++i) in_addrs.push_back(in_block(slot, i));
  for (std::size_t i = 0; i < out_blocks; ++i) out_addrs.push_back(out_block(slot, in.size(), i));
  const uint8_t token = token_;
  token_ = static_cast<uint8_t>(token_ == 0xff ? 1 : token_ + 1);
  EntryBytes bytes{};
  cmdq::Entry e(bytes.data(), cmdq::kEntryBytes);
  ONCHIP_CHECK(cmdq::PrepareOutput(out_len, out_addrs, token, *access_, e));
  ONCHIP_CHECK(cmdq::EncodeInput(in, in_addrs, token, *access_, e));
  out_lens_[slot] = out_len;
  return bytes;
}

void CommandWriter::Publish(uint32_t slot, const EntryBytes& e) {
  std::byte* dst = entry(slot).data();
  std::memcpy(dst, e.data(), cmdq::kEntryBytes - 1);
  std::atomic_ref<uint8_t>(*reinterpret_cast<uint8_t*>(dst + cmdq::kEntryBytes - 1))
      .store(std::to_integer<uint8_t>(e[cmdq::kEntryBytes - 1]), std::memory_order_release);
}

Result<void> CommandWriter::Post(std::span<const std::byte> in, std::size_t out_len,
                                 uint32_t slot) {
  ONCHIP_TRY(EntryBytes e, Build(in, out_len, slot));
  Publish(slot, e);
  return {};
}

void CommandWriter::Ring(uint32_t slot_mask) {
  StoreBe32(bar_ + prm::initial_seg::command_doorbell_vector.bit_offset / 8, slot_mask);
  device_.Kick();
}

Result<Reply> CommandWriter::Wait(uint32_t slot, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (Owned(slot)) {
    if (std::chrono::steady_clock::now() > deadline) return Fail(ETIMEDOUT, "cmd writer: timeout");
    std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
  Reply r;
  auto e = entry(slot);
  r.delivery = static_cast<prm::DeliveryStatus>(
      prm::Get(std::span<const std::byte>(e), prm::cmd_queue_entry::status));
  if (r.delivery != prm::DeliveryStatus::OK) return r;
  r.out.resize(out_lens_[slot]);
  ONCHIP_CHECK(cmdq::DecodeOutput(cmdq::ConstEntry(e.data(), cmdq::kEntryBytes), *access_, r.out));
  if (r.out.size() >= 1) r.status = std::to_integer<uint8_t>(r.out[0]);
  if (r.out.size() >= 8) r.syndrome = static_cast<uint32_t>(prm::Get(std::span<const std::byte>(r.out), prm::mbox_out::syndrome));
  return r;
}

Result<Reply> CommandWriter::Run(std::span<const std::byte> in, std::size_t out_len,
                                 uint32_t slot, std::chrono::milliseconds timeout) {
  ONCHIP_CHECK(Post(in, out_len, slot));
  Ring(1u << slot);
  return Wait(slot, timeout);
}

Result<Reply> CommandWriter::GivePages(uint32_t n) {
  auto in = prm::CommandIn<prm::manage_pages_in>(prm::MANAGE_PAGES, prm::PAGES_GIVE, 8 * n);
  in.set(prm::manage_pages_in::input_num_entries, n);
  for (uint32_t i = 0; i < n; ++i) {
    if (kPagePoolOffset + (next_page_ + 1) * 4096 > kArenaBytes)
      return Fail(ENOMEM, "cmd writer: page pool exhausted");
    in.set(prm::manage_pages_in::pas[i], kArenaIova + kPagePoolOffset + next_page_++ * 4096);
  }
  return Run(in.bytes(), 16);
}

Result<void> CommandWriter::BringUp() {
  auto check = [](const Result<Reply>& r, const char* what) -> Result<void> {
    if (!r) return std::unexpected(r.error());
    if (!r->ok()) return Fail(EIO, what);
    return {};
  };
  ONCHIP_CHECK(
      check(Run(prm::CommandIn<prm::enable_hca_in>(prm::ENABLE_HCA).bytes(), 16), "enable_hca"));
  ONCHIP_CHECK(
      check(Run(prm::CommandIn<prm::query_issi_in>(prm::QUERY_ISSI).bytes(), 112), "query_issi"));
  auto issi = prm::CommandIn<prm::set_issi_in>(prm::SET_ISSI);
  issi.set(prm::set_issi_in::current_issi, 1);
  ONCHIP_CHECK(check(Run(issi.bytes(), 16), "set_issi"));
  for (uint16_t op_mod : {prm::BOOT_PAGES, prm::INIT_PAGES}) {
    auto q = Run(prm::CommandIn<prm::query_pages_in>(prm::QUERY_PAGES, op_mod).bytes(), 16);
    ONCHIP_CHECK(check(q, "query_pages"));
    const auto n = static_cast<uint32_t>(q->get(prm::query_pages_out::num_pages));
    if (n) ONCHIP_CHECK(check(GivePages(n), "manage_pages"));
    if (op_mod == prm::BOOT_PAGES) {
      auto reg =
          prm::CommandIn<prm::access_register_in>(prm::ACCESS_REG, prm::ACCESS_REG_WRITE, 16);
      reg.set(prm::access_register_in::register_id, prm::REG_HOST_ENDIANNESS);
      ONCHIP_CHECK(check(Run(reg.bytes(), 32), "access_reg"));
    }
  }
  ONCHIP_CHECK(check(Run(prm::CommandIn<prm::init_hca_in>(prm::INIT_HCA).bytes(), 16), "init_hca"));
  return {};
}

}  // namespace onchip::sim::testing
