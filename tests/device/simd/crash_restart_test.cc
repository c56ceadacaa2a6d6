// Crash and restart, repeated. Each round forks a client on function 1 that churns through the
// whole object life cycle in a loop (open, PD, CQ, MR, device memory and its MR, two RC QPs taken
// RESET to RTS, RDMA writes between them, everything destroyed, close) and SIGKILLs it after a
// random delay, so the kill lands at a random point of a create, a modify, a destroy or a write.
// Every few rounds the daemon itself is SIGKILLed under its clients and restarted. After each
// kill the daemon's counters for function 1 (UARs, PDs, mkeys, EQs, CQs, QPs, SRQs, MEMIC
// allocations, DMA mappings) read as an idle function's again, function 0 holds exactly what its
// surviving client holds, and that client's RDMA writes keep landing exact bytes.
//
// ONCHIP_CRASH_ROUNDS (default 30) and ONCHIP_CRASH_SEED (default: random, printed) repeat a run.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <thread>

#include "tests/device/simd/simd_client.h"

namespace onchip::testing {
namespace {

using namespace simd_client;  // NOLINT: the daemon and its clients

unsigned EnvOr(const char* name, unsigned fallback) {
  const char* v = std::getenv(name);
  return v && *v ? static_cast<unsigned>(std::strtoul(v, nullptr, 0)) : fallback;
}

// Function `index`'s device counters in the daemon's status, without its command count (which
// grows with every command anyone sends).
std::string FunctionCounters(const std::string& status, int index) {
  const auto at = status.find("{\"index\": " + std::to_string(index));
  if (at == std::string::npos) return "absent";
  return status.substr(at, status.find(", \"commands\"", at) - at);
}

bool ClientGone(const std::string& status, pid_t pid) {
  return !status.empty() && status.find("\"pid\": " + std::to_string(pid) + ",") == std::string::npos;
}

// The child: the object life cycle on `locator`, over and over, until it is killed. Writes one
// byte to `ready` after its first full cycle. Exits (non-zero) when the device fails it, which is
// what a dead daemon does.
[[noreturn]] void Churn(const std::string& locator, int function, int ready) {
  // DPDK's EAL, which the parent's memory came from, does not survive fork: memfd instead.
  setenv("ONCHIP_ALLOC_TIER", "4k", 1);
  for (bool told = false;;) {
    Endpoint e;
    if (!e.Open(locator, function)) _exit(1);
    ibv_alloc_dm_attr attr{};
    attr.length = 4096;
    ibv_dm* dm = v::alloc_dm(e.device->verbs(), &attr);
    ibv_mr* dm_mr = dm ? v::reg_dm_mr(e.pd, dm, 0, 4096,
                                      IBV_ACCESS_ZERO_BASED | IBV_ACCESS_LOCAL_WRITE |
                                          IBV_ACCESS_REMOTE_WRITE)
                       : nullptr;
    auto [a, b] = LoopbackPair(e);
    if (!dm_mr || !a) _exit(2);
    for (std::size_t off = 0; off < 4 * 4096; off += 4096)
      if (!Write(e, a, e, off, 4096)) _exit(3);
    if (!told) {
      told = write(ready, "r", 1) == 1;
      close(ready);
    }
    if (v::dereg_mr(dm_mr) != 0 || v::free_dm(dm) != 0) _exit(4);
    e.Close();
  }
}

// The client that outlives every crash: function 0, a loopback RC pair.
struct Survivor {
  Endpoint e;
  ibv_qp* qp = nullptr;
  bool Open(const Daemon& d) {
    if (!e.Open(d.locator(0), 0)) return false;
    qp = LoopbackPair(e).first;
    return qp != nullptr;
  }
  // A fresh pattern written from the first 4 KiB to the second: every byte must land.
  ::testing::AssertionResult MovesExactBytes(std::mt19937_64& rng) {
    for (std::size_t i = 0; i < 4096; ++i) e.buf->data[i] = static_cast<uint8_t>(rng());
    std::memset(e.buf->data + 4096, 0, 4096);
    if (!WriteTo(e, qp, 0, e.buf->data + 4096, e.mr->rkey, 4096))
      return ::testing::AssertionFailure() << "write failed";
    if (std::memcmp(e.buf->data, e.buf->data + 4096, 4096) != 0)
      return ::testing::AssertionFailure() << "the written bytes differ from the source";
    return ::testing::AssertionSuccess();
  }
};

TEST(CrashRestartTest, KilledClientsAndDaemonsLeaveNothingAndSurvivorsSeeExactBytes) {
  signal(SIGPIPE, SIG_IGN);
  const unsigned rounds = EnvOr("ONCHIP_CRASH_ROUNDS", 30);
  const unsigned seed = EnvOr("ONCHIP_CRASH_SEED", std::random_device{}());
  std::printf("crash/restart: %u rounds, seed %u (ONCHIP_CRASH_SEED=%u repeats it)\n", rounds,
              seed, seed);
  RecordProperty("seed", std::to_string(seed));
  std::mt19937_64 rng(seed);

  Daemon daemon("crash-test");
  ASSERT_TRUE(daemon.Start());
  const std::string idle = FunctionCounters(daemon.Status(), 1);
  ASSERT_NE(idle, "absent") << daemon.Status();
  auto survivor = std::make_unique<Survivor>();
  ASSERT_TRUE(survivor->Open(daemon));
  std::string held = FunctionCounters(daemon.Status(), 0);

  const auto start = std::chrono::steady_clock::now();
  unsigned client_kills = 0, early_kills = 0, daemon_kills = 0;
  for (unsigned round = 0; round < rounds; ++round) {
    SCOPED_TRACE("round " + std::to_string(round) + " of seed " + std::to_string(seed));
    int ready[2];
    ASSERT_EQ(pipe(ready), 0);
    std::fflush(stdout);
    const pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      close(ready[0]);
      // The child's own failed expectations (a device that died under it) are expected here;
      // keep them out of the test's output.
      (void)!freopen("/dev/null", "w", stdout);
      Churn(daemon.locator(1), 1, ready[1]);
    }
    close(ready[1]);
    // One round in four kills the child while it is still opening and creating its first
    // objects; the others once it has run a whole cycle, at a random point of a later one.
    const bool early = rng() % 4 == 0;
    if (!early) {
      char r = 0;
      ASSERT_EQ(read(ready[0], &r, 1), 1) << "the churning client never completed a cycle";
    }
    close(ready[0]);
    std::this_thread::sleep_for(std::chrono::microseconds(rng() % (early ? 10000 : 30000)));

    const bool kill_daemon = round % 4 == 3;
    if (kill_daemon) {
      // The daemon dies under both clients: the survivor's next command fails at once.
      daemon.Kill(SIGKILL);
      ++daemon_kills;
      errno = 0;
      EXPECT_EQ(v::alloc_pd(survivor->e.device->verbs()), nullptr);
      EXPECT_EQ(errno, EIO);
      survivor->e.Close();
    }
    kill(child, SIGKILL);
    int status = 0;
    ASSERT_EQ(waitpid(child, &status, 0), child);
    ++client_kills;
    early_kills += early;

    if (kill_daemon) {
      ASSERT_TRUE(daemon.Start());
      EXPECT_EQ(FunctionCounters(daemon.Status(), 1), idle) << "a restarted daemon starts idle";
      survivor = std::make_unique<Survivor>();
      ASSERT_TRUE(survivor->Open(daemon));
      held = FunctionCounters(daemon.Status(), 0);
    } else {
      // The daemon notices the dead client and takes everything it owned back.
      std::string now;
      EXPECT_TRUE(WaitUntil([&] {
        now = daemon.Status();
        return ClientGone(now, child) && FunctionCounters(now, 1) == idle;
      })) << "after the kill: " << FunctionCounters(now, 1) << "\nidle:        " << idle;
      EXPECT_EQ(FunctionCounters(now, 0), held) << "function 0 must hold only the survivor's";
    }
    ASSERT_TRUE(survivor->MovesExactBytes(rng));
    if (HasFailure()) break;
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("crash/restart: %u clients killed (%u while opening), %u daemon kills and restarts, "
              "%.1f s, device counters back to idle after each\n",
              client_kills, early_kills, daemon_kills, seconds);
  survivor->e.Close();
}

}  // namespace
}  // namespace onchip::testing
