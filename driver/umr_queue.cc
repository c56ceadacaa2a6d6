#include "driver/umr_queue.h"

#include <infiniband/mlx5dv.h>
#include <infiniband/verbs.h>
#include <sched.h>

#include <atomic>
#include <bit>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

#include "driver/cmd/run.h"
#include "driver/device.h"
#include "driver/uar.h"
#include "mmio/barriers.h"
#include "mmio/device_word.h"
#include "uapi/prm/cq.h"
#include "uapi/prm/cqe.h"
#include "uapi/prm/doorbell_record.h"
#include "uapi/prm/opcodes.h"
#include "uapi/prm/qp.h"
#include "uapi/prm/resources.h"
#include "uapi/prm/umr.h"
#include "uapi/prm/wqe.h"

namespace onchip::driver {
namespace {

constexpr uint32_t kSqWqebbs = 64;   // 32 two-block UMRs; one is in flight at a time
constexpr uint32_t kCqEntries = 64;  // one completion per UMR
constexpr uint32_t kCqeBytes = 64;
constexpr uint32_t kCqeSz64 = 0;     // cqc.cqe_sz: 64-byte CQEs
// How long a UMR may take before the queue gives up on the device.
constexpr auto kCompletionTimeout = std::chrono::seconds(5);

using Ctrl = prm::UmrWqe::ctrl;
using UmrCtrl = prm::UmrWqe::umr_ctrl;
using Seg = prm::UmrWqe::mkey_seg;
using SegMkc = prm::UmrWqe::mkey_seg_mkc;

// Every context-carrying transition command has rst2init_qp_in's shape.
using Transition = prm::rst2init_qp_in;
static_assert(prm::init2rtr_qp_in::size_bits == Transition::size_bits);
static_assert(prm::rtr2rts_qp_in::size_bits == Transition::size_bits);

Result<void> RunTransition(cmd::Commander& commander, uint16_t opcode, uint32_t qpn) {
  constexpr auto qpc = Transition::qpc;
  prm::Message<Transition> in;
  in.set(Transition::opcode, opcode).set(Transition::qpn, qpn);
  if (opcode == prm::RST2INIT_QP) in.set(qpc.primary_address_path.vhca_port_num, 1);
  // The queue moves no message; the MTU is only what every RTR transition must name.
  if (opcode == prm::INIT2RTR_QP) in.set(qpc.mtu, IBV_MTU_4096);
  ONCHIP_TRY(auto out, cmd::Run<prm::rst2init_qp_out>(commander, in));
  (void)out;
  return {};
}

}  // namespace

Result<std::unique_ptr<RegistrationQueue>> UmrQueue::Create(Device& device) {
  std::unique_ptr<UmrQueue> q(new UmrQueue(device));
  if (auto up = q->BringUp(); !up) {
    (void)q->Destroy(device.commander());
    return std::unexpected(up.error());
  }
  return q;
}

UmrQueue::~UmrQueue() = default;

Result<void> UmrQueue::BringUp() {
  cmd::Commander& commander = device_.commander();
  {
    prm::Message<prm::alloc_pd_in> in;
    in.set(prm::alloc_pd_in::opcode, prm::ALLOC_PD);
    ONCHIP_TRY(auto out, cmd::Run<prm::alloc_pd_out>(commander, in));
    pdn_ = out.get(prm::alloc_pd_out::pd);
    have_pd_ = true;
  }
  ONCHIP_TRY(doorbell_, device_.uars().Shared());

  // The completion queue, never armed: the queue polls it.
  ONCHIP_TRY(cq_ring_, QueueBuffer::Allocate(device_, kCqEntries * kCqeBytes, prm::ADAPTER_PAGE_SIZE,
                                             MLX5DV_RES_TYPE_CQ));
  ONCHIP_TRY(cq_dbr_, QueueBuffer::Allocate(device_, sizeof(prm::CqDoorbellRecord),
                                            sizeof(prm::CqDoorbellRecord), MLX5DV_RES_TYPE_DBR));
  std::memset(cq_dbr_.data(), 0, sizeof(prm::CqDoorbellRecord));
  auto* cqes = static_cast<std::byte*>(cq_ring_.data());
  for (uint32_t i = 0; i < kCqEntries; ++i)
    reinterpret_cast<prm::pod::mlx5_cqe64*>(cqes + i * kCqeBytes)->op_own = prm::kCqeInitialOpOwn;
  {
    using In = prm::create_cq_in;
    constexpr auto cqc = In::cq_context;
    const std::size_t pages = kCqEntries * kCqeBytes / prm::ADAPTER_PAGE_SIZE;
    prm::Message<In> in(pages * 8);
    in.set(In::opcode, prm::CREATE_CQ)
        .set(cqc.cqe_sz, kCqeSz64)
        .set(cqc.log_cq_size, std::countr_zero(kCqEntries))
        .set(cqc.uar_page, doorbell_->uar_index)
        .set(cqc.c_eqn_or_apu_element, device_.comp_eqn())
        .set(cqc.dbr_addr, cq_dbr_.iova());
    for (std::size_t i = 0; i < pages; ++i)
      in.set(In::pas[i], cq_ring_.iova() + i * prm::ADAPTER_PAGE_SIZE);
    ONCHIP_TRY(auto out, cmd::Run<prm::create_cq_out>(commander, in));
    cqn_ = out.get(prm::create_cq_out::cqn);
    have_cq_ = true;
  }

  // The queue pair: a send ring only.
  ONCHIP_TRY(sq_, QueueBuffer::Allocate(device_, kSqWqebbs * prm::MLX5_SEND_WQE_BB,
                                        prm::ADAPTER_PAGE_SIZE, MLX5DV_RES_TYPE_QP));
  ONCHIP_TRY(qp_dbr_, QueueBuffer::Allocate(device_, sizeof(prm::QpDoorbellRecord),
                                            sizeof(prm::QpDoorbellRecord), MLX5DV_RES_TYPE_DBR));
  std::memset(qp_dbr_.data(), 0, sizeof(prm::QpDoorbellRecord));
  {
    using In = prm::create_qp_in;
    constexpr auto qpc = In::qpc;
    const std::size_t pages = kSqWqebbs * prm::MLX5_SEND_WQE_BB / prm::ADAPTER_PAGE_SIZE;
    prm::Message<In> in(pages * 8);
    in.set(In::opcode, prm::CREATE_QP)
        .set(qpc.st, prm::QP_ST_REG_UMR)
        .set(qpc.pm_state, prm::QP_PM_MIGRATED)
        .set(qpc.pd, pdn_)
        .set(qpc.uar_page, doorbell_->uar_index)
        .set(qpc.cqn_snd, cqn_)
        .set(qpc.cqn_rcv, cqn_)
        .set(qpc.dbr_addr, qp_dbr_.iova())
        .set(qpc.rq_type, prm::ZERO_LEN_RQ)
        .set(qpc.log_sq_size, std::countr_zero(kSqWqebbs));
    for (std::size_t i = 0; i < pages; ++i)
      in.set(In::pas[i], sq_.iova() + i * prm::ADAPTER_PAGE_SIZE);
    ONCHIP_TRY(auto out, cmd::Run<prm::create_qp_out>(commander, in));
    qpn_ = static_cast<uint32_t>(out.get(prm::create_qp_out::qpn));
    have_qp_ = true;
  }
  ONCHIP_CHECK(RunTransition(commander, prm::RST2INIT_QP, qpn_));
  ONCHIP_CHECK(RunTransition(commander, prm::INIT2RTR_QP, qpn_));
  ONCHIP_CHECK(RunTransition(commander, prm::RTR2RTS_QP, qpn_));
  return {};
}

Result<void> UmrQueue::UpdateMkey(uint32_t mkey, const MkeyUpdate& update) {
  std::lock_guard lock(mu_);
  if (broken_) return Fail(EIO, "umr: the registration queue is in error");

  // ctrl + UMR control + mkey segment: two basic blocks, never across the ring's end (the ring
  // holds an even number of blocks and every WQE is two).
  constexpr std::size_t kBytes = prm::UmrWqe::kHeadBytes;
  constexpr uint32_t kBbs = kBytes / prm::MLX5_SEND_WQE_BB;
  static_assert(kSqWqebbs % kBbs == 0);
  const uint32_t index = sq_head_ & (kSqWqebbs - 1);
  std::span<std::byte> wqe(static_cast<std::byte*>(sq_.data()) + index * prm::MLX5_SEND_WQE_BB,
                           kBytes);
  std::memset(wqe.data(), 0, kBytes);
  uint64_t mask = 0;
  prm::Bits w(wqe);
  if (update.pdn) {
    mask |= prm::MLX5_MKEY_MASK_PD;
    w.set(SegMkc::pd, *update.pdn);
  }
  if (update.access) {
    const unsigned a = *update.access;
    mask |= prm::MLX5_MKEY_MASK_LR | prm::MLX5_MKEY_MASK_LW | prm::MLX5_MKEY_MASK_RR |
            prm::MLX5_MKEY_MASK_RW | prm::MLX5_MKEY_MASK_A;
    w.set(SegMkc::lr, 1)
        .set(SegMkc::lw, (a & IBV_ACCESS_LOCAL_WRITE) ? 1 : 0)
        .set(SegMkc::rr, (a & IBV_ACCESS_REMOTE_READ) ? 1 : 0)
        .set(SegMkc::rw, (a & IBV_ACCESS_REMOTE_WRITE) ? 1 : 0)
        .set(SegMkc::a, (a & IBV_ACCESS_REMOTE_ATOMIC) ? 1 : 0);
  }
  if (mask == 0) return {};
  w.set(Ctrl::opmod_idx_opcode, (uint32_t{sq_head_ & 0xffff} << 8) | prm::MLX5_OPCODE_UMR)
      .set(Ctrl::qpn_ds, prm::QpnDs(qpn_, prm::UmrWqe::kHeadDs))
      .set(Ctrl::fm_ce_se, prm::MLX5_WQE_CTRL_CQ_UPDATE)
      .set(Ctrl::imm, mkey)
      // Fail if the MR is free (being torn down): a registration changes live keys only.
      .set(UmrCtrl::flags, prm::MLX5_WQE_UMR_CTRL_FLAG_INLINE | prm::MLX5_UMR_CHECK_FREE)
      .set(UmrCtrl::mkey_mask, mask);
  if (!w.ok()) return Fail(EINVAL, "umr: a value does not fit its WQE field");
  uint64_t first8;
  std::memcpy(&first8, wqe.data(), sizeof first8);
  sq_head_ += kBbs;

  // The WQE before the record says it exists, the record before the doorbell.
  mmio::ToDeviceBarrier();
  auto* record = static_cast<prm::QpDoorbellRecord*>(qp_dbr_.data());
  mmio::StoreDeviceWord(record->snd_counter, prm::Be32::FromHost(sq_head_ & prm::kWqCounterMask));
  mmio::ToDeviceBarrier();
  {
    mmio::WcLockGuard guard(doorbell_->lock);
    *reinterpret_cast<volatile uint64_t*>(doorbell_->NextHalf()) = first8;
  }
  device_.bus().DoorbellRung();
  return WaitForCompletion();
}

Result<void> UmrQueue::WaitForCompletion() {
  auto* cqe = reinterpret_cast<prm::pod::mlx5_cqe64*>(
      static_cast<std::byte*>(cq_ring_.data()) + (cq_ci_ & (kCqEntries - 1)) * kCqeBytes);
  const auto deadline = std::chrono::steady_clock::now() + kCompletionTimeout;
  uint8_t op_own;
  for (unsigned spins = 0;; ++spins) {
    // The device writes op_own last, with release: acquire it before reading the rest.
    op_own = std::atomic_ref<uint8_t>(cqe->op_own).load(std::memory_order_acquire);
    if (prm::CqeOpcodeOf(op_own) != prm::MLX5_CQE_INVALID &&
        prm::CqeOwner(op_own) == prm::CqeOwnerFor(cq_ci_, kCqEntries))
      break;
    if (std::chrono::steady_clock::now() > deadline) {
      broken_ = true;
      return Fail(ETIMEDOUT, "umr: no completion from the device");
    }
    if (spins < 1000) sched_yield();
    else std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
  mmio::DmaReadBarrier();  // the CQE's fields are not older than its owner bit
  ++cq_ci_;
  auto* record = static_cast<prm::CqDoorbellRecord*>(cq_dbr_.data());
  mmio::StoreDeviceWord(record->set_ci, prm::Be32::FromHost(cq_ci_ & prm::kCqConsumerIndexMask));
  if (prm::CqeOpcodeOf(op_own) != prm::MLX5_CQE_REQ) {
    broken_ = true;  // an error completion moved the QP to error
    return Fail(EIO, "umr: the device refused the registration");
  }
  return {};
}

Result<void> UmrQueue::Destroy(cmd::Commander& commander) {
  Result<void> first;
  auto note = [&](Result<void> r) {
    if (!r && first) first = std::move(r);
  };
  if (have_qp_) {
    prm::Message<prm::destroy_qp_in> in;
    in.set(prm::destroy_qp_in::opcode, prm::DESTROY_QP).set(prm::destroy_qp_in::qpn, qpn_);
    auto out = cmd::Run<prm::destroy_qp_out>(commander, in);
    if (out) have_qp_ = false;
    else note(std::unexpected(out.error()));
  }
  if (have_cq_) {
    prm::Message<prm::destroy_cq_in> in;
    in.set(prm::destroy_cq_in::opcode, prm::DESTROY_CQ).set(prm::destroy_cq_in::cqn, cqn_);
    auto out = cmd::Run<prm::destroy_cq_out>(commander, in);
    if (out) have_cq_ = false;
    else note(std::unexpected(out.error()));
  }
  if (have_pd_) {
    prm::Message<prm::dealloc_pd_in> in;
    in.set(prm::dealloc_pd_in::opcode, prm::DEALLOC_PD).set(prm::dealloc_pd_in::pd, pdn_);
    auto out = cmd::Run<prm::dealloc_pd_out>(commander, in);
    if (out) have_pd_ = false;
    else note(std::unexpected(out.error()));
  }
  return first;
}

}  // namespace onchip::driver
