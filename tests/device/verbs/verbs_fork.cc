// Forked children of a device daemon's client use the parent's ibv_context, through unmodified
// libibverbs 44, as rdma-core's pyverbs DMTest.test_multi_process_alloc_dm does: each child's
// first command opens the child's own session on the function (driver/verbs/provider.cc, "the
// process a context serves"), its objects are its own, the parent's stay the parent's, and the
// daemon releases a child's objects when it exits.
//
// Run by verbs_fork_test.sh under tools/verbs_env/launch.py --daemon SOCKET; ONCHIP_TEST_SIMD
// names the socket, so the test reads the daemon's per-client counters (kStatus).
#include <gtest/gtest.h>
#include <infiniband/verbs.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "driver/bus/simd/frame_io.h"
#include "tests/device/wait.h"

namespace {

using onchip::testing::WaitUntil;

// The daemon's state as JSON (uapi/simd_protocol.h kStatus), "" when it does not answer.
std::string DaemonStatus() {
  const char* path = std::getenv("ONCHIP_TEST_SIMD");
  if (path == nullptr) return {};
  const int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::strncpy(a.sun_path, path, sizeof(a.sun_path) - 1);
  std::string text;
  if (connect(s, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0 &&
      onchip::simd::SendFrame(s, onchip::simd::MessageType::kStatus, 0, {})) {
    if (auto f = onchip::simd::RecvFrame(s); f && f->header.status == 0)
      text.assign(reinterpret_cast<const char*>(f->payload.data()), f->payload.size());
  }
  close(s);
  return text;
}

bool HasClient(const std::string& status, pid_t pid) {
  return status.find("\"pid\": " + std::to_string(pid) + ",") != std::string::npos;
}

// One client's entry (its objects by kind), "" when the daemon has no client of that pid.
std::string ClientEntry(const std::string& status, pid_t pid) {
  const auto at = status.find("\"pid\": " + std::to_string(pid) + ",");
  if (at == std::string::npos) return {};
  return status.substr(at, status.find("\"memic_bytes\"", at) - at);
}

// Memory to register: its own mapping, so that ibv_fork_init's MADV_DONTFORK on it (ForkInit
// below) takes no malloc heap page away from a forked child.
struct Buffer {
  explicit Buffer(std::size_t n) : size(n) {
    data = static_cast<uint8_t*>(
        mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    EXPECT_NE(data, MAP_FAILED);
  }
  ~Buffer() { munmap(data, size); }
  std::size_t size;
  uint8_t* data;
};

// The counters of function 0, up to its command count (which every status request moves).
std::string Function0Counters(const std::string& status) {
  const auto at = status.find("\"index\": 0");
  if (at == std::string::npos) return {};
  return status.substr(at, status.find("\"commands\"", at) - at);
}

// A pipe a parent and its children wait on: one byte per signal.
struct Pipe {
  Pipe() { EXPECT_EQ(pipe2(fd.data(), O_CLOEXEC), 0); }
  ~Pipe() {
    for (int f : fd)
      if (f >= 0) close(f);
  }
  bool Put(char c = 'x') const { return write(fd[1], &c, 1) == 1; }
  bool Get(char* c = nullptr) const {
    char b;
    const bool ok = read(fd[0], &b, 1) == 1;
    if (c) *c = b;
    return ok;
  }
  // The parent's Get: the parent holds the write end too, so a child that dies before it
  // signals would leave a plain read blocked for ever. This one fails instead, naming the child
  // and its exit status, or after 30 s without a signal.
  ::testing::AssertionResult GetFrom(const std::vector<pid_t>& writers) const {
    for (int waited_ms = 0; waited_ms < 30'000; waited_ms += 100) {
      pollfd p{fd[0], POLLIN, 0};
      if (poll(&p, 1, 100) == 1) {
        if (Get()) return ::testing::AssertionSuccess();
        return ::testing::AssertionFailure() << "the pipe failed: " << std::strerror(errno);
      }
      for (pid_t pid : writers) {
        siginfo_t info{};  // WNOWAIT: the child stays for Reap
        if (waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
            info.si_pid == pid)
          return ::testing::AssertionFailure()
                 << "child " << pid << " ended before it signalled: "
                 << (info.si_code == CLD_EXITED ? "exit status " : "signal ") << info.si_status;
      }
    }
    return ::testing::AssertionFailure() << "no signal from the children in 30 s";
  }
  std::array<int, 2> fd{-1, -1};
};

class ForkTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_NE(std::getenv("ONCHIP_TEST_SIMD"), nullptr) << "run me through verbs_fork_test.sh";
    int n = 0;
    ibv_device** list = ibv_get_device_list(&n);
    ASSERT_NE(list, nullptr);
    for (int i = 0; i < n && ctx_ == nullptr; ++i)  // function 0 (Function0Counters)
      if (std::strcmp(ibv_get_device_name(list[i]), "onchip_0") == 0) ctx_ = ibv_open_device(list[i]);
    ibv_free_device_list(list);
    ASSERT_NE(ctx_, nullptr) << "onchip_0: " << strerror(errno);
    ibv_device_attr_ex attr{};
    ASSERT_EQ(ibv_query_device_ex(ctx_, nullptr, &attr), 0);
    max_dm_ = attr.max_dm_size;
    ASSERT_GT(max_dm_, 0u);
  }
  void TearDown() override {
    // A test that failed before it reaped its children leaves none behind, blocked on a pipe.
    for (pid_t pid : unreaped_) {
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
    }
    if (ctx_) {
      EXPECT_EQ(ibv_close_device(ctx_), 0);
    }
  }

  // Runs `body` in a forked child; its exit status is the test's verdict (0 = passed). A child
  // leaves with _exit: no gtest teardown, no static destructors (as Python's multiprocessing).
  template <class Body>
  pid_t Child(Body body) {
    const pid_t pid = fork();
    if (pid == 0) _exit(body());
    if (pid > 0) unreaped_.push_back(pid);
    return pid;
  }
  int Reap(pid_t pid) {
    int status = 0;
    if (waitpid(pid, &status, 0) != pid) return -1;
    std::erase(unreaped_, pid);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }

  std::vector<pid_t> unreaped_;
  ibv_context* ctx_ = nullptr;
  uint64_t max_dm_ = 0;
};

// ibv_fork_init and ibv_is_fork_initialized are libibverbs' own: before any memory is
// registered fork_init succeeds, and with no RDMA netlink to report copy-on-fork the answer is
// ENABLED (pyverbs test_fork accepts ENABLED or UNNEEDED). First in the binary: an MR
// registered earlier in the process would make fork_init EINVAL ("too late").
TEST(ForkInit, EnabledBeforeAnyRegistration) {
  EXPECT_EQ(ibv_fork_init(), 0);
  EXPECT_EQ(ibv_is_fork_initialized(), IBV_FORK_ENABLED);
}

// Five children at once allocate device memory on the parent's context, write and read it back,
// and either free it or exit holding it; the parent's own DM, PD and MR are untouched and keep
// working, and after the children exit the daemon holds nothing of theirs.
TEST_F(ForkTest, FiveChildrenAllocateDeviceMemoryOnTheParentsContext) {
  // The parent's objects, made before the fork.
  ibv_pd* pd = ibv_alloc_pd(ctx_);
  ASSERT_NE(pd, nullptr);
  ibv_alloc_dm_attr da{};
  da.length = 4096;
  ibv_dm* parent_dm = ibv_alloc_dm(ctx_, &da);
  ASSERT_NE(parent_dm, nullptr) << strerror(errno);
  std::vector<uint8_t> mine(4096);
  for (std::size_t i = 0; i < mine.size(); ++i) mine[i] = static_cast<uint8_t>(i * 7 + 1);
  ASSERT_EQ(ibv_memcpy_to_dm(parent_dm, 0, mine.data(), mine.size()), 0);
  const std::string before = DaemonStatus();
  ASSERT_TRUE(HasClient(before, getpid())) << before;

  constexpr int kChildren = 5;
  // As pyverbs: half of the device memory, shared among the children.
  const uint64_t each = (max_dm_ / 2 / kChildren) & ~uint64_t{63};
  // Two phases, two pipes: with one, a quick child could take a second child's start byte as its
  // own finish and leave that child waiting for ever.
  Pipe start, ready, finish;
  std::vector<pid_t> children;
  for (int i = 0; i < kChildren; ++i) {
    children.push_back(Child([&, i] {
      char c;
      if (!start.Get(&c)) return 10;
      ibv_alloc_dm_attr a{};
      a.length = each;
      ibv_dm* dm = ibv_alloc_dm(ctx_, &a);
      if (dm == nullptr) return 11;
      std::vector<uint8_t> out(each), in(each);
      for (std::size_t k = 0; k < out.size(); ++k) out[k] = static_cast<uint8_t>(k + 31 * i);
      if (ibv_memcpy_to_dm(dm, 0, out.data(), out.size()) != 0) return 12;
      if (ibv_memcpy_from_dm(in.data(), dm, 0, in.size()) != 0) return 13;
      if (in != out) return 14;
      if (!ready.Put()) return 15;
      if (!finish.Get(&c)) return 16;  // the parent has seen every child's memory at the daemon
      // Even children free what they made; odd ones exit holding it (the daemon releases it).
      if (i % 2 == 0 && ibv_free_dm(dm) != 0) return 17;
      return 0;
    }));
  }
  for (int i = 0; i < kChildren; ++i) ASSERT_TRUE(start.Put());
  for (int i = 0; i < kChildren; ++i) ASSERT_TRUE(ready.GetFrom(children));
  // Each child is a client of its own, holding its device memory.
  const std::string busy = DaemonStatus();
  for (pid_t pid : children)
    EXPECT_NE(ClientEntry(busy, pid).find("\"memic\": 1"), std::string::npos) << busy;
  for (int i = 0; i < kChildren; ++i) ASSERT_TRUE(finish.Put());
  for (pid_t pid : children) EXPECT_EQ(Reap(pid), 0) << "child " << pid;

  // The children are gone from the daemon, which holds what it held before they came.
  ASSERT_TRUE(WaitUntil([&] {
    const std::string s = DaemonStatus();
    for (pid_t pid : children)
      if (HasClient(s, pid)) return false;
    return Function0Counters(s) == Function0Counters(before);
  })) << DaemonStatus();

  // The parent's objects still work: its DM holds its bytes, and it can make more.
  std::vector<uint8_t> back(mine.size());
  ASSERT_EQ(ibv_memcpy_from_dm(back.data(), parent_dm, 0, back.size()), 0);
  EXPECT_EQ(back, mine);
  Buffer buf(1 << 16);
  ibv_mr* mr = ibv_reg_mr(pd, buf.data, buf.size, IBV_ACCESS_LOCAL_WRITE);
  ASSERT_NE(mr, nullptr) << strerror(errno);
  ibv_dm* more = ibv_alloc_dm(ctx_, &da);
  ASSERT_NE(more, nullptr) << strerror(errno);
  EXPECT_EQ(ibv_free_dm(more), 0);
  EXPECT_EQ(ibv_dereg_mr(mr), 0);
  EXPECT_EQ(ibv_free_dm(parent_dm), 0);
  EXPECT_EQ(ibv_dealloc_pd(pd), 0);
}

// A child makes the whole chain on the parent's context (PD, MR, CQ, QP to RTS, DM and an MR
// on it); the parent's objects answer ENODEV in the child and are not found as arguments of the
// child's; ibv_close_device in the child releases the child's objects and leaves the parent's.
TEST_F(ForkTest, AChildsObjectsAreItsOwnAndTheParentsStayTheParents) {
  ibv_pd* pd = ibv_alloc_pd(ctx_);
  ibv_cq* cq = ibv_create_cq(ctx_, 16, nullptr, nullptr, 0);
  ibv_alloc_dm_attr da{};
  da.length = 4096;
  ibv_dm* dm = ibv_alloc_dm(ctx_, &da);
  ASSERT_TRUE(pd && cq && dm);
  const std::string before = DaemonStatus();
  struct stat parent_async {};
  ASSERT_EQ(fstat(ctx_->async_fd, &parent_async), 0);

  Pipe held, done;
  const pid_t child = Child([&] {
    // The parent's objects: not this process's to command.
    if (ibv_dealloc_pd(pd) != ENODEV) return 20;
    if (ibv_free_dm(dm) != ENODEV) return 21;
    if (ibv_destroy_cq(cq) != ENODEV) return 22;
    Buffer buf(1 << 16);
    errno = 0;
    if (ibv_reg_mr(pd, buf.data, buf.size, IBV_ACCESS_LOCAL_WRITE) != nullptr ||
        errno != ENODEV)
      return 23;
    // Its own, on the parent's context.
    ibv_pd* cpd = ibv_alloc_pd(ctx_);
    if (cpd == nullptr) return 30;
    ibv_mr* mr = ibv_reg_mr(cpd, buf.data, buf.size,
                            IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
    if (mr == nullptr) return 31;
    // The context's async_fd is now the child's own pipe, not the parent's (whose events the
    // child would otherwise take).
    struct stat child_async {};
    if (fstat(ctx_->async_fd, &child_async) != 0 || child_async.st_ino == parent_async.st_ino)
      return 42;
    // A completion channel (the plugin's ibv_create_comp_channel) on the child's device.
    ibv_comp_channel* channel = ibv_create_comp_channel(ctx_);
    if (channel == nullptr) return 43;
    ibv_cq* ccq = ibv_create_cq(ctx_, 16, nullptr, channel, 0);
    if (ccq == nullptr) return 32;
    if (ibv_req_notify_cq(ccq, 0) != 0) return 44;
    ibv_qp_init_attr qa{};
    qa.qp_type = IBV_QPT_RC;
    qa.cap.max_send_wr = qa.cap.max_recv_wr = 4;
    qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
    // The parent's CQ under the child's QP: a handle the child's connection does not have.
    qa.send_cq = qa.recv_cq = cq;
    errno = 0;
    if (ibv_create_qp(cpd, &qa) != nullptr || errno != EINVAL) return 33;
    qa.send_cq = qa.recv_cq = ccq;
    ibv_qp* qp = ibv_create_qp(cpd, &qa);
    if (qp == nullptr) return 34;
    ibv_qp_attr init{};
    init.qp_state = IBV_QPS_INIT;
    init.port_num = 1;
    init.qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
    if (ibv_modify_qp(qp, &init, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
                                     IBV_QP_ACCESS_FLAGS) != 0)
      return 35;
    ibv_alloc_dm_attr a{};
    a.length = 4096;
    ibv_dm* cdm = ibv_alloc_dm(ctx_, &a);
    if (cdm == nullptr) return 36;
    ibv_mr* dm_mr = ibv_reg_dm_mr(cpd, cdm, 0, 4096, IBV_ACCESS_ZERO_BASED);
    if (dm_mr == nullptr) return 37;
    // The parent's DM under the child's PD: not found (an ioctl method's lookup: ENOENT).
    errno = 0;
    if (ibv_reg_dm_mr(cpd, dm, 0, 4096, IBV_ACCESS_ZERO_BASED) != nullptr || errno != ENOENT)
      return 38;
    if (!held.Put()) return 39;
    char c;
    if (!done.Get(&c)) return 40;
    // Closing the device here releases the child's objects, through the child's connection.
    if (ibv_close_device(ctx_) != 0) return 41;
    return 0;
  });
  ASSERT_TRUE(held.GetFrom({child}));
  const std::string busy = DaemonStatus();
  const std::string entry = ClientEntry(busy, child);
  for (const char* kind : {"\"pd\": 1", "\"cq\": 1", "\"qp\": 1", "\"memic\": 1"})
    EXPECT_NE(entry.find(kind), std::string::npos) << kind << " in " << busy;
  ASSERT_TRUE(done.Put());
  EXPECT_EQ(Reap(child), 0);
  ASSERT_TRUE(WaitUntil([&] {
    const std::string s = DaemonStatus();
    return !HasClient(s, child) && Function0Counters(s) == Function0Counters(before);
  })) << DaemonStatus();

  // The parent's objects were never touched by the child.
  ibv_qp_init_attr qa{};
  qa.qp_type = IBV_QPT_RC;
  qa.send_cq = qa.recv_cq = cq;
  qa.cap.max_send_wr = qa.cap.max_recv_wr = 4;
  qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
  ibv_qp* qp = ibv_create_qp(pd, &qa);
  ASSERT_NE(qp, nullptr) << strerror(errno);
  EXPECT_EQ(ibv_destroy_qp(qp), 0);
  EXPECT_EQ(ibv_free_dm(dm), 0);
  EXPECT_EQ(ibv_destroy_cq(cq), 0);
  EXPECT_EQ(ibv_dealloc_pd(pd), 0);
}

// A child that never commanded the device and closes the inherited context releases only its
// descriptors: the parent's context and objects go on, and no client of the child's appears.
TEST_F(ForkTest, ClosingAnUnusedInheritedContextLeavesTheParentAlone) {
  ibv_pd* pd = ibv_alloc_pd(ctx_);
  ASSERT_NE(pd, nullptr);
  const pid_t child = Child([&] {
    ibv_device_attr attr{};
    if (ibv_query_device(ctx_, &attr) != 0) return 50;  // answered from what was read at open
    return ibv_close_device(ctx_) == 0 ? 0 : 51;
  });
  EXPECT_EQ(Reap(child), 0);
  EXPECT_FALSE(HasClient(DaemonStatus(), child));
  ibv_alloc_dm_attr da{};
  da.length = 4096;
  ibv_dm* dm = ibv_alloc_dm(ctx_, &da);
  ASSERT_NE(dm, nullptr) << strerror(errno);
  EXPECT_EQ(ibv_free_dm(dm), 0);
  EXPECT_EQ(ibv_dealloc_pd(pd), 0);
}

}  // namespace
