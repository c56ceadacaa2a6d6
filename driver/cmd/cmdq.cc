#include "driver/cmd/cmdq.h"

#include <immintrin.h>
#include <sched.h>

#include <algorithm>
#include <cerrno>
#include <thread>

#include "mmio/barriers.h"
#include "uapi/cmdq/mailbox.h"
#include "uapi/prm/cmd_layout.h"
#include "uapi/prm/init_seg_access.h"
#include "uapi/prm/opcodes.h"

namespace onchip::driver::cmd {
namespace {

// A chunk of mailbox blocks: 64 KiB = 64 blocks at 1 KiB alignment.
constexpr uint64_t kChunkBytes = 64 * 1024;
constexpr std::size_t kMaxBlocks = cmdq::BlocksFor(cmdq::kMaxMessageBytes);

}  // namespace

// Resolves the blocks of one command only: the codec never reaches memory this command does not own.
class Cmdq::CommandBlocks final : public cmdq::BlockAccess {
 public:
  CommandBlocks(const std::vector<MailboxBlock>& a, const std::vector<MailboxBlock>& b) : a_(a), b_(b) {}
  std::byte* Block(uint64_t addr) override {
    for (const auto* list : {&a_, &b_})
      for (const auto& blk : *list)
        if (blk.iova == addr) return blk.host;
    return nullptr;
  }

