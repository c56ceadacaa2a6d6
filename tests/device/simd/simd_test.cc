// The device daemon (tools/simd) end to end: clients attach to its functions over the socket
// with the "simd:" locator, connect RC QPs across the two functions and move bytes; a client
// SIGKILLed mid-traffic leaves nothing behind while another client's traffic goes on; a daemon
// that dies makes the next command fail EIO at once, and a restarted daemon serves new opens;
// malformed frames are refused without hurting the daemon.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <infiniband/verbs.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "driver/bus/simd/frame_io.h"
#include "driver/device.h"
#include "driver/events.h"
#include "driver/open.h"
#include "driver/pd.h"
#include "driver/rings/data_path.h"
#include "driver/verbs/calls.h"
#include "tools/testing/rc_connect.h"
#include "tests/device/simd/simd_client.h"
#include "tests/device/wait.h"
#include "tools/sim/wire.h"
#include "tools/simd/server.h"


namespace onchip::testing {
namespace {

namespace v = driver::verbs;
namespace rings = driver::rings;
using namespace simd_client;  // NOLINT: the daemon and its clients, shared with crash_restart_test

// The CPU time (user + system) a process has used, from /proc/PID/stat.
std::chrono::milliseconds CpuTime(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  // Fields after the command name (which may hold spaces): state is field 3, utime 14, stime 15.
  std::istringstream rest(stat.substr(stat.rfind(')') + 2));
  std::vector<std::string> fields((std::istream_iterator<std::string>(rest)),
                                  std::istream_iterator<std::string>());
  if (fields.size() < 13) return std::chrono::milliseconds(-1);
  const long ticks = std::stol(fields[11]) + std::stol(fields[12]);
  return std::chrono::milliseconds(ticks * 1000 / sysconf(_SC_CLK_TCK));
}

class SimdTest : public ::testing::Test {
 protected:
  void SetUp() override {
    signal(SIGPIPE, SIG_IGN);
    daemon_ = std::make_unique<Daemon>("simd-test");
    ASSERT_TRUE(daemon_->Start());
  }
  std::unique_ptr<Daemon> daemon_;
};

TEST_F(SimdTest, TwoClientsOnTwoFunctionsMoveBytesOverRc) {
  Endpoint a, b;
  ASSERT_TRUE(a.Open(daemon_->locator(0), 0));
  ASSERT_TRUE(b.Open(daemon_->locator(1), 1));
  ibv_qp* qa = a.Rc();
  ibv_qp* qb = b.Rc();
  ASSERT_TRUE(qa && qb);
  ASSERT_TRUE(Connect(qa, qb->qp_num, b.gid));
  ASSERT_TRUE(Connect(qb, qa->qp_num, a.gid));
  for (int i = 0; i < 256; ++i) a.buf->data[i] = static_cast<uint8_t>(i ^ 0x5a);
  ASSERT_TRUE(Write(a, qa, b, 0, 256));
  EXPECT_EQ(std::memcmp(a.buf->data, b.buf->data, 256), 0);

  const std::string status = daemon_->Status();
  EXPECT_EQ(Count(status, "\"uid\""), 2u) << status;
  a.Close();
  b.Close();
  EXPECT_TRUE(WaitUntil([&] { return Count(daemon_->Status(), "\"uid\"") == 0; }));
}

// A daemon nobody uses sleeps: its two functions' engines and its accept loop cost under 1% of a
// core.
TEST_F(SimdTest, AnIdleDaemonUsesUnderOnePercentOfACore) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "a CPU budget measured under a sanitizer measures the instrumentation (each "
                  "idle wake-up costs several times more); the plain build checks it";
#endif
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // past bring-up
  const auto before = CpuTime(daemon_->pid());
  ASSERT_GE(before.count(), 0);
  constexpr auto kWindow = std::chrono::seconds(4);
  std::this_thread::sleep_for(kWindow);
  const auto used = CpuTime(daemon_->pid()) - before;
  EXPECT_LT(used.count() * 100, std::chrono::duration_cast<std::chrono::milliseconds>(kWindow).count())
      << used.count() << " ms of CPU in " << kWindow.count() << " s";
}

// While the daemon's engine is awake (it polls for a while after each piece of work) a client's
// posts and polls ring it without any syscall: the bus kicks only an engine that said it sleeps.
TEST_F(SimdTest, WhileTheEngineIsAwakeAClientsPostsMakeNoWakeUpSyscall) {
  // An engine that spins and stays awake for 10 s after its last work, so a descheduled test
  // thread on a busy machine cannot let it fall asleep between round trips.
  Daemon awake("simd-awake",
               {"--engine-idle-ms", "10000", "--engine-spin", "always"});
  ASSERT_TRUE(awake.Start());
  Endpoint a;
  ASSERT_TRUE(a.Open(awake.locator(0), 0));
  ibv_qp* q1 = a.Rc();
  ibv_qp* q2 = a.Rc();
  ASSERT_TRUE(q1 && q2);
  ASSERT_TRUE(Connect(q1, q2->qp_num, a.gid));
  ASSERT_TRUE(Connect(q2, q1->qp_num, a.gid));
  ASSERT_TRUE(Write(a, q1, a, 0, 64));  // wakes the engine if it slept
  const uint64_t kicks = a.device->bus().doorbell_kicks();
  for (int i = 0; i < 1000; ++i) ASSERT_TRUE(Write(a, q1, a, (i % 8) * 64, 64)) << i;
  EXPECT_EQ(a.device->bus().doorbell_kicks() - kicks, 0u);
  a.Close();
}

TEST_F(SimdTest, AnonymousMemoryIsReachedInTheClientProcess) {
  Endpoint a, b;
  ASSERT_TRUE(a.Open(daemon_->locator(0), 0, /*anonymous=*/true));
  ASSERT_TRUE(b.Open(daemon_->locator(1), 1, /*anonymous=*/true));
  ibv_qp* qa = a.Rc();
  ibv_qp* qb = b.Rc();
  ASSERT_TRUE(qa && qb);
  ASSERT_TRUE(Connect(qa, qb->qp_num, b.gid));
  ASSERT_TRUE(Connect(qb, qa->qp_num, a.gid));
  for (int i = 0; i < 4096; ++i) a.buf->data[i] = static_cast<uint8_t>(i * 7);
  ASSERT_TRUE(Write(a, qa, b, 0, 4096));
  EXPECT_EQ(std::memcmp(a.buf->data, b.buf->data, 4096), 0);
  a.Close();
  b.Close();
}

TEST_F(SimdTest, CommandsOnlyUserSpaceMayIssueAreRefused) {
  auto d = driver::Open(daemon_->locator(0));
  ASSERT_TRUE(d) << d.error().describe();
  // TEARDOWN_HCA belongs to the function's owner.
  std::vector<std::byte> in(16), out(16);
  in[0] = std::byte{0x01};
  in[1] = std::byte{0x03};
  auto r = (*d)->commander().Exec(in, out);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().errno_value(), EPERM);
  // The function still works for this client.
  ibv_pd* pd = v::alloc_pd((*d)->verbs());
  ASSERT_NE(pd, nullptr) << strerror(errno);
  EXPECT_EQ(v::dealloc_pd(pd), 0);
}

