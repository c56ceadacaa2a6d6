// Rings on plain memory: the send / receive / CQ buffers and the doorbell records are vectors,
// the BlueFlame register is a 4 KiB page of ordinary memory, and the bus counts DoorbellRung
// calls. A test plays the device by reading the rings and writing CQEs by hand.
#pragma once

#include <gtest/gtest.h>
#include <infiniband/verbs.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "driver/rings/bfreg.h"
#include "driver/bus/bus.h"
#include "driver/rings/cq_ring.h"
#include "driver/rings/data_path.h"
#include "mmio/wc_copy.h"
#include "uapi/prm/cqe.h"
#include "uapi/prm/doorbell_record.h"
#include "uapi/prm/uar_page.h"

namespace onchip::rings_test {

using driver::Bfreg;
using driver::rings::CqRing;
using driver::rings::CqRingDesc;
using driver::rings::DataPathCq;
using driver::rings::DataPathQp;
using driver::rings::QpTransport;
using driver::rings::SendQueueDesc;

// A bus that only counts: no BAR, no DMA.
class CountingBus final : public driver::bus::Bus {
 public:
  std::byte* bar0() const override { return bar_; }
  uint64_t bar0_size() const override { return sizeof(bar_); }
  Result<driver::bus::DmaMapping> MapHost(std::byte*, uint64_t) override {
    return Fail(EOPNOTSUPP, "counting bus: no DMA");
  }
  Result<uint64_t> Map(const alloc::Region&) override { return Fail(EOPNOTSUPP, "no DMA"); }
  void Unmap(const alloc::Region&, uint64_t) override {}
  void Notify() override { ++notifies; }
  void DoorbellRung() override { ++doorbells; }
  WindowMemory window_memory() const override {
    return {mmio::MemoryType::kWriteBack, "host memory (the test's UAR page)"};
  }

  int doorbells = 0;
  int notifies = 0;

 protected:
  Result<void> UnmapHost(uint64_t, uint64_t) override { return {}; }

 private:
  mutable std::byte bar_[64]{};
};

// 64-byte aligned zeroed memory.
struct Aligned {
  explicit Aligned(std::size_t n) : size(n) {
    p = static_cast<std::byte*>(std::aligned_alloc(64, (n + 63) / 64 * 64));
    std::memset(p, 0, n);
  }
  ~Aligned() { std::free(p); }
  Aligned(const Aligned&) = delete;
  Aligned& operator=(const Aligned&) = delete;
  std::byte* p;
  std::size_t size;
};

inline constexpr uint32_t kQpn = 0x123;
inline constexpr uint32_t kCqn = 0x45;

// A QP (send + receive ring), its CQ (shared for both directions) and the table between them.
struct Harness {
  explicit Harness(QpTransport transport = QpTransport::kRc, uint32_t wqe_cnt = 64,
                   uint32_t max_post = 16, bool blueflame = true, uint32_t cqe_cnt = 64)
      : sq_ring(std::size_t{wqe_cnt} * 64),
        rq_ring(16 * 64),
        cq_buf(std::size_t{cqe_cnt} * 64),
        uar(4096) {
    bf.reg = uar.p + 0x800;
    bf.buf_size = blueflame ? 256 : 0;
    bf.blueflame = blueflame;
    bf.need_lock = !blueflame;
    bf.line64 = mmio::ToDeviceFor(bus.window_memory().type).line64;
    SendQueueDesc sd;
    sd.ring = sq_ring.p;
    sd.wqe_cnt = wqe_cnt;
    sd.max_post = max_post;
    sd.db_counter = &qp_dbr.snd_counter;
    sd.bf = &bf;
    sd.bus = &bus;
    sd.qpn = kQpn;
    sd.transport = transport;
    sd.max_inline_data = 100;
    sd.max_send_sge = 4;
    EXPECT_TRUE(qp.sq.Init(sd).has_value());
    driver::rings::RecvQueueDesc rd;
    rd.ring = rq_ring.p;
    rd.wqe_cnt = 16;
    rd.wqe_shift = 6;  // 64-byte stride: four scatter entries
    rd.max_recv_sge = 4;
    rd.db_counter = &qp_dbr.rcv_counter;
    rd.bus = &bus;
    EXPECT_TRUE(qp.rq.Init(rd).has_value());
    qp.queues = {&qp.sq, &qp.rq, nullptr};
    EXPECT_TRUE(table.Insert(kQpn, &qp.queues).has_value());
    CqRingDesc cd;
    cd.buf = cq_buf.p;
    cd.cqe_cnt = cqe_cnt;
    cd.dbr = &cq_dbr;
    cd.cqn = kCqn;
    cd.uar_cq_doorbell = uar.p + prm::MLX5_CQ_DOORBELL;
    cd.bus = &bus;
    cd.qpns = &table;
    EXPECT_TRUE(cq.ring.Init(cd).has_value());
  }

  ibv_qp* ibqp() { return &qp.verbs.qp; }
  ibv_qp_ex* qpx() { return &qp.verbs.qp_ex; }
  ibv_cq* ibcq() { return &cq.verbs.cq; }
  ibv_cq_ex* cqx() { return &cq.verbs.cq_ex; }

  // The 64-byte basic block `i` of the send ring.
  std::byte* Bb(uint32_t i) { return sq_ring.p + std::size_t{i} * 64; }
  prm::pod::mlx5_wqe_ctrl_seg* Ctrl(uint32_t bb) {
    return reinterpret_cast<prm::pod::mlx5_wqe_ctrl_seg*>(Bb(bb));
  }

  // Writes CQE number `n` (the device's producer index) as the device would: fields, then op_own
  // with the owner bit of its pass.
  prm::pod::mlx5_cqe64* WriteCqe(uint32_t n, prm::CqeOpcode opcode, uint16_t wqe_counter,
                                 uint8_t wqe_opcode = 0, uint32_t qpn = kQpn) {
    const uint32_t cnt = static_cast<uint32_t>(cq_buf.size / 64);
    auto* cqe = reinterpret_cast<prm::pod::mlx5_cqe64*>(cq_buf.p + (n & (cnt - 1)) * 64);
    std::memset(cqe, 0, 63);
    cqe->sop_drop_qpn = prm::Be32::FromHost(uint32_t{wqe_opcode} << 24 | qpn);
    cqe->wqe_counter = prm::Be16::FromHost(wqe_counter);
    cqe->op_own = prm::CqeOpOwn(opcode, prm::CqeOwnerFor(n, cnt));
    return cqe;
  }

  CountingBus bus;
  Aligned sq_ring, rq_ring, cq_buf, uar;
  prm::QpDoorbellRecord qp_dbr{};
  prm::CqDoorbellRecord cq_dbr{};
  Bfreg bf;
  driver::rings::QpnTable table;
  DataPathQp qp{};
  DataPathCq cq{};
};

inline ibv_sge Sge(uint64_t addr, uint32_t length, uint32_t lkey) { return {addr, length, lkey}; }

}  // namespace onchip::rings_test