 private:
  const std::vector<Cmdq::MailboxBlock>& a_;
  const std::vector<Cmdq::MailboxBlock>& b_;
};

Result<std::unique_ptr<Cmdq>> Cmdq::Create(bus::Bus& bus, alloc::MemoryProvider& memory,
                                           CmdqOptions opts) {
  if (bus.bar0_size() < prm::init_seg::kDriverBytes)
    return Fail(EINVAL, "cmdq: BAR0 smaller than the init segment");
  if (prm::init_seg::ReadCmdInterfaceRev(bus) != prm::CMD_IF_REV)
    return Fail(EPROTONOSUPPORT, "cmdq: device command interface revision is not 5");
  const prm::init_seg::CmdqGeometry geometry = prm::init_seg::ReadCmdqGeometry(bus);
  const uint32_t log_size = geometry.log_cmdq_size;
  const uint32_t log_stride = geometry.log_cmdq_stride;
  if ((1u << log_size) > 32 || log_size < 1)
    return Fail(EINVAL, "cmdq: device reports an unsupported number of queue entries");
  if (log_size + log_stride > 12 || (1u << log_stride) < cmdq::kEntryBytes)
    return Fail(EINVAL, "cmdq: device's queue does not fit one 4 KiB page");
  ONCHIP_TRY(bus::DmaMemory page, bus::DmaMemory::Allocate(memory, bus::kPageSize, bus::kPageSize));
  if (page.iova() % bus::kPageSize != 0) return Fail(EINVAL, "cmdq: queue page not 4 KiB aligned");
  std::unique_ptr<Cmdq> q(new Cmdq(bus, memory, opts, std::move(page), log_size, log_stride));
  // High word first, the device-owned low bits written back as read (see WriteCmdqAddress).
  prm::init_seg::WriteCmdqAddress(bus, q->page_.iova());
  return q;
}

Cmdq::Cmdq(bus::Bus& bus, alloc::MemoryProvider& memory, CmdqOptions opts, bus::DmaMemory page,
           uint32_t log_size, uint32_t log_stride)
    : bus_(bus),
      memory_(memory),
      opts_(opts),
      page_(std::move(page)),
      num_slots_(1u << log_size),
      log_stride_(log_stride) {
  free_slots_ = (num_slots_ - 1 == 32 ? ~0u : ((1u << (num_slots_ - 1)) - 1));
}

Cmdq::~Cmdq() = default;

Result<uint32_t> Cmdq::AcquireSlot(bool page_slot) {
  std::unique_lock lock(slot_mu_);
  const uint32_t page = num_slots_ - 1;
  const uint32_t regular_mask = (1u << page) - 1;
  if (page_slot) {
    slot_cv_.wait(lock, [&] { return !page_slot_busy_ || (retired_slots_ >> page) & 1; });
    if ((retired_slots_ >> page) & 1)
      return Fail(EIO, "cmdq: the page-management slot was lost to a timed-out command");
    page_slot_busy_ = true;
    return page;
  }
  slot_cv_.wait(lock, [&] { return free_slots_ != 0 || (retired_slots_ & regular_mask) == regular_mask; });
  if (free_slots_ == 0)
    return Fail(EIO, "cmdq: every command slot was lost to timed-out commands");
  const uint32_t slot = static_cast<uint32_t>(__builtin_ctz(free_slots_));
  free_slots_ &= ~(1u << slot);
  return slot;
}

void Cmdq::ReleaseSlot(uint32_t slot) {
  {
    std::lock_guard lock(slot_mu_);
    if (slot == num_slots_ - 1)
      page_slot_busy_ = false;
    else
      free_slots_ |= 1u << slot;
  }
  slot_cv_.notify_all();
}

Result<std::vector<Cmdq::MailboxBlock>> Cmdq::TakeBlocks(std::size_t n) {
  std::vector<MailboxBlock> out;
  if (n == 0) return out;
  if (n > kMaxBlocks) return Fail(EMSGSIZE, "cmdq: command longer than the mailbox limit");
  std::lock_guard lock(block_mu_);
  while (free_blocks_.size() < n) {
    const uint64_t need = (n - free_blocks_.size()) * cmdq::kBlockAlign;
    ONCHIP_TRY(bus::DmaMemory chunk,
               bus::DmaMemory::Allocate(memory_, std::max(kChunkBytes, need), cmdq::kBlockAlign));
    for (uint64_t off = 0; off + cmdq::kBlockAlign <= chunk.length(); off += cmdq::kBlockAlign)
      free_blocks_.push_back({chunk.iova() + off, chunk.host() + off});
    chunks_.push_back(std::move(chunk));
  }
  out.assign(free_blocks_.end() - static_cast<std::ptrdiff_t>(n), free_blocks_.end());
  free_blocks_.resize(free_blocks_.size() - n);
  return out;
}

void Cmdq::ReturnBlocks(std::vector<MailboxBlock>& blocks) {
  if (blocks.empty()) return;
  std::lock_guard lock(block_mu_);
  free_blocks_.insert(free_blocks_.end(), blocks.begin(), blocks.end());
  blocks.clear();
}

Result<void> Cmdq::Exec(std::span<const std::byte> in, std::span<std::byte> out) {
  // Some PRM outputs are shorter than the 16 inline bytes (enable_hca_out is 12); every message
  // has at least its header dwords: opcode and op_mod in, status and syndrome out.
  if (in.size() < 8 || out.size() < 8)
    return Fail(EINVAL, "cmdq: command input and output are at least 8 bytes");
  const bool pages = prm::Get(in, prm::mbox_in::opcode) == prm::MANAGE_PAGES;
  auto acquired = AcquireSlot(pages);
  if (!acquired)
    return Fail(acquired.error().errno_value(), acquired.error().what(),
                FirmwareContext{.opcode = static_cast<uint16_t>(prm::Get(in, prm::mbox_in::opcode)),
                                .op_mod = static_cast<uint16_t>(prm::Get(in, prm::mbox_in::op_mod))});
  const uint32_t slot = *acquired;
  auto posted = Post(slot, in, out);
  if (!posted && posted.error().errno_value() == ETIMEDOUT) {
    {
      std::lock_guard lock(slot_mu_);
      retired_slots_ |= 1u << slot;  // the device may still own it: never hand it out again
    }
    slot_cv_.notify_all();  // waiters re-check: the slot they wait for may be gone for good
  } else {
    ReleaseSlot(slot);
  }
  if (!posted) {
    const Error& e = posted.error();
    if (e.from_firmware()) return posted;
    // Delivery and transport failures: keep their errno and text, add which command it was.
    return Fail(e.errno_value(), e.what(),
                FirmwareContext{.opcode = static_cast<uint16_t>(prm::Get(in, prm::mbox_in::opcode)),
                                .op_mod = static_cast<uint16_t>(prm::Get(in, prm::mbox_in::op_mod))});
  }
  return CheckOutputStatus(in, out);
}

Result<void> Cmdq::Post(uint32_t slot, std::span<const std::byte> in, std::span<std::byte> out) {
  ONCHIP_TRY(std::vector<MailboxBlock> in_blocks, TakeBlocks(cmdq::BlocksFor(in.size())));
  auto out_taken = TakeBlocks(cmdq::BlocksFor(out.size()));
  if (!out_taken) {
    ReturnBlocks(in_blocks);
    return std::unexpected(out_taken.error());
  }
  std::vector<MailboxBlock> out_blocks = std::move(*out_taken);
  std::vector<uint64_t> in_addrs, out_addrs;
  for (const auto& b : in_blocks) in_addrs.push_back(b.iova);
  for (const auto& b : out_blocks) out_addrs.push_back(b.iova);
  CommandBlocks access(in_blocks, out_blocks);
  cmdq::Entry entry(page_.host() + (uint64_t{slot} << log_stride_), cmdq::kEntryBytes);

  uint8_t token = next_token_.fetch_add(1, std::memory_order_relaxed) + 1;
  if (token == 0) token = next_token_.fetch_add(1, std::memory_order_relaxed) + 1;

  Result<void> result = cmdq::PrepareOutput(out.size(), out_addrs, token, access, entry);
  if (result) result = cmdq::EncodeInput(in, in_addrs, token, access, entry);
  if (!result) {
    ReturnBlocks(in_blocks);
    ReturnBlocks(out_blocks);
    return result;
  }
  // EncodeInput's last store handed the entry over with release semantics; the doorbell must not
  // be hoisted above it.
  mmio::ToDeviceBarrier();
  prm::init_seg::RingCommandDoorbell(bus_, 1u << slot);
  bus_.Notify();

  // Completion polling: a short spin (a device that answers at once), then yielding the CPU
  // for up to 2 ms (a device thread that needs it, as on a small machine), then sleeping.
  const auto start = std::chrono::steady_clock::now();
  const auto deadline = start + opts_.timeout;
  const auto yield_until = start + std::chrono::milliseconds(2);
  for (uint32_t spins = 0;; ++spins) {
    if (!cmdq::DeviceOwns(entry)) break;
    if (spins < 256) {
      _mm_pause();
      continue;
    }
    const auto now = std::chrono::steady_clock::now();
    if (now > deadline) {
      // Blocks stay out of the pool with the retired slot: the device may still write them.
      return Fail(ETIMEDOUT, "cmdq: command not completed within the timeout");
    }
    if (now < yield_until)
      sched_yield();
    else
      std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
  mmio::DmaReadBarrier();
  result = cmdq::DecodeOutput(entry, access, out);
  ReturnBlocks(in_blocks);
  ReturnBlocks(out_blocks);
  return result;
}

}  // namespace onchip::driver::cmd