TEST_F(SimdTest, AKilledClientLeavesNothingWhileAnotherGoesOn) {
  // This process: a client on function 0 with a loopback RC pair.
  Endpoint self;
  ASSERT_TRUE(self.Open(daemon_->locator(0), 0));
  ibv_qp* q1 = self.Rc();
  ibv_qp* q2 = self.Rc();
  ASSERT_TRUE(q1 && q2);
  ASSERT_TRUE(Connect(q1, q2->qp_num, self.gid));
  ASSERT_TRUE(Connect(q2, q1->qp_num, self.gid));
  const std::string before = daemon_->Status();

  // A child process: a client on function 1 writing into its own loopback pair until killed.
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    close(ready[0]);
    // DPDK's EAL, which the parent's memory came from, does not survive fork: the child's
    // own device memory comes from memfd.
    setenv("ONCHIP_ALLOC_TIER", "4k", 1);
    Endpoint e;
    if (!e.Open(daemon_->locator(1), 1)) _exit(1);
    ibv_qp* c1 = e.Rc();
    ibv_qp* c2 = e.Rc();
    if (!c1 || !c2 || !Connect(c1, c2->qp_num, e.gid) || !Connect(c2, c1->qp_num, e.gid)) _exit(2);
    bool told = false;
    for (uint32_t n = 0;; ++n) {
      if (!Write(e, c1, e, (n % 8) * 4096, 4096)) _exit(3);
      if (!told && n > 4) {
        (void)!write(ready[1], "r", 1);
        told = true;
      }
    }
  }
  close(ready[1]);
  char r = 0;
  ASSERT_EQ(read(ready[0], &r, 1), 1) << "the child client never moved bytes";
  close(ready[0]);
  const std::string busy = daemon_->Status();
  EXPECT_EQ(Count(busy, "\"uid\""), 2u) << busy;
  kill(child, SIGKILL);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status));

  // The daemon forgets the child: one client left, and function 1 holds only what it held before.
  ASSERT_TRUE(WaitUntil([&] { return Count(daemon_->Status(), "\"uid\"") == 1; }))
      << daemon_->Status();
  const std::string after = daemon_->Status();
  const auto function1 = [](const std::string& s) { return s.substr(s.find("\"index\": 1")); };
  const auto upto_clients = [](const std::string& s) { return s.substr(0, s.find("\"commands\"")); };
  EXPECT_EQ(upto_clients(function1(after)), upto_clients(function1(before))) << after;
  EXPECT_NE(after.find("\"objects_total\": " ), std::string::npos);

  // This client's traffic goes on.
  for (int i = 0; i < 16; ++i) self.buf->data[i] = static_cast<uint8_t>(0xc0 + i);
  ASSERT_TRUE(Write(self, q1, self, 0, 4096));
  self.Close();
}

