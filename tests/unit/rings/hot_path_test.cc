// The hot paths make no allocation and no syscall: 100,000 rounds of post_send, post_recv, the
// ibv_wr_* path, poll_cq and the ibv_cq_ex poll, each round completed by this test playing the
// device (it writes the CQEs by hand), on plain memory.
//
// How it is measured, and why it cannot pass by accident:
//   - syscalls: the rounds run in a forked child that first enters seccomp strict mode
//     (prctl(PR_SET_SECCOMP, SECCOMP_MODE_STRICT)). From then on the kernel allows read, write,
//     exit and sigreturn only and kills the process with SIGKILL on any other syscall, so a
//     futex, mmap, brk, clock_gettime outside the vDSO or ioctl on the hot path ends the child
//     by signal. The child reports through a pipe (write) and leaves with the raw exit syscall
//     (exit, not exit_group). The parent requires a normal exit with status 0.
//   - allocations: this binary replaces malloc, calloc, realloc, memalign, aligned_alloc and
//     posix_memalign (forwarding to glibc's __libc_* functions) and counts every call; operator
//     new allocates through malloc. Allocations that reuse cached chunks make no syscall, so
//     seccomp alone would miss them: the counter catches those. The child reports the count of
//     the rounds, which must be 0.
// Sanitizer builds replace malloc themselves: there the allocation count is not taken (the
// syscall half still runs under ASan/UBSan; ThreadSanitizer's runtime makes syscalls of its
// own, so the test skips under it).
#include <gtest/gtest.h>
#include <infiniband/verbs.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>

#include "tests/unit/rings/ring_fixture.h"
#include "uapi/prm/send_wqe.h"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define ONCHIP_COUNT_ALLOCATIONS 0
#else
#define ONCHIP_COUNT_ALLOCATIONS 1
#endif

#if ONCHIP_COUNT_ALLOCATIONS
namespace {
std::atomic<uint64_t> g_allocations{0};
}
extern "C" {
void* __libc_malloc(size_t);
void* __libc_calloc(size_t, size_t);
void* __libc_realloc(void*, size_t);
void* __libc_memalign(size_t, size_t);
void __libc_free(void*);

void* malloc(size_t n) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  return __libc_malloc(n);
}
void* calloc(size_t n, size_t size) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  return __libc_calloc(n, size);
}
void* realloc(void* p, size_t n) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  return __libc_realloc(p, n);
}
void* memalign(size_t align, size_t n) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  return __libc_memalign(align, n);
}
void* aligned_alloc(size_t align, size_t n) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  return __libc_memalign(align, n);
}
int posix_memalign(void** out, size_t align, size_t n) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  void* p = __libc_memalign(align, n);
  if (p == nullptr) return ENOMEM;
  *out = p;
  return 0;
}
void free(void* p) { __libc_free(p); }
}
#endif

