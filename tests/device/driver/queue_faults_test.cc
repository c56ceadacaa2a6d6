// Firmware failures on every command of the queue objects (EQ at bring-up, CQ, QP and each of its
// transitions, SRQ, XRC domain, XRC SRQ): the verb answers with the errno the kernel maps the status to, and afterwards
// the device and the driver hold exactly what they held before the call (objects, DMA mappings,
// pages, mkeys). A failed destroy leaves the object usable and the destroy retryable; a failed
// transition leaves the QP in the state it was in.
#include <gtest/gtest.h>
#include <infiniband/verbs.h>

#include <fcntl.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <string>
#include <tuple>

#include "driver/cmd/commander.h"
#include "driver/rings/data_path.h"
#include "tests/device/fixture.h"
#include "uapi/cmd_status.h"

namespace onchip::testing {
namespace {

using prm::CommandStatus;

constexpr uint32_t kSyndrome = 0x5eed0017;

// What a failed call must leave exactly as it found it.
struct Held {
  sim::Counters device;
  std::size_t dma_mappings;

  bool operator==(const Held& o) const {
    const auto& a = device;
    const auto& b = o.device;
    return std::tie(a.uars, a.pds, a.transport_domains, a.xrcds, a.mkeys, a.memic_allocations,
                    a.sw_icm_objects, a.eqs, a.cqs, a.qps, a.srqs, a.pages_held, dma_mappings) ==
           std::tie(b.uars, b.pds, b.transport_domains, b.xrcds, b.mkeys, b.memic_allocations,
                    b.sw_icm_objects, b.eqs, b.cqs, b.qps, b.srqs, b.pages_held, o.dma_mappings);
  }
};

std::string Describe(const Held& h) {
  const auto& c = h.device;
  return "uars " + std::to_string(c.uars) + " pds " + std::to_string(c.pds) + " mkeys " +
         std::to_string(c.mkeys) + " eqs " + std::to_string(c.eqs) + " cqs " +
         std::to_string(c.cqs) + " qps " + std::to_string(c.qps) + " srqs " +
         std::to_string(c.srqs) + " xrcds " + std::to_string(c.xrcds) + " pages " + std::to_string(c.pages_held) + " dma " +
         std::to_string(h.dma_mappings);
}

class QueueFaults : public DriverPdTest {
 protected:
  Held Now() const { return {sim_->counters(), sim_->dma_mappings()}; }
  void Inject(uint16_t opcode, CommandStatus status = CommandStatus::INT_ERR) {
    sim_->InjectFailure({.count = 1, .opcode = opcode, .status = status, .syndrome = kSyndrome});
  }
  uint64_t Refused(uint16_t opcode) const {
    const auto c = sim_->counters();
    const auto it = c.by_opcode.find(opcode);
    return it == c.by_opcode.end() ? 0 : it->second;
  }

  ibv_cq* Cq() {
    ibv_cq* cq = v::create_cq(verbs_, 32, nullptr, 0);
    EXPECT_NE(cq, nullptr) << strerror(errno);
    return cq;
  }
  ibv_qp* Qp(ibv_cq* cq, ibv_qp_type type, ibv_srq* srq = nullptr) {
    ibv_qp_init_attr a{};
    a.send_cq = cq;
    a.recv_cq = cq;
    a.srq = srq;
    a.qp_type = type;
    a.cap = {.max_send_wr = 8, .max_recv_wr = srq ? 0u : 8u, .max_send_sge = 1,
             .max_recv_sge = srq ? 0u : 1u, .max_inline_data = 0};
    return v::create_qp(pd_, &a);
  }
  // An XRC domain of no file (fd -1, O_CREAT).
  ibv_xrcd* AnonymousXrcd() {
    ibv_xrcd_init_attr a{};
    a.comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS;
    a.fd = -1;
    a.oflags = O_CREAT;
    return v::open_xrcd(verbs_, &a);
  }
  ibv_srq* Srq() {
    ibv_srq_init_attr a{};
    a.attr = {.max_wr = 16, .max_sge = 1, .srq_limit = 0};
    return v::create_srq(pd_, &a);
  }

