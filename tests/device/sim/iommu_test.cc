// The IOMMU: mapping rules, bounds, mappings changing under running commands, and process
// memory (another process's anonymous memory reached by copying).
#include <dirent.h>
#include <grp.h>
#include <linux/capability.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "tests/device/sim/memory_child.h"
#include "tests/device/sim/sim_fixture.h"
#include "tools/sim/iommu.h"
#include "uapi/prm/opcodes.h"
#include "uapi/prm/resources.h"

namespace onchip::sim::testing {
namespace {

struct Buffer {
  explicit Buffer(std::size_t n) : p(static_cast<std::byte*>(std::aligned_alloc(4096, n))) {
    std::memset(p, 0, n);
  }
  ~Buffer() { std::free(p); }
  std::byte* p;
};

TEST(IommuTest, MapRules) {
  Iommu m;
  Buffer b(4 * 4096);
  EXPECT_EQ(m.Map({0x1000, 0, b.p}).error().errno_value(), EINVAL);
  EXPECT_EQ(m.Map({0x1001, 4096, b.p}).error().errno_value(), EINVAL);
  EXPECT_EQ(m.Map({0x1000, 100, b.p}).error().errno_value(), EINVAL);
  EXPECT_EQ(m.Map({0x1000, 4096, nullptr}).error().errno_value(), EINVAL);
  EXPECT_EQ(m.Map({~uint64_t{0} & ~uint64_t{0xfff}, 8192, b.p}).error().errno_value(), EINVAL);
  ASSERT_TRUE(m.Map({0x2000, 2 * 4096, b.p}));
  EXPECT_EQ(m.Map({0x1000, 2 * 4096, b.p}).error().errno_value(), EINVAL);  // overlaps below
  EXPECT_EQ(m.Map({0x3000, 4096, b.p}).error().errno_value(), EINVAL);      // inside
  ASSERT_TRUE(m.Map({0x4000, 4096, b.p + 2 * 4096}));                        // adjacent is fine
  EXPECT_EQ(m.Unmap(0x2000, 4096).error().errno_value(), ENOENT);            // wrong length
  EXPECT_EQ(m.Unmap(0x3000, 4096).error().errno_value(), ENOENT);            // not a start
  ASSERT_TRUE(m.Unmap(0x2000, 2 * 4096));
  EXPECT_EQ(m.mapping_count(), 1u);
}

TEST(IommuTest, TranslationIsBoundedByOneMapping) {
  Iommu m;
  Buffer a(8192), b(4096);
  ASSERT_TRUE(m.Map({0x10000, 8192, a.p}));
  ASSERT_TRUE(m.Map({0x12000, 4096, b.p}));
  Iommu::Access acc(m);
  EXPECT_EQ(acc.Translate(0x10000, 8192), a.p);
  EXPECT_EQ(acc.Translate(0x11ff0, 16), a.p + 0x1ff0);
  EXPECT_EQ(acc.Translate(0x11ff0, 17), nullptr);  // straddles two mappings
  EXPECT_EQ(acc.Translate(0xf000, 16), nullptr);
  EXPECT_EQ(acc.Translate(0x13000, 1), nullptr);
  EXPECT_EQ(acc.Translate(~uint64_t{0} - 4, 16), nullptr);  // wraps
  EXPECT_EQ(acc.Translate(0x10000, 0), nullptr);
}

// A remembered translation (a doorbell record's) is used until a mapping goes away: after an
// unmap it is looked up again, so a range remapped elsewhere reaches the new memory and an
// unmapped one nothing.
TEST(IommuTest, CachedTranslationIsForgottenAtUnmap) {
  Iommu m;
  Buffer a(4096), b(4096);
  ASSERT_TRUE(m.Map({0x10000, 4096, a.p}));
  Iommu::CachedTranslation cache;
  std::atomic_ref<uint32_t>(*reinterpret_cast<uint32_t*>(a.p + 8)).store(7);
  {
    Iommu::Access acc(m);
    EXPECT_EQ(acc.Translate(0x10008, 4, cache), a.p + 8);
    EXPECT_EQ(acc.LoadAcquire32(0x10008, cache), 7u);
    EXPECT_EQ(acc.Translate(0x10010, 4, cache), a.p + 0x10);  // another range: looked up
  }
  ASSERT_TRUE(m.Unmap(0x10000, 4096));
  {
    Iommu::Access acc(m);
    EXPECT_EQ(acc.Translate(0x10010, 4, cache), nullptr);
    EXPECT_EQ(acc.LoadAcquire32(0x10008, cache), std::nullopt);
  }
  ASSERT_TRUE(m.Map({0x10000, 4096, b.p}));
  std::atomic_ref<uint32_t>(*reinterpret_cast<uint32_t*>(b.p + 8)).store(9);
  Iommu::Access acc(m);
  EXPECT_EQ(acc.LoadAcquire32(0x10008, cache), 9u);
  EXPECT_EQ(acc.Translate(0x10008, 4, cache), b.p + 8);
}

TEST(IommuTest, ReadWriteCopyOnlyInsideMappings) {
  Iommu m;
  Buffer a(4096);
  ASSERT_TRUE(m.Map({0x10000, 4096, a.p}));
  std::array<std::byte, 8> v{std::byte{1}, std::byte{2}};
  EXPECT_TRUE(m.Write(0x10ff8, v));
  EXPECT_EQ(a.p[0xff8], std::byte{1});
  EXPECT_FALSE(m.Write(0x10ffc, v));
  EXPECT_EQ(a.p[0xffc], std::byte{0});  // nothing partial
  std::array<std::byte, 8> r{};
  EXPECT_TRUE(m.Read(0x10ff8, r));
  EXPECT_EQ(r[1], std::byte{2});
  EXPECT_FALSE(m.Read(0x11000, r));
}

uint64_t Addr(const void* p) { return reinterpret_cast<uint64_t>(p); }

TEST(IommuProcessTest, MapRules) {
  Iommu m;
  Buffer b(4 * 4096);
  const pid_t self = getpid();
  EXPECT_EQ(m.MapProcess(0x1000, 0, self, Addr(b.p)).error().errno_value(), EINVAL);
  EXPECT_EQ(m.MapProcess(0x1001, 4096, self, Addr(b.p)).error().errno_value(), EINVAL);
  EXPECT_EQ(m.MapProcess(0x1000, 4096, self, Addr(b.p) + 8).error().errno_value(), EINVAL);
  EXPECT_EQ(m.MapProcess(0x1000, 4096, self, 0).error().errno_value(), EINVAL);
  EXPECT_EQ(m.MapProcess(0x1000, 4096, 0, Addr(b.p)).error().errno_value(), EINVAL);
  ASSERT_TRUE(m.MapProcess(0x2000, 2 * 4096, self, Addr(b.p)));
  // One address space of both kinds: overlaps are refused either way round.
  EXPECT_EQ(m.Map({0x3000, 4096, b.p}).error().errno_value(), EINVAL);
  EXPECT_EQ(m.MapProcess(0x1000, 2 * 4096, self, Addr(b.p)).error().errno_value(), EINVAL);
  ASSERT_TRUE(m.Map({0x4000, 4096, b.p + 2 * 4096}));
  EXPECT_EQ(m.MapProcess(0x4000, 4096, self, Addr(b.p)).error().errno_value(), EINVAL);
  // An address the process does not have.
  void* gone = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(gone, MAP_FAILED);
  munmap(gone, 4096);
  EXPECT_EQ(m.MapProcess(0x8000, 4096, self, Addr(gone)).error().errno_value(), EFAULT);
  // A process that no longer exists.
  const pid_t child = fork();
  if (child == 0) _exit(0);
  ASSERT_GT(child, 0);
  ASSERT_EQ(waitpid(child, nullptr, 0), child);
  EXPECT_EQ(m.MapProcess(0x8000, 4096, child, Addr(b.p)).error().errno_value(), ESRCH);
  EXPECT_EQ(m.mapping_count(), 2u);
  ASSERT_TRUE(m.Unmap(0x2000, 2 * 4096));
  EXPECT_EQ(m.mapping_count(), 1u);
}

TEST(IommuProcessTest, OwnPidIsReachedByCopyingOnly) {
  Iommu m;
  Buffer b(2 * 4096);
  ASSERT_TRUE(m.MapProcess(0x10000, 2 * 4096, getpid(), Addr(b.p)));
  Iommu::Access acc(m);
  EXPECT_EQ(acc.Translate(0x10000, 8), nullptr);  // no pointer into process memory
  EXPECT_TRUE(acc.Mapped(0x10000, 2 * 4096));
  EXPECT_FALSE(acc.Mapped(0x10000, 2 * 4096 + 1));
  const auto v = PatternBytes(100, 5);
  EXPECT_TRUE(acc.Write(0x10ff0, v));  // across the page boundary
  EXPECT_EQ(std::memcmp(b.p + 0xff0, v.data(), v.size()), 0);
  std::vector<std::byte> r(100);
  EXPECT_TRUE(acc.Read(0x10ff0, r));
  EXPECT_EQ(r, v);
  EXPECT_FALSE(acc.Read(0x11fa0, r));  // past the mapping's end: nothing copied
  EXPECT_FALSE(acc.Write(0x11fa0, v));
  EXPECT_EQ(b.p[0x1fa0], std::byte{0});
}

// The number of descriptors this process has open.
std::size_t OpenFds() {
  std::size_t n = 0;
  if (DIR* d = opendir("/proc/self/fd")) {
    while (readdir(d) != nullptr) ++n;
    closedir(d);
  }
  return n;
}

// A process's mappings share one /proc/PID/mem (and its maps): a client with many MRs costs the
// device two descriptors, not some per MR (which would end at RLIMIT_NOFILE), and the last unmap
// closes them.
TEST(IommuProcessTest, EveryMappingOfAProcessSharesOneFile) {
  constexpr std::size_t kPages = 512;
  Iommu m;
  Buffer b(kPages * 4096);
  const std::size_t before = OpenFds();
  for (std::size_t i = 0; i < kPages; ++i)
    ASSERT_TRUE(m.MapProcess(0x100000 + i * 0x2000, 4096, getpid(), Addr(b.p + i * 4096)));
  EXPECT_LE(OpenFds(), before + 2);
  const auto v = PatternBytes(64, 9);
  ASSERT_TRUE(m.Write(0x100000 + (kPages - 1) * 0x2000, v));
  EXPECT_EQ(std::memcmp(b.p + (kPages - 1) * 4096, v.data(), v.size()), 0);
  for (std::size_t i = 0; i < kPages; ++i) ASSERT_TRUE(m.Unmap(0x100000 + i * 0x2000, 4096));
  EXPECT_EQ(OpenFds(), before);
}

// Every page is checked at map time, as the kernel pins every page of a registration: a hole
// or a PROT_NONE page anywhere in the range is EFAULT, not only at its start. A read-only page
// is readable, and a write that touches it fails without storing a byte, although the kernel's
// /proc/PID/mem would force it.
TEST(IommuProcessTest, PagesAreCheckedAtMapTimeAndReadOnlyStaysReadOnly) {
  constexpr std::size_t kPage = 4096;
  auto* p = static_cast<std::byte*>(
      mmap(nullptr, 4 * kPage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(p, MAP_FAILED);
  std::memset(p, 0x11, 4 * kPage);
  Iommu m;
  const pid_t self = getpid();
  ASSERT_EQ(mprotect(p + 3 * kPage, kPage, PROT_NONE), 0);
  EXPECT_EQ(m.MapProcess(0x10000, 4 * kPage, self, Addr(p)).error().errno_value(), EFAULT);
  ASSERT_EQ(munmap(p + 3 * kPage, kPage), 0);
  EXPECT_EQ(m.MapProcess(0x10000, 4 * kPage, self, Addr(p)).error().errno_value(), EFAULT);
  ASSERT_EQ(mprotect(p + kPage, kPage, PROT_READ), 0);
  ASSERT_TRUE(m.MapProcess(0x10000, 3 * kPage, self, Addr(p)));
  const auto v = PatternBytes(64, 7);
  EXPECT_TRUE(m.Write(0x10000, v));
  EXPECT_EQ(std::memcmp(p, v.data(), v.size()), 0);
  EXPECT_FALSE(m.Write(0x11000, v));
  EXPECT_FALSE(m.Write(0x10fe0, v));  // straddles into the read-only page: nothing stored
  EXPECT_EQ(p[0xfe0], std::byte{0x11});
  EXPECT_EQ(p[0x1000], std::byte{0x11});
  EXPECT_TRUE(m.Write(0x12000, v));
  std::vector<std::byte> r(64);
  EXPECT_TRUE(m.Read(0x11000, r));
  EXPECT_EQ(r, std::vector<std::byte>(64, std::byte{0x11}));
  ASSERT_TRUE(m.Unmap(0x10000, 3 * kPage));
  munmap(p, 3 * kPage);
}

// The child's copy of `b` is a different page from ours after fork: the device reaching the
// child's pid changes the child's bytes and not ours.
TEST(IommuProcessTest, ForkedChildsMemoryThenTheChildDies) {
  Iommu m;
  Buffer b(2 * 4096);
  MemoryChild child;
  ASSERT_TRUE(m.MapProcess(0x40000, 2 * 4096, child.pid(), Addr(b.p)));
  const auto v = PatternBytes(300, 9);
  ASSERT_TRUE(m.Write(0x40f00, v));
  EXPECT_EQ(child.Sum(b.p + 0xf00, v.size()), Checksum(v));
  EXPECT_EQ(b.p[0xf00 + 1], std::byte{0});  // our copy untouched
  child.Fill(b.p + 0x1000, 64, 3);
  std::vector<std::byte> r(64);
  ASSERT_TRUE(m.Read(0x41000, r));
  EXPECT_EQ(r, PatternBytes(64, 3));
  {
    Iommu::Access acc(m);
    // Handover: body, then the ownership byte.
    std::vector<std::byte> cqe(64, std::byte{0x5a});
    cqe[63] = std::byte{1};
    ASSERT_TRUE(acc.WriteHandover(0x40040, cqe));
    EXPECT_EQ(child.Sum(b.p + 0x40, 64), Checksum(cqe));
    auto word = acc.LoadAcquire32(0x41000);
    ASSERT_TRUE(word);
    uint32_t expect;
    std::memcpy(&expect, r.data(), 4);
    EXPECT_EQ(*word, expect);
    EXPECT_FALSE(acc.LoadAcquire32(0x41002));  // misaligned
    // Fetch-and-add and a compare-and-swap that misses, then one that hits.
    ASSERT_TRUE(acc.Write(0x41008, std::as_bytes(std::span<const uint64_t>(std::array<uint64_t, 1>{40}))));
    EXPECT_EQ(acc.Update64(0x41008, [](uint64_t w) { return w + 2; }), 40u);
    EXPECT_EQ(child.Load64(b.p + 0x1008), 42u);
    EXPECT_EQ(acc.Update64(0x41008, [](uint64_t w) { return w == 7 ? 9 : w; }), 42u);
    EXPECT_EQ(acc.Update64(0x41008, [](uint64_t w) { return w == 42 ? 9 : w; }), 42u);
    EXPECT_EQ(child.Load64(b.p + 0x1008), 9u);
    EXPECT_FALSE(acc.Update64(0x41004, [](uint64_t w) { return w; }));  // misaligned
  }
  child.Kill();
  // The target is gone: every access fails, none crashes, the mapping stays until unmapped.
  EXPECT_FALSE(m.Read(0x40000, r));
  EXPECT_FALSE(m.Write(0x40000, v));
  {
    Iommu::Access acc(m);
    EXPECT_FALSE(acc.WriteHandover(0x40040, r));
    EXPECT_FALSE(acc.LoadAcquire32(0x41000));
    EXPECT_FALSE(acc.Update64(0x41008, [](uint64_t w) { return w + 1; }));
    EXPECT_TRUE(acc.Mapped(0x40000, 4096));
  }
  EXPECT_TRUE(m.Unmap(0x40000, 2 * 4096));
}

// Removes `cap` from this process's effective, permitted and inheritable sets.
bool DropCapability(int cap) {
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2]{};
  if (syscall(SYS_capget, &header, data) != 0) return false;
  const uint32_t bit = 1u << (cap % 32);
  data[cap / 32].effective &= ~bit;
  data[cap / 32].permitted &= ~bit;
  data[cap / 32].inheritable &= ~bit;
  return syscall(SYS_capset, &header, data) == 0;
}

// The kernel refuses process_vm_readv without ptrace access: EPERM at map time, with the remedy
// in the message. As root, a forked helper drops to another uid (or, where no other uid exists,
// as in a user namespace mapping only root, gives up CAP_SYS_PTRACE, which its target still
// holds) and maps our memory; as another user, the target makes itself non-dumpable.
TEST(IommuProcessTest, RefusedWithoutPtraceAccessIsEpermAtMapTime) {
  Buffer b(4096);
  if (geteuid() == 0) {
    const pid_t target = getpid();
    int fds[2];
    ASSERT_EQ(pipe(fds), 0);
    const pid_t helper = fork();
    if (helper == 0) {
      int answer = -1;
      if ((setgroups(0, nullptr) == 0 && setresgid(65534, 65534, 65534) == 0 &&
           setresuid(65534, 65534, 65534) == 0) ||
          DropCapability(CAP_SYS_PTRACE)) {
        Iommu m;
        auto r = m.MapProcess(0x1000, 4096, target, Addr(b.p));
        answer = r ? 0 : r.error().errno_value();
        if (!r && std::strstr(r.error().what(), "PR_SET_PTRACER") == nullptr) answer = -2;
      }
      (void)!write(fds[1], &answer, sizeof answer);
      _exit(0);
    }
    ASSERT_GT(helper, 0);
    close(fds[1]);
    int answer = -3;
    ASSERT_EQ(read(fds[0], &answer, sizeof answer), static_cast<ssize_t>(sizeof answer));
    close(fds[0]);
    waitpid(helper, nullptr, 0);
    if (answer == -1) GTEST_SKIP() << "can neither switch to another uid nor drop CAP_SYS_PTRACE";
    EXPECT_EQ(answer, EPERM) << "(-2: the message names no remedy)";
    return;
  }
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  const pid_t target = fork();
  if (target == 0) {
    prctl(PR_SET_DUMPABLE, 0);
    (void)!write(fds[1], "x", 1);
    pause();
    _exit(0);
  }
  char c;
  ASSERT_EQ(read(fds[0], &c, 1), 1);
  Iommu m;
  auto r = m.MapProcess(0x1000, 4096, target, Addr(b.p));
  kill(target, SIGKILL);
  waitpid(target, nullptr, 0);
  close(fds[0]);
  close(fds[1]);
  if (r) GTEST_SKIP() << "this process may trace a non-dumpable process (CAP_SYS_PTRACE)";
  EXPECT_EQ(r.error().errno_value(), EPERM);
  EXPECT_NE(std::strstr(r.error().what(), "PR_SET_PTRACER"), nullptr);
}

class IommuDeviceTest : public SimTest {};

TEST_F(IommuDeviceTest, MappingsChangeWhileCommandsRun) {
  BringUp();
  std::atomic<bool> stop{false};
  std::thread churn([&] {
    Buffer b(4096);
    while (!stop.load()) {
      ASSERT_TRUE(sim_->MapDma({0x7000'0000, 4096, b.p}));
      ASSERT_TRUE(sim_->UnmapDma(0x7000'0000, 4096));
    }
  });
  for (int i = 0; i < 200; ++i) {
    auto r = Exec(prm::CommandIn<prm::alloc_pd_in>(prm::ALLOC_PD), 16);
    ASSERT_TRUE(Ok(r));
    auto d = prm::CommandIn<prm::dealloc_pd_in>(prm::DEALLOC_PD);
    d.set(prm::dealloc_pd_in::pd, r.get(prm::alloc_pd_out::pd));
    ASSERT_TRUE(Ok(Exec(d, 16)));
  }
  stop.store(true);
  churn.join();
  EXPECT_EQ(sim_->counters().pds, 0u);
  EXPECT_EQ(sim_->dma_mappings(), 1u);  // the writer's arena
}

}  // namespace
}  // namespace onchip::sim::testing