namespace onchip::rings_test {
namespace {

constexpr int kRounds = 100000;

struct Report {
  uint64_t allocations = 0;
  uint64_t completions = 0;
  uint64_t failures = 0;
};

// One round: a BlueFlame send, a receive, an ibv_wr_* RDMA write; the device completes all
// three; poll_cq takes two completions and the ibv_cq_ex poll the third.
void Round(Harness& h, uint32_t round, Report& r) {
  ibv_sge sge = Sge(0x1000, 32, 1);
  ibv_send_wr swr{};
  swr.wr_id = round;
  swr.opcode = IBV_WR_SEND;
  swr.send_flags = IBV_SEND_SIGNALED;
  swr.sg_list = &sge;
  swr.num_sge = 1;
  ibv_send_wr* sbad = nullptr;
  if (driver::rings::PostSend(h.ibqp(), &swr, &sbad) != 0) ++r.failures;

  ibv_recv_wr rwr{};
  rwr.wr_id = round;
  rwr.sg_list = &sge;
  rwr.num_sge = 1;
  ibv_recv_wr* rbad = nullptr;
  if (driver::rings::PostRecv(h.ibqp(), &rwr, &rbad) != 0) ++r.failures;

  ibv_qp_ex* qpx = h.qpx();
  ibv_wr_start(qpx);
  qpx->wr_id = round;
  qpx->wr_flags = IBV_SEND_SIGNALED;
  ibv_wr_rdma_write(qpx, 0x22, 0x8000);
  ibv_wr_set_sge(qpx, 1, 0x1000, 64);
  if (ibv_wr_complete(qpx) != 0) ++r.failures;

  // The device: a requester CQE per send WQE (one block each), a responder CQE for the receive.
  const uint32_t n = round * 3;
  h.WriteCqe(n, prm::MLX5_CQE_REQ, static_cast<uint16_t>(round * 2), prm::MLX5_OPCODE_SEND);
  h.WriteCqe(n + 1, prm::MLX5_CQE_RESP_SEND, static_cast<uint16_t>(round));
  h.WriteCqe(n + 2, prm::MLX5_CQE_REQ, static_cast<uint16_t>(round * 2 + 1),
             prm::MLX5_OPCODE_RDMA_WRITE);

  std::array<ibv_wc, 2> wc;
  const int got = driver::rings::PollCq(h.ibcq(), 2, wc.data());
  if (got != 2 || wc[0].wr_id != round || wc[1].wr_id != round) ++r.failures;
  r.completions += got > 0 ? static_cast<uint64_t>(got) : 0;
  ibv_cq_ex* cqx = h.cqx();
  ibv_poll_cq_attr attr{};
  if (ibv_start_poll(cqx, &attr) == 0) {
    if (cqx->wr_id != round || ibv_wc_read_opcode(cqx) != IBV_WC_RDMA_WRITE) ++r.failures;
    ++r.completions;
    ibv_end_poll(cqx);
  } else {
    ++r.failures;
  }
}

TEST(HotPath, NoAllocationAndNoSyscallIn100000PostsAndPolls) {
#if defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "ThreadSanitizer's runtime makes syscalls of its own";
#endif
  Harness h(QpTransport::kRc, /*wqe_cnt=*/64, /*max_post=*/16, /*blueflame=*/true,
            /*cqe_cnt=*/64);
  ASSERT_TRUE(driver::rings::InstallWrOps(h.qpx(), IBV_QP_EX_WITH_RDMA_WRITE, QpTransport::kRc)
                  .has_value());
  ASSERT_TRUE(driver::rings::InstallCqExOps(h.cqx(), IBV_WC_EX_WITH_BYTE_LEN).has_value());
  Report warm;
  Round(h, 0, warm);  // first use picks the write-combined copy kernel (CPUID, environment)
  ASSERT_EQ(warm.failures, 0u);

  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    close(fds[0]);
    Report r;
#if ONCHIP_COUNT_ALLOCATIONS
    const uint64_t before = g_allocations.load(std::memory_order_relaxed);
#endif
    if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_STRICT) != 0) syscall(SYS_exit, 3);
    for (uint32_t round = 1; round <= kRounds; ++round) Round(h, round, r);
#if ONCHIP_COUNT_ALLOCATIONS
    r.allocations = g_allocations.load(std::memory_order_relaxed) - before;
#endif
    if (write(fds[1], &r, sizeof(r)) != static_cast<ssize_t>(sizeof(r))) syscall(SYS_exit, 4);
    syscall(SYS_exit, 0);
  }
  close(fds[1]);
  Report r;
  const ssize_t got = read(fds[0], &r, sizeof(r));
  close(fds[0]);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status)) << "the child was killed by signal "
                                 << (WIFSIGNALED(status) ? WTERMSIG(status) : 0)
                                 << " (SIGKILL: a syscall on the hot path)";
  ASSERT_EQ(WEXITSTATUS(status), 0);
  ASSERT_EQ(got, static_cast<ssize_t>(sizeof(r)));
  EXPECT_EQ(r.failures, 0u);
  EXPECT_EQ(r.completions, 3u * kRounds);
  EXPECT_EQ(r.allocations, 0u);
}

// The probe itself: a syscall in strict mode kills the child, so the test above can fail.
TEST(HotPath, StrictModeKillsOnASyscall) {
#if defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "ThreadSanitizer's runtime makes syscalls of its own";
#endif
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_STRICT) != 0) syscall(SYS_exit, 3);
    (void)syscall(SYS_getppid);
    syscall(SYS_exit, 0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(WTERMSIG(status), SIGKILL);
}

#if ONCHIP_COUNT_ALLOCATIONS
// The counter itself: an allocation is seen.
TEST(HotPath, TheAllocationCounterSeesOperatorNew) {
  const uint64_t before = g_allocations.load();
  auto* p = new int(7);
  EXPECT_GT(g_allocations.load(), before);
  delete p;
}
#endif

}  // namespace
}  // namespace onchip::rings_test