  // The attributes of each forward transition of an RC QP.
  static int Modify(ibv_qp* qp, ibv_qp_state to) {
    ibv_qp_attr a{};
    a.qp_state = to;
    int mask = IBV_QP_STATE;
    switch (to) {
      case IBV_QPS_INIT:
        a.port_num = 1;
        a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
        mask |= IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
        break;
      case IBV_QPS_RTR:
        a.path_mtu = IBV_MTU_1024;
        a.dest_qp_num = qp->qp_num;
        a.max_dest_rd_atomic = 1;
        a.min_rnr_timer = 12;
        a.ah_attr.is_global = 1;
        a.ah_attr.port_num = 1;
        a.ah_attr.grh.hop_limit = 64;
        a.ah_attr.grh.dgid.raw[10] = 0xff;
        a.ah_attr.grh.dgid.raw[11] = 0xff;
        a.ah_attr.grh.dgid.raw[12] = 127;
        a.ah_attr.grh.dgid.raw[15] = 1;
        mask |= IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
        break;
      case IBV_QPS_RTS:
        if (qp->state == IBV_QPS_RTS) {  // RTS2RTS: an optional attribute only
          a.min_rnr_timer = 14;
          mask |= IBV_QP_MIN_RNR_TIMER;
          break;
        }
        a.timeout = 14;
        a.retry_cnt = 7;
        a.rnr_retry = 7;
        a.max_rd_atomic = 1;
        mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
                IBV_QP_MAX_QP_RD_ATOMIC;
        break;
      default:
        break;
    }
    return v::modify_qp(qp, &a, mask);
  }
  static ibv_qp_state QueriedState(ibv_qp* qp) {
    ibv_qp_attr a{};
    ibv_qp_init_attr init{};
    EXPECT_EQ(v::query_qp(qp, &a, IBV_QP_STATE, &init), 0);
    return a.qp_state;
  }
};

// ---- creation: the errno the status maps to, and nothing held afterwards ----

class CreateFault : public QueueFaults,
                    public ::testing::WithParamInterface<std::tuple<uint16_t, CommandStatus>> {};

TEST_P(CreateFault, ReturnsTheMappedErrnoAndHoldsNothingMore) {
  const auto [opcode, status] = GetParam();
  const int expected = prm::CommandStatusErrno(static_cast<uint8_t>(status));
  ibv_cq* cq = opcode == prm::CREATE_CQ ? nullptr : Cq();
  const Held before = Now();
  Inject(opcode, status);
  errno = 0;
  switch (opcode) {
    case prm::CREATE_CQ:
      EXPECT_EQ(v::create_cq(verbs_, 32, nullptr, 0), nullptr);
      break;
    case prm::CREATE_QP:
      EXPECT_EQ(Qp(cq, IBV_QPT_RC), nullptr);
      break;
    case prm::CREATE_SRQ:
      EXPECT_EQ(Srq(), nullptr);
      break;
  }
  EXPECT_EQ(errno, expected) << driver::cmd::OpcodeName(opcode) << ": " << strerror(errno);
  EXPECT_EQ(Refused(opcode), 1u);
  const Held after = Now();
  EXPECT_EQ(after, before) << "before: " << Describe(before) << "\nafter:  " << Describe(after);
  // The same call succeeds once the firmware does.
  switch (opcode) {
    case prm::CREATE_CQ: {
      ibv_cq* again = Cq();
      ASSERT_NE(again, nullptr);
      EXPECT_EQ(v::destroy_cq(again), 0);
      break;
    }
    case prm::CREATE_QP: {
      ibv_qp* again = Qp(cq, IBV_QPT_RC);
      ASSERT_NE(again, nullptr) << strerror(errno);
      EXPECT_EQ(v::destroy_qp(again), 0);
      break;
    }
    case prm::CREATE_SRQ: {
      ibv_srq* again = Srq();
      ASSERT_NE(again, nullptr) << strerror(errno);
      EXPECT_EQ(v::destroy_srq(again), 0);
      break;
    }
  }
  if (cq != nullptr) {
    EXPECT_EQ(v::destroy_cq(cq), 0);
  }
}

INSTANTIATE_TEST_SUITE_P(
    EveryCreate, CreateFault,
    ::testing::Combine(::testing::Values(prm::CREATE_CQ, prm::CREATE_QP, prm::CREATE_SRQ),
                       ::testing::Values(CommandStatus::INT_ERR, CommandStatus::BAD_PARAM_ERR,
                                         CommandStatus::LIM_ERR, CommandStatus::NO_RES_ERR)),
    [](const auto& p) {
      return std::string(driver::cmd::OpcodeName(std::get<0>(p.param))) + "_" +
             prm::CommandStatusName(static_cast<uint8_t>(std::get<1>(p.param)));
    });

TEST_F(QueueFaults, CreateQpFailsForEveryTransport) {
  ibv_cq* cq = Cq();
  for (ibv_qp_type type : {IBV_QPT_RC, IBV_QPT_UC, IBV_QPT_UD}) {
    const Held before = Now();
    Inject(prm::CREATE_QP);
    errno = 0;
    EXPECT_EQ(Qp(cq, type), nullptr) << type;
    EXPECT_EQ(errno, EIO) << type;
    EXPECT_EQ(Now(), before) << type;
  }
  EXPECT_EQ(v::destroy_cq(cq), 0);
}

TEST_F(QueueFaults, CreateQpOnAnSrqFailsCleanly) {
  ibv_cq* cq = Cq();
  ibv_srq* srq = Srq();
  ASSERT_NE(srq, nullptr);
  const Held before = Now();
  Inject(prm::CREATE_QP);
  errno = 0;
  EXPECT_EQ(Qp(cq, IBV_QPT_RC, srq), nullptr);
  EXPECT_EQ(errno, EIO);
  EXPECT_EQ(Now(), before);
  // The failed QP did not keep the SRQ or the CQ pinned.
  EXPECT_EQ(v::destroy_srq(srq), 0);
  EXPECT_EQ(v::destroy_cq(cq), 0);
}

// ---- transitions: EIO, the state it was in, and the same transition works afterwards ----

class TransitionFault : public QueueFaults,
                        public ::testing::WithParamInterface<std::tuple<uint16_t, ibv_qp_state>> {};

TEST_P(TransitionFault, LeavesTheQpWhereItWas) {
  const auto [opcode, target] = GetParam();
  ibv_cq* cq = Cq();
  ibv_qp* qp = Qp(cq, IBV_QPT_RC);
  ASSERT_NE(qp, nullptr);
  // Walk to the state the transition starts from.
  const ibv_qp_state path[] = {IBV_QPS_INIT, IBV_QPS_RTR, IBV_QPS_RTS};
  ibv_qp_state from = IBV_QPS_RESET;
  switch (opcode) {
    case prm::RST2INIT_QP: from = IBV_QPS_RESET; break;
    case prm::INIT2INIT_QP:
    case prm::INIT2RTR_QP: from = IBV_QPS_INIT; break;
    case prm::RTR2RTS_QP: from = IBV_QPS_RTR; break;
    default: from = IBV_QPS_RTS; break;
  }
  for (ibv_qp_state s : path) {
    if (from == IBV_QPS_RESET) break;
    ASSERT_EQ(Modify(qp, s), 0) << s;
    if (s == from) break;
  }
  ASSERT_EQ(qp->state, from);
  const Held before = Now();
  Inject(opcode);
  EXPECT_EQ(Modify(qp, target), EIO) << driver::cmd::OpcodeName(opcode);
  EXPECT_EQ(Refused(opcode), 1u) << "the transition never reached " << driver::cmd::OpcodeName(opcode);
  EXPECT_EQ(qp->state, from);
  EXPECT_EQ(QueriedState(qp), from);
  EXPECT_EQ(Now(), before);
  EXPECT_EQ(Modify(qp, target), 0) << driver::cmd::OpcodeName(opcode);
  EXPECT_EQ(QueriedState(qp), target);
  EXPECT_EQ(v::destroy_qp(qp), 0);
  EXPECT_EQ(v::destroy_cq(cq), 0);
}

INSTANTIATE_TEST_SUITE_P(
    EveryTransition, TransitionFault,
    ::testing::Values(std::make_tuple(prm::RST2INIT_QP, IBV_QPS_INIT),
                      std::make_tuple(prm::INIT2INIT_QP, IBV_QPS_INIT),
                      std::make_tuple(prm::INIT2RTR_QP, IBV_QPS_RTR),
                      std::make_tuple(prm::RTR2RTS_QP, IBV_QPS_RTS),
                      std::make_tuple(prm::RTS2RTS_QP, IBV_QPS_RTS),
                      std::make_tuple(prm::QP_2ERR, IBV_QPS_ERR),
                      std::make_tuple(prm::QP_2RST, IBV_QPS_RESET)),
    [](const auto& p) { return std::string(driver::cmd::OpcodeName(std::get<0>(p.param))); });

TEST_F(QueueFaults, QueryQpFailureIsEio) {
  ibv_cq* cq = Cq();
  ibv_qp* qp = Qp(cq, IBV_QPT_UD);
  ASSERT_NE(qp, nullptr);
  Inject(prm::QUERY_QP);
  ibv_qp_attr a{};
  ibv_qp_init_attr init{};
  EXPECT_EQ(v::query_qp(qp, &a, IBV_QP_STATE, &init), EIO);
  EXPECT_EQ(QueriedState(qp), IBV_QPS_RESET);
  EXPECT_EQ(v::destroy_qp(qp), 0);
  EXPECT_EQ(v::destroy_cq(cq), 0);
}

// ---- destruction: EIO, the object still there and usable, the destroy retryable ----

TEST_F(QueueFaults, DestroyQpFailureKeepsTheQpAndItsPins) {
  ibv_cq* cq = Cq();
  ibv_qp* qp = Qp(cq, IBV_QPT_RC);
  ASSERT_NE(qp, nullptr);
  ASSERT_EQ(Modify(qp, IBV_QPS_INIT), 0);
  const Held before = Now();
  Inject(prm::DESTROY_QP);
  EXPECT_EQ(v::destroy_qp(qp), EIO);
  EXPECT_EQ(Now(), before);
  EXPECT_EQ(QueriedState(qp), IBV_QPS_INIT);
  EXPECT_EQ(v::destroy_cq(cq), EBUSY) << "the QP still names the CQ";
  EXPECT_EQ(v::destroy_qp(qp), 0);
  EXPECT_EQ(v::destroy_cq(cq), 0);
}

TEST_F(QueueFaults, DestroyCqFailureKeepsTheCqPollable) {
  ibv_cq* cq = Cq();
  const Held before = Now();
  Inject(prm::DESTROY_CQ);
  EXPECT_EQ(v::destroy_cq(cq), EIO);
  EXPECT_EQ(Now(), before);
  ibv_wc wc{};
  EXPECT_EQ(driver::rings::PollCq(cq, 1, &wc), 0);
  EXPECT_EQ(driver::rings::ReqNotifyCq(cq, 0), 0);
  EXPECT_EQ(v::destroy_cq(cq), 0);
}

TEST_F(QueueFaults, SrqCommandFailures) {
  ibv_srq* srq = Srq();
  ASSERT_NE(srq, nullptr);
  const Held before = Now();

  Inject(prm::ARM_RQ);
  ibv_srq_attr limit{.max_wr = 0, .max_sge = 0, .srq_limit = 4};
  EXPECT_EQ(v::modify_srq(srq, &limit, IBV_SRQ_LIMIT), EIO);
  EXPECT_EQ(Refused(prm::ARM_RQ), 1u);

  Inject(prm::QUERY_SRQ);
  ibv_srq_attr queried{};
  EXPECT_EQ(v::query_srq(srq, &queried), EIO);
  EXPECT_EQ(v::query_srq(srq, &queried), 0);
  EXPECT_EQ(queried.srq_limit, 0u) << "a failed ARM_RQ must not change the limit";
  EXPECT_EQ(v::modify_srq(srq, &limit, IBV_SRQ_LIMIT), 0);

  Inject(prm::DESTROY_SRQ);
  EXPECT_EQ(v::destroy_srq(srq), EIO);
  EXPECT_EQ(Now(), before);
  ibv_recv_wr wr{};
  ibv_recv_wr* bad = nullptr;
  EXPECT_EQ(driver::rings::PostSrqRecv(srq, &wr, &bad), 0) << "the SRQ still takes receives";
  EXPECT_EQ(v::destroy_srq(srq), 0);
}

// ---- XRC: every command of domains, XRC SRQs and XRC QPs ----

class XrcFault : public QueueFaults,
                 public ::testing::WithParamInterface<std::tuple<uint16_t, CommandStatus>> {
 protected:
  ibv_xrcd* Xrcd() { return AnonymousXrcd(); }
  ibv_srq* XrcSrq(ibv_xrcd* xrcd, ibv_cq* cq) {
    ibv_srq_init_attr_ex a{};
    a.attr = {.max_wr = 16, .max_sge = 1, .srq_limit = 0};
    a.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD | IBV_SRQ_INIT_ATTR_XRCD |
                  IBV_SRQ_INIT_ATTR_CQ;
    a.srq_type = IBV_SRQT_XRC;
    a.pd = pd_;
    a.xrcd = xrcd;
    a.cq = cq;
    return v::create_srq_ex(verbs_, &a);
  }
  ibv_qp* XrcQp(ibv_qp_type type, ibv_xrcd* xrcd, ibv_cq* cq) {
    ibv_qp_init_attr_ex a{};
    a.qp_type = type;
    if (type == IBV_QPT_XRC_RECV) {
      a.comp_mask = IBV_QP_INIT_ATTR_XRCD;
      a.xrcd = xrcd;
    } else {
      a.comp_mask = IBV_QP_INIT_ATTR_PD;
      a.pd = pd_;
      a.send_cq = cq;
      a.cap.max_send_wr = 4;
      a.cap.max_send_sge = 1;
    }
    return v::create_qp_ex(verbs_, &a);
  }
};

// Each creating command fails with each status: the mapped errno, nothing more held, and the
// same call succeeds once the firmware does (CREATE_QP for both XRC QP types).
TEST_P(XrcFault, CreationReturnsTheMappedErrnoAndHoldsNothingMore) {
  const auto [opcode, status] = GetParam();
  const int expected = prm::CommandStatusErrno(static_cast<uint8_t>(status));
  ibv_cq* cq = Cq();
  ibv_xrcd* xrcd = opcode == prm::ALLOC_XRCD ? nullptr : Xrcd();
  ASSERT_TRUE(cq && (xrcd || opcode == prm::ALLOC_XRCD));
  for (ibv_qp_type type : {IBV_QPT_XRC_RECV, IBV_QPT_XRC_SEND}) {
    if (opcode != prm::CREATE_QP && type == IBV_QPT_XRC_SEND) break;  // one round is enough
    const Held before = Now();
    const uint64_t refused = Refused(opcode);
    Inject(opcode, status);
    errno = 0;
    switch (opcode) {
      case prm::ALLOC_XRCD: EXPECT_EQ(Xrcd(), nullptr); break;
      case prm::CREATE_XRC_SRQ: EXPECT_EQ(XrcSrq(xrcd, cq), nullptr); break;
      case prm::CREATE_QP: EXPECT_EQ(XrcQp(type, xrcd, cq), nullptr); break;
    }
    EXPECT_EQ(errno, expected) << driver::cmd::OpcodeName(opcode) << ": " << strerror(errno);
    EXPECT_EQ(Refused(opcode), refused + 1);
    const Held after = Now();
    EXPECT_EQ(after, before) << "before: " << Describe(before) << "\nafter:  " << Describe(after);
    switch (opcode) {
      case prm::ALLOC_XRCD: {
        ibv_xrcd* again = Xrcd();
        ASSERT_NE(again, nullptr);
        EXPECT_EQ(v::close_xrcd(again), 0);
        break;
      }
      case prm::CREATE_XRC_SRQ: {
        ibv_srq* again = XrcSrq(xrcd, cq);
        ASSERT_NE(again, nullptr);
        EXPECT_EQ(v::destroy_srq(again), 0);
        break;
      }
      case prm::CREATE_QP: {
        ibv_qp* again = XrcQp(type, xrcd, cq);
        ASSERT_NE(again, nullptr);
        EXPECT_EQ(v::destroy_qp(again), 0);
        break;
      }
    }
  }
  if (xrcd) {
    EXPECT_EQ(v::close_xrcd(xrcd), 0);
  }
  EXPECT_EQ(v::destroy_cq(cq), 0);
}

INSTANTIATE_TEST_SUITE_P(
    EveryXrcCreate, XrcFault,
    ::testing::Combine(::testing::Values(prm::ALLOC_XRCD, prm::CREATE_XRC_SRQ, prm::CREATE_QP),
                       ::testing::Values(CommandStatus::INT_ERR, CommandStatus::BAD_PARAM_ERR,
                                         CommandStatus::BAD_RES_ERR, CommandStatus::NO_RES_ERR)),
    [](const auto& p) {
      return std::string(driver::cmd::OpcodeName(std::get<0>(p.param))) + "_" +
             prm::CommandStatusName(static_cast<uint8_t>(std::get<1>(p.param)));
    });

// The other XRC commands: modify, query and destroy fail with EIO and change nothing; a failed
// destroy or close leaves the object usable and the call retryable.
TEST_F(QueueFaults, XrcCommandFailures) {
  ibv_cq* cq = Cq();
  ibv_xrcd* xrcd = AnonymousXrcd();
  ASSERT_TRUE(cq && xrcd);
  ibv_srq_init_attr_ex sa{};
  sa.attr = {.max_wr = 16, .max_sge = 1, .srq_limit = 0};
  sa.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD | IBV_SRQ_INIT_ATTR_XRCD |
                 IBV_SRQ_INIT_ATTR_CQ;
  sa.srq_type = IBV_SRQT_XRC;
  sa.pd = pd_;
  sa.xrcd = xrcd;
  sa.cq = cq;
  ibv_srq* srq = v::create_srq_ex(verbs_, &sa);
  ASSERT_NE(srq, nullptr);
  const Held before = Now();

  Inject(prm::ARM_XRC_SRQ);
  ibv_srq_attr limit{.max_wr = 0, .max_sge = 0, .srq_limit = 4};
  EXPECT_EQ(v::modify_srq(srq, &limit, IBV_SRQ_LIMIT), EIO);
  EXPECT_EQ(Refused(prm::ARM_XRC_SRQ), 1u);
  Inject(prm::QUERY_XRC_SRQ);
  ibv_srq_attr queried{};
  EXPECT_EQ(v::query_srq(srq, &queried), EIO);
  EXPECT_EQ(v::query_srq(srq, &queried), 0);
  EXPECT_EQ(queried.srq_limit, 0u) << "a failed ARM_XRC_SRQ must not change the limit";

  Inject(prm::DESTROY_XRC_SRQ);
  EXPECT_EQ(v::destroy_srq(srq), EIO);
  EXPECT_EQ(Now(), before);
  ibv_recv_wr wr{};
  ibv_recv_wr* bad = nullptr;
  EXPECT_EQ(driver::rings::PostSrqRecv(srq, &wr, &bad), 0) << "the SRQ still takes receives";
  EXPECT_EQ(v::close_xrcd(xrcd), EBUSY) << "the SRQ still pins its domain";
  EXPECT_EQ(v::destroy_srq(srq), 0);

  Inject(prm::DEALLOC_XRCD);
  const Held open = Now();
  EXPECT_EQ(v::close_xrcd(xrcd), EIO);
  EXPECT_EQ(Now(), open);
  EXPECT_EQ(v::close_xrcd(xrcd), 0);
  EXPECT_EQ(v::destroy_cq(cq), 0);
}

// ---- bring-up: the completion EQ ----

TEST(QueueBringUpFault, CreateEqFailureLeavesTheDeviceEmpty) {
  auto sim = MakeDevice();
  sim->InjectFailure({.count = 1, .opcode = prm::CREATE_EQ, .status = CommandStatus::INT_ERR,
                      .syndrome = kSyndrome});
  auto ctx = Context::Open(driver::Locator::Of(*sim));
  ASSERT_FALSE(ctx) << "bring-up survived a failed CREATE_EQ";
  EXPECT_EQ(ctx.error().errno_value(), EIO) << ctx.error().describe();
  ASSERT_TRUE(ctx.error().from_firmware());
  EXPECT_EQ(ctx.error().firmware().opcode, prm::CREATE_EQ);
  EXPECT_EQ(sim->firmware().state(), sim::HcaState::kDisabled);
  ExpectNothingHeld(*sim);
  EXPECT_EQ(sim->dma_mappings(), 0u);
  auto again = Context::Open(driver::Locator::Of(*sim));
  ASSERT_TRUE(again) << again.error().describe();
}

// Close() with every destroy of a child failing: the teardown goes on, the first failure is
// reported, the device ends up holding nothing, and the application's handles are all freed
// afterwards (children first), none kept busy by a parent pin that a failed release forgot.
TEST(QueueTeardownFault, FailedDestroysAtCloseStillFreeEverything) {
  auto sim = MakeDevice();
  auto opened = Context::Open(driver::Locator::Of(*sim));
  ASSERT_TRUE(opened);
  auto ctx = std::make_unique<Context>(std::move(*opened));
  ibv_context* verbs = ctx->verbs();
  ibv_pd* pd = v::alloc_pd(verbs);
  ibv_cq* cq = v::create_cq(verbs, 16, nullptr, 0);
  ASSERT_TRUE(pd && cq);
  ibv_srq_init_attr sa{};
  sa.attr = {.max_wr = 8, .max_sge = 1, .srq_limit = 0};
  ibv_srq* srq = v::create_srq(pd, &sa);
  ASSERT_NE(srq, nullptr);
  ibv_qp_init_attr a{};
  a.send_cq = cq;
  a.recv_cq = cq;
  a.srq = srq;
  a.qp_type = IBV_QPT_RC;
  a.cap = {.max_send_wr = 4, .max_recv_wr = 0, .max_send_sge = 1, .max_recv_sge = 0,
           .max_inline_data = 0};
  ibv_qp* qp = v::create_qp(pd, &a);
  ASSERT_NE(qp, nullptr);
  static std::byte buffer[8192];
  ibv_mr* mr = v::reg_mr(pd, buffer, sizeof(buffer), reinterpret_cast<uintptr_t>(buffer),
                         IBV_ACCESS_LOCAL_WRITE);
  ibv_mw* mw = v::alloc_mw(pd, IBV_MW_TYPE_2);
  ASSERT_TRUE(mr && mw);
  for (uint16_t opcode : {prm::DESTROY_QP, prm::DESTROY_SRQ, prm::DESTROY_MKEY, prm::DESTROY_MKEY})
    sim->InjectFailure({.count = 1, .opcode = opcode, .status = CommandStatus::INT_ERR,
                        .syndrome = kSyndrome});
  const auto report = ctx->Close();
  ASSERT_TRUE(report.first_error);
  EXPECT_EQ(report.first_error->firmware().status, static_cast<uint8_t>(CommandStatus::INT_ERR))
      << report.describe();
  EXPECT_EQ(sim->firmware().state(), sim::HcaState::kDisabled);
  ExpectNothingHeld(*sim);
  EXPECT_EQ(v::destroy_qp(qp), 0);
  EXPECT_EQ(v::dealloc_mw(mw), 0);
  EXPECT_EQ(v::dereg_mr(mr), 0);
  EXPECT_EQ(v::destroy_srq(srq), 0);
  EXPECT_EQ(v::destroy_cq(cq), 0);
  EXPECT_EQ(v::dealloc_pd(pd), 0);
  // The last owner of the device goes: its queue and memory mappings go with it.
  ctx.reset();
  EXPECT_EQ(sim->dma_mappings(), 0u);
}

}  // namespace
}  // namespace onchip::testing

