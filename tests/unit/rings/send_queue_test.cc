// The send queue on plain memory: the exact bytes of each opcode's WQE against the PRM layouts
// (uapi/prm/send_wqe.h), wrap at the ring's end, the doorbell record, BlueFlame vs the 8-byte
// doorbell, and the errors libmlx5 gives (bad_wr, ENOMEM, EINVAL, EOPNOTSUPP).
#include <gtest/gtest.h>
#include <infiniband/verbs.h>

#include <array>
#include <cstring>
#include <set>
#include <thread>
#include <vector>

#include "driver/rings/data_path_ah.h"
#include "driver/rings/umr_wqe.h"
#include "tests/unit/rings/ring_fixture.h"
#include "uapi/prm/send_wqe.h"

namespace onchip::rings_test {
namespace {

namespace pod = prm::pod;
using prm::Be32;
using prm::Be64;

template <class Seg>
const Seg* At(std::byte* p) {
  return reinterpret_cast<const Seg*>(p);
}

uint32_t Opcode(const pod::mlx5_wqe_ctrl_seg* c) { return prm::OpcodeOf(c->opmod_idx_opcode.host()); }
uint32_t Index(const pod::mlx5_wqe_ctrl_seg* c) { return prm::WqeIndexOf(c->opmod_idx_opcode.host()); }
uint32_t Ds(const pod::mlx5_wqe_ctrl_seg* c) { return prm::DsOf(c->qpn_ds.host()); }

void ExpectData(std::byte* p, uint32_t len, uint32_t lkey, uint64_t addr) {
  const auto* d = At<pod::mlx5_wqe_data_seg>(p);
  EXPECT_EQ(d->byte_count.host(), len);
  EXPECT_EQ(d->lkey.host(), lkey);
  EXPECT_EQ(d->addr.host(), addr);
}

TEST(SendQueue, SendWithTwoSgesIsCtrlAndTwoDataSegmentsAndGoesByBlueFlame) {
  Harness h;
  std::array<ibv_sge, 3> sges{Sge(0x1000, 10, 7), Sge(0x2000, 0, 8), Sge(0x3000, 30, 9)};
  ibv_send_wr wr{};
  wr.wr_id = 77;
  wr.opcode = IBV_WR_SEND;
  wr.send_flags = IBV_SEND_SIGNALED | IBV_SEND_SOLICITED;
  wr.sg_list = sges.data();
  wr.num_sge = 3;
  ibv_send_wr* bad = nullptr;
  ASSERT_EQ(driver::rings::PostSend(h.ibqp(), &wr, &bad), 0);
  EXPECT_EQ(bad, nullptr);

  const auto* c = h.Ctrl(0);
  EXPECT_EQ(c->opmod_idx_opcode.host(), prm::OpmodIdxOpcode(0, 0, prm::MLX5_OPCODE_SEND));
  EXPECT_EQ(c->qpn_ds.host(), prm::QpnDs(kQpn, 3));  // ctrl + two non-empty SGEs
  EXPECT_EQ(c->fm_ce_se, prm::MLX5_WQE_CTRL_CQ_UPDATE | prm::MLX5_WQE_CTRL_SOLICITED);
  EXPECT_EQ(c->signature, 0);
  EXPECT_EQ(c->imm.host(), 0u);
  ExpectData(h.Bb(0) + 16, 10, 7, 0x1000);  // the empty SGE is skipped
  ExpectData(h.Bb(0) + 32, 30, 9, 0x3000);

  EXPECT_EQ(h.qp_dbr.snd_counter.host(), 1u);  // one basic block posted
  EXPECT_EQ(h.bus.doorbells, 1);
  // ds 3 > 1 and 48 bytes fit the half: the WQE's block was copied to the first half.
  EXPECT_EQ(std::memcmp(h.bf.reg, h.Bb(0), 64), 0);
  EXPECT_EQ(h.bf.offset, h.bf.buf_size);  // the next post uses the other half
}

// PostSend builds a lone SEND, WRITE or READ with up to two non-empty SGEs on a short path and
// everything else on the list path: both must write the same WQE and bookkeeping.
TEST(SendQueue, TheShortPathAndTheListPathBuildTheSameWqe) {
  std::array<ibv_sge, 3> sges{Sge(0x1000, 10, 7), Sge(0x2000, 20, 8), Sge(0x3000, 0, 9)};
  const ibv_wr_opcode opcodes[] = {IBV_WR_SEND, IBV_WR_SEND_WITH_IMM, IBV_WR_RDMA_WRITE,
                                   IBV_WR_RDMA_WRITE_WITH_IMM, IBV_WR_RDMA_READ};
  const unsigned flag_sets[] = {0, IBV_SEND_SIGNALED | IBV_SEND_SOLICITED, IBV_SEND_FENCE};
  for (const ibv_wr_opcode opcode : opcodes)
    for (const unsigned flags : flag_sets)
      for (int num_sge = 0; num_sge <= 3; ++num_sge) {  // 3: the last one is empty
        SCOPED_TRACE(testing::Message() << "opcode " << opcode << " flags " << flags
                                        << " num_sge " << num_sge);
        ibv_send_wr wr{};
        wr.wr_id = 0x5eed;
        wr.opcode = opcode;
        wr.send_flags = flags;
        wr.sg_list = sges.data();
        wr.num_sge = num_sge;
        wr.imm_data = htobe32(0xabcd);
        wr.wr.rdma.remote_addr = 0x123456789;
        wr.wr.rdma.rkey = 0x4242;
        Harness lone;
        Harness listed;
        ibv_send_wr second = wr;
        ibv_send_wr first = wr;
        first.next = &second;
        ibv_send_wr* bad = nullptr;
        ASSERT_EQ(driver::rings::PostSend(lone.ibqp(), &wr, &bad), 0);
        ASSERT_EQ(driver::rings::PostSend(listed.ibqp(), &first, &bad), 0);
        const uint32_t ds = Ds(lone.Ctrl(0));
        EXPECT_EQ(ds, Ds(listed.Ctrl(0)));
        EXPECT_EQ(std::memcmp(lone.Bb(0), listed.Bb(0), ds * 16), 0);
        const auto& a = lone.qp.sq.Retire(0);
        const auto& b = listed.qp.sq.Retire(0);
        EXPECT_EQ(a.wr_id, b.wr_id);
        EXPECT_EQ(a.wc_opcode, b.wc_opcode);
        EXPECT_EQ(a.next_post, b.next_post);
        EXPECT_EQ(lone.qp_dbr.snd_counter.host(), a.next_post);
      }
}

TEST(SendQueue, TwoRequestsRingTheEightByteDoorbellOfTheLastWqe) {
  Harness h;
  ibv_sge sge = Sge(0x1000, 8, 1);
  ibv_send_wr w2{};
  w2.opcode = IBV_WR_SEND;
  w2.sg_list = &sge;
  w2.num_sge = 1;
  ibv_send_wr w1 = w2;
  w1.next = &w2;
  ibv_send_wr* bad = nullptr;
  ASSERT_EQ(driver::rings::PostSend(h.ibqp(), &w1, &bad), 0);
  EXPECT_EQ(Index(h.Ctrl(0)), 0u);
  EXPECT_EQ(Index(h.Ctrl(1)), 1u);
  EXPECT_EQ(h.qp_dbr.snd_counter.host(), 2u);
  EXPECT_EQ(h.bus.doorbells, 1);
  std::array<std::byte, 64> expect{};
  std::memcpy(expect.data(), h.Bb(1), 8);
  EXPECT_EQ(std::memcmp(h.bf.reg, expect.data(), 64), 0) << "only the last ctrl's first 8 bytes";
}

TEST(SendQueue, ASingleSegmentWqeAndAnNcRegisterUseTheDoorbell) {
  {
    Harness h;
    ibv_send_wr wr{};
    wr.opcode = IBV_WR_SEND;  // no SGE: ds 1, nothing worth a BlueFlame copy
    ibv_send_wr* bad = nullptr;
    ASSERT_EQ(driver::rings::PostSend(h.ibqp(), &wr, &bad), 0);
    EXPECT_EQ(Ds(h.Ctrl(0)), 1u);
    EXPECT_EQ(std::memcmp(h.bf.reg, h.Bb(0), 8), 0);
    EXPECT_EQ(h.bf.reg[8], std::byte{0});
  }
  {
    Harness h(QpTransport::kRc, 64, 16, /*blueflame=*/false);
    ibv_sge sge = Sge(0x1000, 8, 1);
    ibv_send_wr wr{};
    wr.opcode = IBV_WR_SEND;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    ibv_send_wr* bad = nullptr;
    ASSERT_EQ(driver::rings::PostSend(h.ibqp(), &wr, &bad), 0);
    EXPECT_EQ(std::memcmp(h.bf.reg, h.Bb(0), 8), 0);
    EXPECT_EQ(h.bf.reg[8], std::byte{0}) << "no BlueFlame on a doorbell-only register";
    EXPECT_EQ(h.bf.offset, 0u);
  }
}

TEST(SendQueue, RdmaWriteWithImmAndReadCarryTheRemoteAddress) {
  Harness h;
  ibv_sge sge = Sge(0xa000, 64, 3);
  ibv_send_wr read{};
  read.opcode = IBV_WR_RDMA_READ;
  read.sg_list = &sge;
  read.num_sge = 1;
  read.wr.rdma.remote_addr = 0x1122334455667788ull;
  read.wr.rdma.rkey = 0xbeef;
  ibv_send_wr write = read;
  write.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
  write.imm_data = htobe32(0xdeadbeef);
  write.next = &read;
  ibv_send_wr* bad = nullptr;
  ASSERT_EQ(driver::rings::PostSend(h.ibqp(), &write, &bad), 0);
  for (uint32_t bb : {0u, 1u}) {
    const auto* c = h.Ctrl(bb);
    EXPECT_EQ(Ds(c), 3u);
    const auto* r = At<pod::mlx5_wqe_raddr_seg>(h.Bb(bb) + 16);
    EXPECT_EQ(r->raddr.host(), 0x1122334455667788ull);
    EXPECT_EQ(r->rkey.host(), 0xbeefu);
    EXPECT_EQ(r->reserved.host(), 0u);
    ExpectData(h.Bb(bb) + 32, 64, 3, 0xa000);
  }
  EXPECT_EQ(Opcode(h.Ctrl(0)), prm::MLX5_OPCODE_RDMA_WRITE_IMM);
  EXPECT_EQ(h.Ctrl(0)->imm.raw(), htobe32(0xdeadbeef)) << "imm_data is copied in network order";
  EXPECT_EQ(Opcode(h.Ctrl(1)), prm::MLX5_OPCODE_RDMA_READ);
}

TEST(SendQueue, AtomicsCarryRaddrAtomicAndAnEightByteResultSegment) {
  Harness h;
  ibv_sge sge = Sge(0xb000, 100, 5);  // the SGE's length does not matter: the result is 8 bytes
  ibv_send_wr fa{};
  fa.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
  fa.sg_list = &sge;
  fa.num_sge = 1;
  fa.wr.atomic.remote_addr = 0x5000;
  fa.wr.atomic.rkey = 0x77;
  fa.wr.atomic.compare_add = 3;
  ibv_send_wr cs = fa;
  cs.opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
  cs.wr.atomic.compare_add = 10;
  cs.wr.atomic.swap = 20;
  cs.next = &fa;
  ibv_send_wr* bad = nullptr;
  ASSERT_EQ(driver::rings::PostSend(h.ibqp(), &cs, &bad), 0);
  EXPECT_EQ(Opcode(h.Ctrl(0)), prm::MLX5_OPCODE_ATOMIC_CS);
  EXPECT_EQ(Ds(h.Ctrl(0)), 4u);
  EXPECT_EQ(At<pod::mlx5_wqe_atomic_seg>(h.Bb(0) + 32)->swap_add.host(), 20u);
  EXPECT_EQ(At<pod::mlx5_wqe_atomic_seg>(h.Bb(0) + 32)->compare.host(), 10u);
  ExpectData(h.Bb(0) + 48, 8, 5, 0xb000);
  EXPECT_EQ(Opcode(h.Ctrl(1)), prm::MLX5_OPCODE_ATOMIC_FA);
  EXPECT_EQ(At<pod::mlx5_wqe_atomic_seg>(h.Bb(1) + 32)->swap_add.host(), 3u);
  ExpectData(h.Bb(1) + 48, 8, 5, 0xb000);
}

TEST(SendQueue, SendWithInvalidateCarriesTheKeyBigEndian) {
  Harness h;
  ibv_send_wr wr{};
  wr.opcode = IBV_WR_SEND_WITH_INV;
  wr.invalidate_rkey = 0x01020304;
  ibv_send_wr* bad = nullptr;
  ASSERT_EQ(driver::rings::PostSend(h.ibqp(), &wr, &bad), 0);
  EXPECT_EQ(Opcode(h.Ctrl(0)), prm::MLX5_OPCODE_SEND_INVAL);
  EXPECT_EQ(h.Ctrl(0)->imm.host(), 0x01020304u);
}

TEST(SendQueue, UdSendCopiesTheAddressVectorWithTheRemoteQpAndQkey) {
  Harness h(QpTransport::kUd);
  driver::rings::DataPathAh ah{};
  std::memset(&ah.av, 0xab, sizeof(ah.av));
  ibv_sge sge = Sge(0xc000, 12, 4);
  ibv_send_wr wr{};
  wr.opcode = IBV_WR_SEND;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.wr.ud.ah = &ah.verbs;
  wr.wr.ud.remote_qpn = 0x654321;
  wr.wr.ud.remote_qkey = 0x11111111;
  ibv_send_wr* bad = nullptr;
  ASSERT_EQ(driver::rings::PostSend(h.ibqp(), &wr, &bad), 0);
  EXPECT_EQ(Ds(h.Ctrl(0)), 5u);  // ctrl + av (3) + one data segment
  const auto* av = At<pod::mlx5_wqe_av>(h.Bb(0) + 16);
  EXPECT_EQ(av->key.qkey.qkey.host(), 0x11111111u);
  EXPECT_EQ(av->dqp_dct.host(), prm::MLX5_EXTENDED_UD_AV | 0x654321u);
  EXPECT_EQ(av->rgid[0], 0xab);
  EXPECT_EQ(av->rmac[5], 0xab);
  ExpectData(h.Bb(1), 12, 4, 0xc000);  // data starts in the next basic block
  EXPECT_EQ(h.qp_dbr.snd_counter.host(), 2u);

  wr.opcode = IBV_WR_RDMA_WRITE;
  EXPECT_EQ(driver::rings::PostSend(h.ibqp(), &wr, &bad), EINVAL);
  EXPECT_EQ(bad, &wr);
}

TEST(SendQueue, InlineDataFollowsItsHeaderAndTooLongIsEnomem) {
  Harness h;
  std::vector<uint8_t> a(5, 0x11), b(20, 0x22);
  std::array<ibv_sge, 2> sges{Sge(reinterpret_cast<uint64_t>(a.data()), 5, 0),
                              Sge(reinterpret_cast<uint64_t>(b.data()), 20, 0)};
  ibv_send_wr wr{};
  wr.opcode = IBV_WR_SEND;
  wr.send_flags = IBV_SEND_INLINE;
  wr.sg_list = sges.data();
  wr.num_sge = 2;
  ibv_send_wr* bad = nullptr;
  ASSERT_EQ(driver::rings::PostSend(h.ibqp(), &wr, &bad), 0);
  EXPECT_EQ(Ds(h.Ctrl(0)), 1u + (25 + 4 + 15) / 16);
  EXPECT_EQ(At<pod::mlx5_wqe_inline_seg>(h.Bb(0) + 16)->byte_count.host(),
            prm::MLX5_INLINE_SEG | 25u);
  const std::byte* data = h.Bb(0) + 20;
  EXPECT_EQ(std::memcmp(data, a.data(), 5), 0);
  EXPECT_EQ(std::memcmp(data + 5, b.data(), 20), 0);

  std::vector<uint8_t> big(101, 0x33);
  ibv_sge s = Sge(reinterpret_cast<uint64_t>(big.data()), 101, 0);
  ibv_send_wr too_long{};
  too_long.opcode = IBV_WR_SEND;
  too_long.send_flags = IBV_SEND_INLINE;
  too_long.sg_list = &s;
  too_long.num_sge = 1;
  EXPECT_EQ(driver::rings::PostSend(h.ibqp(), &too_long, &bad), ENOMEM);
  EXPECT_EQ(bad, &too_long);
  EXPECT_EQ(h.qp.sq.cur_post(), 1u) << "nothing of the refused request was posted";
  EXPECT_EQ(h.bus.doorbells, 1);
}

TEST(SendQueue, AWqeCrossingTheRingEndContinuesAtItsStart) {
  Harness h(QpTransport::kRc, /*wqe_cnt=*/8, /*max_post=*/2);
  ibv_send_wr nop{};
  nop.opcode = IBV_WR_SEND;
  ibv_send_wr* bad = nullptr;
  // Seven one-block WQEs, each completed, leave cur_post at block 7: the last of the ring.
  for (uint32_t i = 0; i < 7; ++i) {
    ASSERT_EQ(driver::rings::PostSend(h.ibqp(), &nop, &bad), 0);
    h.qp.sq.Retire(static_cast<uint16_t>(i));
  }
  std::vector<uint8_t> bytes(90);
  for (std::size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>(i + 1);
  ibv_sge sge = Sge(reinterpret_cast<uint64_t>(bytes.data()), 90, 0);
  ibv_send_wr wr{};
  wr.opcode = IBV_WR_SEND;
  wr.send_flags = IBV_SEND_INLINE;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  ASSERT_EQ(driver::rings::PostSend(h.ibqp(), &wr, &bad), 0);
  EXPECT_EQ(Index(h.Ctrl(7)), 7u);
  EXPECT_EQ(Ds(h.Ctrl(7)), 1u + (90 + 4 + 15) / 16);  // 8 units: two blocks
  // 44 bytes fit after the header in block 7; the other 46 start the ring.
  EXPECT_EQ(std::memcmp(h.Bb(7) + 20, bytes.data(), 44), 0);
  EXPECT_EQ(std::memcmp(h.Bb(0), bytes.data() + 44, 46), 0);
  EXPECT_EQ(h.qp_dbr.snd_counter.host(), 9u);
  // The BlueFlame copy follows the wrap too.
  EXPECT_EQ(std::memcmp(h.bf.reg + h.bf.buf_size * 0 + (h.bf.offset ^ h.bf.buf_size), h.Bb(7), 64),
            0);
}

TEST(SendQueue, AFullQueueIsEnomemAtTheFirstRequestThatDoesNotFit) {
  Harness h(QpTransport::kRc, 64, /*max_post=*/3);
  std::array<ibv_send_wr, 5> wrs{};
  for (std::size_t i = 0; i < wrs.size(); ++i) {
    wrs[i].opcode = IBV_WR_SEND;
    wrs[i].wr_id = i;
    wrs[i].next = i + 1 < wrs.size() ? &wrs[i + 1] : nullptr;
  }
  ibv_send_wr* bad = nullptr;
  EXPECT_EQ(driver::rings::PostSend(h.ibqp(), wrs.data(), &bad), ENOMEM);
  EXPECT_EQ(bad, &wrs[3]);
  EXPECT_EQ(h.qp.sq.outstanding(), 3u);
  EXPECT_EQ(h.qp_dbr.snd_counter.host(), 3u) << "the three posted were rung";
  EXPECT_EQ(h.bus.doorbells, 1);
  // A completion of the second retires the first two as well.
  EXPECT_EQ(h.qp.sq.Retire(1).wr_id, 1u);
  EXPECT_EQ(h.qp.sq.outstanding(), 1u);
  EXPECT_EQ(driver::rings::PostSend(h.ibqp(), &wrs[3], &bad), 0);
}

TEST(SendQueue, BadRequestsGetLibmlx5sErrnos) {
  Harness h;
  ibv_sge sges[5] = {};
  ibv_send_wr wr{};
  wr.opcode = IBV_WR_SEND;
  wr.sg_list = sges;
  wr.num_sge = 5;  // max_send_sge is 4
  ibv_send_wr* bad = nullptr;
  EXPECT_EQ(driver::rings::PostSend(h.ibqp(), &wr, &bad), ENOMEM);
  EXPECT_EQ(bad, &wr);
  wr.num_sge = 0;
  wr.opcode = IBV_WR_TSO;
  EXPECT_EQ(driver::rings::PostSend(h.ibqp(), &wr, &bad), EINVAL);
  wr.opcode = static_cast<ibv_wr_opcode>(99);
  EXPECT_EQ(driver::rings::PostSend(h.ibqp(), &wr, &bad), EINVAL);
  // Before RTS only SGE-less requests pass; in RESET nothing does.
  h.qp.sq.SetStateMaxGs(0);
  wr.opcode = IBV_WR_SEND;
  wr.num_sge = 1;
  EXPECT_EQ(driver::rings::PostSend(h.ibqp(), &wr, &bad), ENOMEM);
  wr.num_sge = 0;
  EXPECT_EQ(driver::rings::PostSend(h.ibqp(), &wr, &bad), 0);
  EXPECT_EQ(h.bus.doorbells, 1);

  Harness uc(QpTransport::kUc);
  wr.opcode = IBV_WR_RDMA_READ;
  EXPECT_EQ(driver::rings::PostSend(uc.ibqp(), &wr, &bad), EINVAL);
  wr.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
  EXPECT_EQ(driver::rings::PostSend(uc.ibqp(), &wr, &bad), EINVAL);
  EXPECT_EQ(uc.bus.doorbells, 0);
}

TEST(SendQueue, AtomicsOnAQpWithoutThemAreEopnotsupp) {
  Harness h;
  SendQueueDesc d;
  driver::rings::SendQueue sq;
  prm::Be32 counter;
  d.ring = h.sq_ring.p;
  d.wqe_cnt = 64;
  d.max_post = 8;
  d.db_counter = &counter;
  d.bf = &h.bf;
  d.bus = &h.bus;
  d.max_send_sge = 1;
  d.atomics = false;
  ASSERT_TRUE(sq.Init(d).has_value());
  ibv_send_wr wr{};
  wr.opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
  ibv_send_wr* bad = nullptr;
  EXPECT_EQ(sq.PostSend(&wr, &bad), EOPNOTSUPP);
  EXPECT_EQ(bad, &wr);
}

TEST(SendQueue, BindMwIsTheUmrWqeAndTheNextWqeGetsASmallFence) {
  Harness h;
  ibv_mw mw{};
  mw.rkey = 0x1200;
  mw.type = IBV_MW_TYPE_2;
  ibv_mr mr{};
  mr.lkey = 0x3300;
  ibv_send_wr bind{};
  bind.opcode = IBV_WR_BIND_MW;
  bind.wr_id = 1;
  bind.bind_mw.mw = &mw;
  bind.bind_mw.rkey = 0x1201;
  bind.bind_mw.bind_info = {&mr, 0x7000, 0x100, IBV_ACCESS_REMOTE_WRITE};
  ibv_send_wr after{};
  after.opcode = IBV_WR_SEND;
  bind.next = &after;
  ibv_send_wr* bad = nullptr;
  ASSERT_EQ(driver::rings::PostSend(h.ibqp(), &bind, &bad), 0);

  std::array<std::byte, driver::rings::kUmrBindBytes> expect{};
  driver::rings::UmrRequest req{true, 0x1200, 0x1201, 0x3300, 0x7000, 0x100,
                                IBV_ACCESS_REMOTE_WRITE, kQpn};
  ASSERT_EQ(driver::rings::BuildUmrWqe(req, expect).value(), 192u);
  EXPECT_EQ(std::memcmp(h.Bb(0) + 16, expect.data() + 16, 176), 0);
  EXPECT_EQ(h.Ctrl(0)->opmod_idx_opcode.host(), prm::OpmodIdxOpcode(0, 0, prm::MLX5_OPCODE_UMR));
  EXPECT_EQ(h.Ctrl(0)->qpn_ds.host(), prm::QpnDs(kQpn, 12));
  EXPECT_EQ(h.Ctrl(0)->imm.host(), 0x1200u);
  EXPECT_EQ(Index(h.Ctrl(3)), 3u);  // 192 bytes: three blocks
  EXPECT_EQ(h.Ctrl(3)->fm_ce_se, prm::MLX5_WQE_CTRL_INITIATOR_SMALL_FENCE);

  // LOCAL_INV: a 128-byte invalidate of the named key; a FENCE request overrides the small one.
  ibv_send_wr inv{};
  inv.opcode = IBV_WR_LOCAL_INV;
  inv.invalidate_rkey = 0x1201;
  ibv_send_wr fenced{};
  fenced.opcode = IBV_WR_SEND;
  fenced.send_flags = IBV_SEND_FENCE;
  inv.next = &fenced;
  ASSERT_EQ(driver::rings::PostSend(h.ibqp(), &inv, &bad), 0);
  EXPECT_EQ(Ds(h.Ctrl(4)), 8u);
  EXPECT_EQ(h.Ctrl(4)->imm.host(), 0x1201u);
  EXPECT_EQ(h.Ctrl(6)->fm_ce_se, prm::MLX5_WQE_CTRL_FENCE);

  // A window longer than one KLM cannot be bound.
  bind.next = nullptr;
  bind.bind_mw.bind_info.length = (uint64_t{1} << 31) + 1;
  EXPECT_EQ(driver::rings::PostSend(h.ibqp(), &bind, &bad), EOPNOTSUPP);
}

TEST(SendQueue, SqSigAllSignalsEveryWqe) {
  Harness h;
  SendQueueDesc d;
  driver::rings::SendQueue sq;
  prm::Be32 counter;
  d.ring = h.sq_ring.p;
  d.wqe_cnt = 64;
  d.max_post = 8;
  d.db_counter = &counter;
  d.bf = &h.bf;
  d.bus = &h.bus;
  d.sq_sig_all = true;
  ASSERT_TRUE(sq.Init(d).has_value());
  ibv_send_wr wr{};
  wr.opcode = IBV_WR_SEND;
  ibv_send_wr* bad = nullptr;
  ASSERT_EQ(sq.PostSend(&wr, &bad), 0);
  EXPECT_EQ(h.Ctrl(0)->fm_ce_se, prm::MLX5_WQE_CTRL_CQ_UPDATE);
}

TEST(SendQueue, InitRefusesBadDescriptions) {
  Harness h;
  driver::rings::SendQueue sq;
  SendQueueDesc d;
  EXPECT_EQ(sq.Init(d).error().errno_value(), EINVAL);
  prm::Be32 counter;
  d.ring = h.sq_ring.p;
  d.db_counter = &counter;
  d.bf = &h.bf;
  d.bus = &h.bus;
  d.wqe_cnt = 48;
  d.max_post = 4;
  EXPECT_EQ(sq.Init(d).error().errno_value(), EINVAL) << "not a power of two";
  d.wqe_cnt = 2;
  EXPECT_EQ(sq.Init(d).error().errno_value(), EINVAL) << "a UMR (three blocks) does not fit";
}

TEST(SendQueue, TwoThreadsPostingOnALockedQueueNeverShareAWqe) {
  Harness h(QpTransport::kRc, /*wqe_cnt=*/256, /*max_post=*/256, /*blueflame=*/false);
  constexpr int kEach = 100;
  auto poster = [&](uint64_t base) {
    for (int i = 0; i < kEach; ++i) {
      ibv_send_wr wr{};
      wr.wr_id = base + static_cast<uint64_t>(i);
      wr.opcode = IBV_WR_SEND;
      ibv_send_wr* bad = nullptr;
      EXPECT_EQ(driver::rings::PostSend(h.ibqp(), &wr, &bad), 0);
    }
  };
  std::thread a(poster, 1000), b(poster, 2000);
  a.join();
  b.join();
  EXPECT_EQ(h.qp.sq.cur_post(), 2u * kEach);
  EXPECT_EQ(h.qp_dbr.snd_counter.host(), 2u * kEach);
  std::set<uint64_t> ids;
  for (uint32_t i = 0; i < 2 * kEach; ++i) {
    EXPECT_EQ(Index(h.Ctrl(i)), i);
    ids.insert(h.qp.sq.Retire(static_cast<uint16_t>(i)).wr_id);
  }
  EXPECT_EQ(ids.size(), 2u * kEach);
  EXPECT_EQ(h.bus.doorbells, 2 * kEach);
}

// ---- the extended API ----

TEST(WrApi, SendWithSgeBuildsTheSameWqeAsPostSend) {
  Harness a, b;
  ASSERT_TRUE(driver::rings::InstallWrOps(b.qpx(), IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_RDMA_WRITE,
                                          QpTransport::kRc)
                  .has_value());
  ibv_sge sge = Sge(0x1000, 16, 2);
  ibv_send_wr wr{};
  wr.wr_id = 5;
  wr.opcode = IBV_WR_SEND;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  ibv_send_wr* bad = nullptr;
  ASSERT_EQ(driver::rings::PostSend(a.ibqp(), &wr, &bad), 0);

  ibv_qp_ex* qpx = b.qpx();
  ibv_wr_start(qpx);
  qpx->wr_id = 5;
  qpx->wr_flags = IBV_SEND_SIGNALED;
  ibv_wr_send(qpx);
  ibv_wr_set_sge(qpx, 2, 0x1000, 16);
  ASSERT_EQ(ibv_wr_complete(qpx), 0);
  EXPECT_EQ(std::memcmp(a.Bb(0), b.Bb(0), 64), 0);
  EXPECT_EQ(b.qp_dbr.snd_counter.host(), 1u);
  EXPECT_EQ(b.bus.doorbells, 1);
  EXPECT_EQ(b.qp.sq.Retire(0).wr_id, 5u);
}

TEST(WrApi, ErrorsRollTheBatchBackAndAbortPostsNothing) {
  Harness h;
  ASSERT_TRUE(driver::rings::InstallWrOps(h.qpx(), IBV_QP_EX_WITH_SEND, QpTransport::kRc)
                  .has_value());
  ibv_qp_ex* qpx = h.qpx();
  std::vector<uint8_t> big(200);
  ibv_wr_start(qpx);
  ibv_wr_send(qpx);
  ibv_wr_set_sge(qpx, 1, 0x1000, 8);
  ibv_wr_send(qpx);
  ibv_wr_set_inline_data(qpx, big.data(), big.size());  // above max_inline_data
  EXPECT_EQ(ibv_wr_complete(qpx), ENOMEM);
  EXPECT_EQ(h.qp.sq.cur_post(), 0u);
  EXPECT_EQ(h.bus.doorbells, 0);

  ibv_wr_start(qpx);
  ibv_wr_send(qpx);
  ibv_wr_set_sge(qpx, 1, 0x1000, 8);
  ibv_wr_abort(qpx);
  EXPECT_EQ(h.qp.sq.cur_post(), 0u);
  EXPECT_EQ(h.bus.doorbells, 0);

  // With the gate closed (RESET, or before RTS) every batch is EINVAL and posts nothing.
  h.qp.sq.SetStateMaxGs(-1);
  ibv_wr_start(qpx);
  ibv_wr_send(qpx);
  ibv_wr_set_sge_list(qpx, 0, nullptr);
  EXPECT_EQ(ibv_wr_complete(qpx), EINVAL);
  EXPECT_EQ(h.qp.sq.cur_post(), 0u);
  h.qp.sq.SetStateMaxGs(4);

  // A request left without its data fails the batch.
  ibv_wr_start(qpx);
  ibv_wr_send(qpx);
  EXPECT_EQ(ibv_wr_complete(qpx), EINVAL);
  EXPECT_EQ(h.qp.sq.cur_post(), 0u);
}

TEST(WrApi, UdAddressAndDataInEitherOrder) {
  Harness h(QpTransport::kUd);
  ASSERT_TRUE(driver::rings::InstallWrOps(h.qpx(), IBV_QP_EX_WITH_SEND, QpTransport::kUd)
                  .has_value());
  EXPECT_FALSE(driver::rings::InstallWrOps(h.qpx(), IBV_QP_EX_WITH_RDMA_WRITE, QpTransport::kUd)
                   .has_value());
  driver::rings::DataPathAh ah{};
  ibv_qp_ex* qpx = h.qpx();
  ibv_wr_start(qpx);
  ibv_wr_send(qpx);
  ibv_wr_set_sge(qpx, 9, 0x9000, 4);
  ibv_wr_set_ud_addr(qpx, &ah.verbs, 0x42, 0x99);
  ASSERT_EQ(ibv_wr_complete(qpx), 0);
  EXPECT_EQ(Ds(h.Ctrl(0)), 5u);
  EXPECT_EQ(At<pod::mlx5_wqe_av>(h.Bb(0) + 16)->dqp_dct.host(), prm::MLX5_EXTENDED_UD_AV | 0x42u);
  ExpectData(h.Bb(1), 4, 9, 0x9000);
}

TEST(WrApi, AtomicsBindAndLocalInvalidate) {
  Harness h;
  ASSERT_TRUE(driver::rings::InstallWrOps(h.qpx(),
                                          IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |
                                              IBV_QP_EX_WITH_BIND_MW | IBV_QP_EX_WITH_LOCAL_INV,
                                          QpTransport::kRc)
                  .has_value());
  ibv_qp_ex* qpx = h.qpx();
  ibv_mw mw{};
  mw.rkey = 0x500;
  ibv_mr mr{};
  mr.lkey = 0x600;
  const ibv_mw_bind_info info{&mr, 0x8000, 0x40, IBV_ACCESS_REMOTE_READ};
  ibv_wr_start(qpx);
  ibv_wr_atomic_cmp_swp(qpx, 0x10, 0x2000, 1, 2);
  ibv_wr_set_sge(qpx, 3, 0x3000, 64);
  ibv_wr_bind_mw(qpx, &mw, 0x501, &info);
  ibv_wr_local_inv(qpx, 0x501);
  ASSERT_EQ(ibv_wr_complete(qpx), 0);
  EXPECT_EQ(Opcode(h.Ctrl(0)), prm::MLX5_OPCODE_ATOMIC_CS);
  ExpectData(h.Bb(0) + 48, 8, 3, 0x3000);
  EXPECT_EQ(Opcode(h.Ctrl(1)), prm::MLX5_OPCODE_UMR);
  EXPECT_EQ(Ds(h.Ctrl(1)), 12u);
  EXPECT_EQ(Opcode(h.Ctrl(4)), prm::MLX5_OPCODE_UMR);
  EXPECT_EQ(h.Ctrl(4)->fm_ce_se, prm::MLX5_WQE_CTRL_INITIATOR_SMALL_FENCE);
  EXPECT_EQ(h.qp_dbr.snd_counter.host(), 6u);
  EXPECT_EQ(h.qp.sq.Retire(4).wc_opcode, IBV_WC_LOCAL_INV);
}

}  // namespace
}  // namespace onchip::rings_test

namespace onchip::rings_test {
namespace {

// A function that is gone (its daemon died) takes no more work on either post path: EIO, bad_wr
// at the first request, nothing written and no doorbell.
TEST(GoneFunction, PostSendAndWrCompleteAnswerEioAndRingNothing) {
  Harness h;
  ASSERT_TRUE(driver::rings::InstallWrOps(h.qpx(), IBV_QP_EX_WITH_SEND, QpTransport::kRc)
                  .has_value());
  h.bus.MarkGone();
  ibv_sge sge = Sge(0x1000, 16, 2);
  ibv_send_wr wr{};
  wr.opcode = IBV_WR_SEND;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  ibv_send_wr* bad = nullptr;
  EXPECT_EQ(driver::rings::PostSend(h.ibqp(), &wr, &bad), EIO);
  EXPECT_EQ(bad, &wr);
  ibv_qp_ex* qpx = h.qpx();
  ibv_wr_start(qpx);
  ibv_wr_send(qpx);
  ibv_wr_set_sge(qpx, 2, 0x1000, 16);
  EXPECT_EQ(ibv_wr_complete(qpx), EIO);
  ibv_recv_wr rwr{};
  rwr.sg_list = &sge;
  rwr.num_sge = 1;
  ibv_recv_wr* rbad = nullptr;
  EXPECT_EQ(driver::rings::PostRecv(h.ibqp(), &rwr, &rbad), EIO);
  EXPECT_EQ(rbad, &rwr);
  EXPECT_EQ(h.qp.sq.cur_post(), 0u);
  EXPECT_EQ(h.qp_dbr.snd_counter.host(), 0u);
  EXPECT_EQ(h.bus.doorbells, 0);
}

}  // namespace
}  // namespace onchip::rings_test