// XRC through the daemon: a domain, an XRC SRQ, XRC receive and send QPs on one function move a
// SEND into the SRQ; then a client holding the same objects is killed and the daemon releases
// them all (QP, SRQ, domain, CQ, PD), leaving its function as it found it.
bool XrcObjects(Endpoint& e, ibv_xrcd** xrcd, ibv_srq** srq, ibv_qp** recv, ibv_qp** send) {
  ibv_context* ctx = e.device->verbs();
  ibv_xrcd_init_attr xa{};
  xa.comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS;
  xa.fd = -1;
  xa.oflags = O_CREAT;
  *xrcd = v::open_xrcd(ctx, &xa);
  if (*xrcd == nullptr) return false;
  ibv_srq_init_attr_ex sa{};
  sa.attr = {.max_wr = 16, .max_sge = 1, .srq_limit = 0};
  sa.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD | IBV_SRQ_INIT_ATTR_XRCD |
                 IBV_SRQ_INIT_ATTR_CQ;
  sa.srq_type = IBV_SRQT_XRC;
  sa.pd = e.pd;
  sa.xrcd = *xrcd;
  sa.cq = e.cq;
  *srq = v::create_srq_ex(ctx, &sa);
  ibv_qp_init_attr_ex ra{};
  ra.qp_type = IBV_QPT_XRC_RECV;
  ra.comp_mask = IBV_QP_INIT_ATTR_XRCD;
  ra.xrcd = *xrcd;
  *recv = v::create_qp_ex(ctx, &ra);
  ibv_qp_init_attr_ex qa{};
  qa.qp_type = IBV_QPT_XRC_SEND;
  qa.comp_mask = IBV_QP_INIT_ATTR_PD;
  qa.pd = e.pd;
  qa.send_cq = e.cq;
  qa.cap.max_send_wr = 4;
  qa.cap.max_send_sge = 1;
  qa.sq_sig_all = 1;
  *send = v::create_qp_ex(ctx, &qa);
  return *srq && *recv && *send;
}