namespace onchip::testing {
namespace {

// ---- half way: the device made the object, then the driver's own step failed ----

// A creator that fails after its create command gives back every firmware object it made (the
// device objects' destructors, driver/device_object.h): here the driver's QP-number table
// already holds the number the firmware hands out, so the QP's last step (listing it for the
// CQ pollers) fails with the table's EEXIST after CREATE_QP (or a raw QP's SQ, RQ, TIS, TIR
// and transport domain) succeeded.
TEST_F(QueueFaults, ACreatorFailingHalfWayLeavesNoFirmwareObject) {
  ibv_cq* cq = Cq();
  ibv_xrcd* xrcd = AnonymousXrcd();
  ASSERT_TRUE(cq && xrcd);
  const auto create = [&](ibv_qp_type type) -> ibv_qp* {
    if (type != IBV_QPT_XRC_RECV) return Qp(cq, type);
    ibv_qp_init_attr_ex a{};
    a.qp_type = type;
    a.comp_mask = IBV_QP_INIT_ATTR_XRCD;
    a.xrcd = xrcd;
    return v::create_qp_ex(verbs_, &a);
  };
  const auto raw_objects = [&] {
    const auto c = sim_->counters();
    return c.sqs + c.rqs + c.tises + c.tirs;
  };
  const driver::rings::WorkQueues squatter{};
  for (ibv_qp_type type : {IBV_QPT_RC, IBV_QPT_UD, IBV_QPT_XRC_RECV, IBV_QPT_RAW_PACKET}) {
    // The firmware hands out its lowest free number: the one a probe QP just gave back.
    ibv_qp* probe = create(type);
    ASSERT_NE(probe, nullptr) << type << ": " << strerror(errno);
    const uint32_t next = probe->qp_num;
    ASSERT_EQ(v::destroy_qp(probe), 0);
    const Held before = Now();
    const uint32_t raw_before = raw_objects();
    for (uint32_t qpn = next; qpn < next + 4; ++qpn)
      ASSERT_TRUE(device().qpns().Insert(qpn, &squatter));
    errno = 0;
    EXPECT_EQ(create(type), nullptr) << type;
    EXPECT_EQ(errno, EEXIST) << type << ": " << strerror(errno);
    for (uint32_t qpn = next; qpn < next + 4; ++qpn) device().qpns().Erase(qpn);
    const Held after = Now();
    EXPECT_EQ(after, before) << type << "\nbefore: " << Describe(before)
                             << "\nafter:  " << Describe(after);
    EXPECT_EQ(raw_objects(), raw_before) << type << ": a raw QP's SQ, RQ, TIS or TIR was left";
    // The same call succeeds once the number is free.
    ibv_qp* again = create(type);
    ASSERT_NE(again, nullptr) << type << ": " << strerror(errno);
    EXPECT_EQ(v::destroy_qp(again), 0);
  }
  EXPECT_EQ(v::close_xrcd(xrcd), 0);
  EXPECT_EQ(v::destroy_cq(cq), 0);
}

}  // namespace
}  // namespace onchip::testing
