// Receive queues and SRQs on plain memory: scatter entries and the terminator, the doorbell
// record, full queues, too many SGEs, and the SRQ free list taking completed WQEs back.
#include <gtest/gtest.h>
#include <infiniband/verbs.h>

#include <array>
#include <cstring>

#include "driver/rings/srq_ring.h"
#include "tests/unit/rings/ring_fixture.h"
#include "uapi/prm/recv_wqe.h"

namespace onchip::rings_test {
namespace {

namespace pod = prm::pod;

const pod::mlx5_wqe_data_seg* Seg(std::byte* wqe, int i) {
  return reinterpret_cast<const pod::mlx5_wqe_data_seg*>(wqe) + i;
}

TEST(RecvQueue, ScatterEntriesThenATerminatorAndTheRecord) {
  Harness h;
  std::array<ibv_sge, 3> sges{Sge(0x1000, 10, 1), Sge(0x2000, 0, 2), Sge(0x3000, 30, 3)};
  ibv_recv_wr wr{};
  wr.sg_list = sges.data();
  wr.num_sge = 3;
  ibv_recv_wr* bad = nullptr;
  ASSERT_EQ(driver::rings::PostRecv(h.ibqp(), &wr, &bad), 0);
  std::byte* wqe = h.rq_ring.p;
  EXPECT_EQ(Seg(wqe, 0)->byte_count.host(), 10u);
  EXPECT_EQ(Seg(wqe, 0)->lkey.host(), 1u);
  EXPECT_EQ(Seg(wqe, 1)->addr.host(), 0x3000u);
  EXPECT_EQ(Seg(wqe, 2)->byte_count.host(), 0u);
  EXPECT_EQ(Seg(wqe, 2)->lkey.host(), prm::MLX5_INVALID_LKEY);
  EXPECT_EQ(h.qp_dbr.rcv_counter.host(), 1u);
  // The record is all: the device reads it when a message arrives, so nothing is rung.
  EXPECT_EQ(h.bus.doorbells, 0);

  // A full list (four entries in a 64-byte stride) has no terminator.
  std::array<ibv_sge, 4> four{Sge(1, 1, 1), Sge(2, 2, 2), Sge(3, 3, 3), Sge(4, 4, 4)};
  wr.sg_list = four.data();
  wr.num_sge = 4;
  ASSERT_EQ(driver::rings::PostRecv(h.ibqp(), &wr, &bad), 0);
  EXPECT_EQ(Seg(h.rq_ring.p + 64, 3)->lkey.host(), 4u);
}

TEST(RecvQueue, FullIsEnomemAndTooManySgesIsEinval) {
  Harness h;
  std::array<ibv_recv_wr, 17> wrs{};
  for (std::size_t i = 0; i < wrs.size(); ++i) {
    wrs[i].wr_id = i;
    wrs[i].next = i + 1 < wrs.size() ? &wrs[i + 1] : nullptr;
  }
  ibv_recv_wr* bad = nullptr;
  EXPECT_EQ(driver::rings::PostRecv(h.ibqp(), wrs.data(), &bad), ENOMEM);
  EXPECT_EQ(bad, &wrs[16]);
  EXPECT_EQ(h.qp_dbr.rcv_counter.host(), 16u);
  EXPECT_EQ(h.qp.rq.Retire(), 0u);
  EXPECT_EQ(h.qp.rq.Retire(), 1u);

  ibv_sge sges[5] = {};
  ibv_recv_wr wr{};
  wr.sg_list = sges;
  wr.num_sge = 5;
  EXPECT_EQ(driver::rings::PostRecv(h.ibqp(), &wr, &bad), EINVAL);
  EXPECT_EQ(bad, &wr);
  h.qp.rq.SetStateMaxGs(-1);  // RESET: nothing passes
  wr.num_sge = 0;
  EXPECT_EQ(driver::rings::PostRecv(h.ibqp(), &wr, &bad), EINVAL);
}

// One request with one SGE takes PostRecv's short path; the same request inside a list, or any
// request that fails, takes the list path. Both must leave the same WQE, wr_id and record.
TEST(RecvQueue, TheShortPathAndTheListPathWriteTheSameWqe) {
  Harness h;
  ibv_sge sge = Sge(0x1234'5678'9abc, 4096, 0x77);
  ibv_recv_wr single{};
  single.wr_id = 41;
  single.sg_list = &sge;
  single.num_sge = 1;
  ibv_recv_wr* bad = nullptr;
  ASSERT_EQ(driver::rings::PostRecv(h.ibqp(), &single, &bad), 0);
  ibv_recv_wr second = single;
  second.wr_id = 42;
  ibv_recv_wr first = single;  // a list of two: the list path
  first.next = &second;
  ASSERT_EQ(driver::rings::PostRecv(h.ibqp(), &first, &bad), 0);
  EXPECT_EQ(h.qp_dbr.rcv_counter.host(), 3u);
  EXPECT_EQ(h.bus.doorbells, 0);
  for (int slot = 1; slot < 3; ++slot)
    EXPECT_EQ(std::memcmp(h.rq_ring.p, h.rq_ring.p + slot * 64, 64), 0) << "slot " << slot;
  EXPECT_EQ(Seg(h.rq_ring.p, 0)->addr.host(), 0x1234'5678'9abcu);
  EXPECT_EQ(Seg(h.rq_ring.p, 0)->byte_count.host(), 4096u);
  EXPECT_EQ(Seg(h.rq_ring.p, 0)->lkey.host(), 0x77u);
  EXPECT_EQ(Seg(h.rq_ring.p, 1)->lkey.host(), prm::MLX5_INVALID_LKEY);
  EXPECT_EQ(h.qp.rq.Retire(), 41u);
  EXPECT_EQ(h.qp.rq.Retire(), 41u);
  EXPECT_EQ(h.qp.rq.Retire(), 42u);

  // The short path's request on a full queue and before INIT fails as the list path says.
  for (int i = 0; i < 16; ++i) ASSERT_EQ(driver::rings::PostRecv(h.ibqp(), &single, &bad), 0);
  bad = nullptr;
  EXPECT_EQ(driver::rings::PostRecv(h.ibqp(), &single, &bad), ENOMEM);
  EXPECT_EQ(bad, &single);
  EXPECT_EQ(h.qp_dbr.rcv_counter.host(), 19u);
  h.qp.rq.Retire();
  h.qp.rq.SetStateMaxGs(-1);
  bad = nullptr;
  EXPECT_EQ(driver::rings::PostRecv(h.ibqp(), &single, &bad), EINVAL);
  EXPECT_EQ(bad, &single);
  EXPECT_EQ(h.qp_dbr.rcv_counter.host(), 19u);
}

struct SrqHarness {
  SrqHarness() : ring(8 * 64) {
    driver::rings::SrqRingDesc d;
    d.ring = ring.p;
    d.wqe_cnt = 8;
    d.wqe_shift = 6;  // next segment + three scatter entries
    d.max_sge = 3;
    d.dbr = &dbr;
    d.bus = &bus;
    EXPECT_TRUE(srq.ring.Init(d).has_value());
  }
  uint16_t Next(uint32_t i) const {
    return reinterpret_cast<const pod::mlx5_wqe_srq_next_seg*>(ring.p + i * 64)
        ->next_wqe_index.host();
  }
  int Post(uint64_t id) {
    ibv_sge sge = Sge(0x1000 + id, 8, 1);
    ibv_recv_wr wr{};
    wr.wr_id = id;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    ibv_recv_wr* bad = nullptr;
    return driver::rings::PostSrqRecv(&srq.verbs.srq, &wr, &bad);
  }
  CountingBus bus;
  Aligned ring;
  prm::SrqDoorbellRecord dbr{};
  driver::rings::DataPathSrq srq{};
};

TEST(SrqRing, TheFreeListHandsOutWqesInOrderAndTakesCompletedOnesBack) {
  SrqHarness s;
  for (uint32_t i = 0; i < 8; ++i) EXPECT_EQ(s.Next(i), (i + 1) % 8);
  for (uint64_t id = 0; id < 7; ++id) ASSERT_EQ(s.Post(id), 0);
  EXPECT_EQ(s.Post(7), ENOMEM) << "one WQE always stays unused";
  EXPECT_EQ(s.dbr.counter.host(), 7u);
  const auto* seg = reinterpret_cast<const pod::mlx5_wqe_data_seg*>(s.ring.p + 3 * 64 + 16);
  EXPECT_EQ(seg[0].addr.host(), 0x1003u);
  EXPECT_EQ(seg[1].lkey.host(), prm::MLX5_INVALID_LKEY);

  // WQE 2 completes first: it is linked after the tail (7) and becomes the tail.
  EXPECT_EQ(s.srq.ring.Retire(2), 2u);
  EXPECT_EQ(s.Next(7), 2);
  EXPECT_EQ(s.srq.ring.tail(), 2u);
  // The next post fills WQE 7 (the old tail), then 2.
  ASSERT_EQ(s.Post(70), 0);
  EXPECT_EQ(s.Post(71), ENOMEM);
  EXPECT_EQ(s.srq.ring.Retire(7), 70u);
  EXPECT_EQ(s.dbr.counter.host(), 8u);

  ibv_sge sges[4] = {};
  ibv_recv_wr wr{};
  wr.sg_list = sges;
  wr.num_sge = 4;
  ibv_recv_wr* bad = nullptr;
  EXPECT_EQ(driver::rings::PostSrqRecv(&s.srq.verbs.srq, &wr, &bad), EINVAL);
  EXPECT_EQ(bad, &wr);
}

TEST(SrqRing, ACqeNamingAnSrqWqeReturnsItsWrIdAndFreesIt) {
  Harness h;
  SrqHarness s;
  h.qp.queues.rq = nullptr;
  h.qp.queues.srq = &s.srq.ring;
  ASSERT_EQ(s.Post(41), 0);
  ASSERT_EQ(s.Post(42), 0);
  h.WriteCqe(0, prm::MLX5_CQE_RESP_SEND, 1);
  ibv_wc wc{};
  ASSERT_EQ(driver::rings::PollCq(h.ibcq(), 1, &wc), 1);
  EXPECT_EQ(wc.wr_id, 42u);
  EXPECT_EQ(s.srq.ring.tail(), 1u);
}

}  // namespace
}  // namespace onchip::rings_test