TEST_F(SimdTest, XrcThroughTheDaemonAndAKilledXrcClientLeavesNothing) {
  Endpoint self;
  ASSERT_TRUE(self.Open(daemon_->locator(0), 0));
  ibv_xrcd* xrcd = nullptr;
  ibv_srq* srq = nullptr;
  ibv_qp *recv = nullptr, *send = nullptr;
  ASSERT_TRUE(XrcObjects(self, &xrcd, &srq, &recv, &send)) << strerror(errno);
  // The receive side takes RC's masks but for the requester's; the send side RC's without
  // responder resources at RTR (the kernel's XRC_TGT / XRC_INI rows: ConnectXrc).
  const RcPath path{.dgid = self.gid, .access = 0};
  for (ibv_qp* qp : {recv, send}) {
    const bool r = qp == recv;
    const RcConnectResult connected = ConnectXrc(qp, r ? send->qp_num : recv->qp_num, r, path);
    ASSERT_TRUE(connected) << connected.describe();
  }
  uint32_t srqn = 0;
  ASSERT_EQ(v::get_srq_num(srq, &srqn), 0);
  ibv_sge rsge{reinterpret_cast<uintptr_t>(self.buf->data + 8192), 64, self.mr->lkey};
  ibv_recv_wr rwr{};
  rwr.wr_id = 5;
  rwr.sg_list = &rsge;
  rwr.num_sge = 1;
  ibv_recv_wr* rbad = nullptr;
  ASSERT_EQ(rings::PostSrqRecv(srq, &rwr, &rbad), 0);
  for (int i = 0; i < 64; ++i) self.buf->data[i] = static_cast<uint8_t>(0x30 + i);
  ibv_sge sge{reinterpret_cast<uintptr_t>(self.buf->data), 64, self.mr->lkey};
  ibv_send_wr wr{};
  wr.wr_id = 6;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = IBV_WR_SEND;
  wr.qp_type.xrc.remote_srqn = srqn;
  ibv_send_wr* bad = nullptr;
  ASSERT_EQ(rings::PostSend(send, &wr, &bad), 0);
  int seen = 0;
  ASSERT_TRUE(WaitUntil([&] {
    ibv_wc wc{};
    while (rings::PollCq(self.cq, 1, &wc) == 1) {
      EXPECT_EQ(wc.status, IBV_WC_SUCCESS) << ibv_wc_status_str(wc.status);
      ++seen;
    }
    return seen == 2;
  }));
  EXPECT_EQ(std::memcmp(self.buf->data + 8192, self.buf->data, 64), 0);
  EXPECT_NE(daemon_->Status().find("\"xrc_srq\": 1"), std::string::npos) << daemon_->Status();
  const std::string before = daemon_->Status();

  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    close(ready[0]);
    setenv("ONCHIP_ALLOC_TIER", "4k", 1);
    Endpoint e;
    if (!e.Open(daemon_->locator(1), 1)) _exit(1);
    ibv_xrcd* x = nullptr;
    ibv_srq* s = nullptr;
    ibv_qp *rq = nullptr, *sq = nullptr;
    if (!XrcObjects(e, &x, &s, &rq, &sq)) _exit(2);
    (void)!write(ready[1], "r", 1);
    for (;;) pause();
  }
  close(ready[1]);
  char r = 0;
  ASSERT_EQ(read(ready[0], &r, 1), 1) << "the child client made no XRC objects";
  close(ready[0]);
  kill(child, SIGKILL);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WaitUntil([&] { return Count(daemon_->Status(), "\"uid\"") == 1; }))
      << daemon_->Status();
  const std::string after = daemon_->Status();
  const auto function1 = [](const std::string& s) { return s.substr(s.find("\"index\": 1")); };
  const auto upto_clients = [](const std::string& s) { return s.substr(0, s.find("\"commands\"")); };
  EXPECT_EQ(upto_clients(function1(after)), upto_clients(function1(before))) << after;

  ASSERT_EQ(v::destroy_qp(send), 0);
  ASSERT_EQ(v::destroy_qp(recv), 0);
  ASSERT_EQ(v::destroy_srq(srq), 0);
  ASSERT_EQ(v::close_xrcd(xrcd), 0);
  self.Close();
}

TEST_F(SimdTest, ADeadDaemonFailsTheNextCommandAtOnceAndARestartedOneServes) {
  auto d = driver::Open(daemon_->locator(0));
  ASSERT_TRUE(d) << d.error().describe();
  daemon_->Kill(SIGKILL);
  const auto start = std::chrono::steady_clock::now();
  errno = 0;
  ibv_pd* pd = v::alloc_pd((*d)->verbs());
  EXPECT_EQ(pd, nullptr);
  EXPECT_EQ(errno, EIO);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(1));
  (*d)->Close();

  ASSERT_TRUE(daemon_->Start());
  auto again = driver::Open(daemon_->locator(0));
  ASSERT_TRUE(again) << again.error().describe();
  ibv_pd* pd2 = v::alloc_pd((*again)->verbs());
  ASSERT_NE(pd2, nullptr) << strerror(errno);
  EXPECT_EQ(v::dealloc_pd(pd2), 0);
}

// A daemon killed under a client with traffic: within a second the client's async fd reports
// IBV_EVENT_DEVICE_FATAL, posts fail with EIO, an empty poll returns -EIO (the completions
// already written are still polled), and a command verb fails with EIO. Closing still frees
// everything the client held.
TEST_F(SimdTest, ADeadDaemonIsSeenByPostPollCommandsAndTheAsyncFdWithinASecond) {
  Endpoint a;
  ASSERT_TRUE(a.Open(daemon_->locator(0), 0));
  ibv_qp* q1 = a.Rc();
  ibv_qp* q2 = a.Rc();
  ASSERT_TRUE(q1 && q2);
  ASSERT_TRUE(Connect(q1, q2->qp_num, a.gid));
  ASSERT_TRUE(Connect(q2, q1->qp_num, a.gid));
  ASSERT_TRUE(Write(a, q1, a, 4096, 64));
  int async[2];
  ASSERT_EQ(pipe2(async, O_CLOEXEC | O_NONBLOCK), 0);
  a.device->events()->AddAsyncSink(a.device->verbs(), async[1]);

  daemon_->Kill(SIGKILL);
  const auto start = std::chrono::steady_clock::now();
  pollfd p{async[0], POLLIN, 0};
  ASSERT_EQ(poll(&p, 1, 1000), 1) << "no async event within a second of the daemon's death";
  struct {
    uint64_t element;
    uint32_t event_type;
    uint32_t reserved;
  } desc{};
  ASSERT_EQ(read(async[0], &desc, sizeof desc), static_cast<ssize_t>(sizeof desc));
  EXPECT_EQ(desc.event_type, static_cast<uint32_t>(IBV_EVENT_DEVICE_FATAL));

  ibv_sge sge{reinterpret_cast<uintptr_t>(a.buf->data), 8, a.mr->lkey};
  ibv_send_wr wr{};
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = IBV_WR_SEND;
  ibv_send_wr* bad = nullptr;
  EXPECT_EQ(driver::rings::PostSend(q1, &wr, &bad), EIO);
  EXPECT_EQ(bad, &wr);
  ibv_wc wc;
  EXPECT_EQ(driver::rings::PollCq(a.cq, 1, &wc), -EIO);
  errno = 0;
  EXPECT_EQ(v::alloc_pd(a.device->verbs()), nullptr);
  EXPECT_EQ(errno, EIO);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(1));

  a.device->events()->RemoveAsyncSink(a.device->verbs());
  close(async[0]);
  close(async[1]);
  // Destroys succeed on a function that is gone and free every handle (LeakSanitizer checks).
  a.Close();
  ASSERT_TRUE(daemon_->Start());
}

// ibv_rereg_mr of an MR's access on a daemon's client keeps its keys, as the kernel's does: the
// daemon runs the UMR on its own REG_UMR QP. Only the client's own MRs and PDs can be named.
TEST_F(SimdTest, AnMrChangedInPlaceKeepsItsKeysAndOnlyItsOwnerMayChangeIt) {
  Endpoint a, b;
  ASSERT_TRUE(a.Open(daemon_->locator(0), 0));
  ASSERT_TRUE(b.Open(daemon_->locator(0), 0));
  ibv_qp* q1 = LoopbackPair(a).first;
  ASSERT_NE(q1, nullptr);
  SharedBuffer target(1 << 12);
  ibv_mr* mr = v::reg_mr(a.pd, target.data, target.size, reinterpret_cast<uintptr_t>(target.data),
                         IBV_ACCESS_LOCAL_WRITE);
  ASSERT_NE(mr, nullptr) << strerror(errno);
  const uint32_t key = mr->rkey;
  ASSERT_EQ(v::rereg_mr(mr, IBV_REREG_MR_CHANGE_ACCESS, nullptr, nullptr, 0,
                        IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE), 0)
      << strerror(errno);
  EXPECT_EQ(mr->lkey, key);
  EXPECT_EQ(mr->rkey, key);

  // The peer's write with the old rkey now lands.
  for (int i = 0; i < 64; ++i) a.buf->data[i] = static_cast<uint8_t>(0x30 + i);
  ibv_wc_status status = IBV_WC_GENERAL_ERR;
  EXPECT_TRUE(WriteTo(a, q1, 0, target.data, key, 64, &status)) << ibv_wc_status_str(status);
  EXPECT_EQ(std::memcmp(target.data, a.buf->data, 64), 0);

  // Another client may not change it, nor may its owner move it to another client's PD.
  auto other = b.device->UpdateMkeyInPlace(key, {.pdn = std::nullopt, .access = IBV_ACCESS_LOCAL_WRITE});
  ASSERT_FALSE(other);
  EXPECT_EQ(other.error().errno_value(), EPERM);
  auto foreign_pd = a.device->UpdateMkeyInPlace(
      key, {.pdn = driver::Pd::From(b.pd)->pdn, .access = std::nullopt});
  ASSERT_FALSE(foreign_pd);
  EXPECT_EQ(foreign_pd.error().errno_value(), EPERM);
  EXPECT_EQ(v::dereg_mr(mr), 0);
  a.Close();
  b.Close();
}

TEST_F(SimdTest, MalformedFramesAreRefusedAndTheDaemonGoesOn) {
  auto raw = [&](std::span<const std::byte> bytes) {
    const int s = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::strncpy(a.sun_path, daemon_->socket().c_str(), sizeof(a.sun_path) - 1);
    EXPECT_EQ(connect(s, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
    EXPECT_EQ(send(s, bytes.data(), bytes.size(), MSG_NOSIGNAL), ssize_t(bytes.size()));
    auto reply = simd::RecvFrame(s);
    close(s);
    return reply;
  };
  // Garbage instead of a header.
  std::vector<std::byte> junk(64, std::byte{0x41});
  auto r1 = raw(junk);
  ASSERT_TRUE(r1);
  EXPECT_EQ(r1->header.status, uint32_t(EPROTO));
  // A command before hello.
  simd::FrameHeader h;
  h.type = static_cast<uint16_t>(simd::MessageType::kCommand);
  auto r2 = raw(simd::AsBytes(h));
  ASSERT_TRUE(r2);
  EXPECT_EQ(r2->header.status, uint32_t(EPROTO));
  // A length above the limit.
  h.type = static_cast<uint16_t>(simd::MessageType::kHello);
  h.length = simd::kMaxPayload + 1;
  auto r3 = raw(simd::AsBytes(h));
  ASSERT_TRUE(r3);
  EXPECT_EQ(r3->header.status, uint32_t(EPROTO));
  // A hello for a function the daemon does not serve.
  simd::HelloRequest hello{.function = 7, .pid = 0};
  h.length = sizeof(hello);
  std::vector<std::byte> frame;
  for (auto b : simd::AsBytes(h)) frame.push_back(b);
  for (auto b : simd::AsBytes(hello)) frame.push_back(b);
  auto r4 = raw(frame);
  ASSERT_TRUE(r4);
  EXPECT_EQ(r4->header.status, uint32_t(ENODEV));
  // Still serving.
  auto d = driver::Open(daemon_->locator(1));
  ASSERT_TRUE(d) << d.error().describe();
}

}  // namespace
}  // namespace onchip::testing
