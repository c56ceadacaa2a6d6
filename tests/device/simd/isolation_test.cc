// The device daemon keeps its clients apart as the kernel keeps uverbs files apart: each test is
// an attack one client (or a stranger) makes on another client or on the daemon, and checks the
// attacker is refused with the kernel's errno, the victim's objects and bytes are untouched and
// the daemon goes on serving.
#include <fcntl.h>
#include <grp.h>
#include <gtest/gtest.h>
#include <infiniband/verbs.h>
#include <rdma/ib_user_verbs.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "driver/bus/simd/frame_io.h"
#include "driver/cq.h"
#include "driver/device.h"
#include "driver/dm.h"
#include "driver/events.h"
#include "driver/mr.h"
#include "driver/open.h"
#include "driver/pd.h"
#include "driver/verbs/calls.h"
#include "tools/testing/rc_connect.h"
#include "tests/device/simd/simd_client.h"
#include "tools/sim/bar_layout.h"
#include "tools/simd/client_file.h"
#include "uapi/prm/cq.h"
#include "uapi/prm/field.h"
#include "uapi/prm/init_seg_access.h"
#include "uapi/prm/mkey.h"
#include "uapi/prm/opcodes.h"
#include "uapi/prm/umr.h"
#include "uapi/sim/syndrome.h"
#include "uapi/simd_protocol.h"
#include "uapi/verbs/dmah.h"
#include "uapi/vpci.h"

namespace onchip::testing {
namespace {

namespace v = driver::verbs;
using namespace simd_client;  // NOLINT: the daemon and its clients

// A connection of our own to the daemon's socket: the frames an attacker writes by hand.
class RawClient {
 public:
  explicit RawClient(const std::string& path) {
    fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::strncpy(a.sun_path, path.c_str(), sizeof(a.sun_path) - 1);
    connected_ = connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0;
  }
  ~RawClient() { close(fd_); }
  bool connected() const { return connected_; }
  // The status of the daemon's answer to one frame, or -1 when none came.
  int Call(simd::MessageType type, std::span<const std::byte> payload,
           std::span<const int> fds = {}) {
    if (!simd::SendFrame(fd_, type, 0, {payload}, fds)) return -1;
    auto reply = simd::RecvFrame(fd_);
    return reply ? static_cast<int>(reply->header.status) : -1;
  }
  // The status of a hello without address-space handles; `reply` gets the daemon's answer.
  int Hello(uint32_t function, simd::HelloReply* reply = nullptr) {
    simd::HelloRequest hello{.function = function, .pid = 0};
    if (!simd::SendFrame(fd_, simd::MessageType::kHello, 0, {simd::AsBytes(hello)})) return -1;
    auto frame = simd::RecvFrame(fd_);
    if (!frame) return -1;
    if (reply != nullptr && frame->header.status == 0)
      if (auto r = simd::ReadStruct<simd::HelloReply>(frame->payload)) *reply = *r;
    return static_cast<int>(frame->header.status);
  }
  // The fds of a successful hello without address-space handles (the window, the clock page,
  // the interrupt eventfd), the caller's to close; empty when refused.
  std::vector<int> HelloFds(uint32_t function, simd::HelloReply* reply) {
    simd::HelloRequest hello{.function = function, .pid = 0};
    if (!simd::SendFrame(fd_, simd::MessageType::kHello, 0, {simd::AsBytes(hello)})) return {};
    auto frame = simd::RecvFrame(fd_);
    if (!frame || frame->header.status != 0) return {};
    if (auto r = simd::ReadStruct<simd::HelloReply>(frame->payload)) *reply = *r;
    std::vector<int> fds;
    for (std::size_t i = 0; i < frame->fds.size(); ++i) fds.push_back(frame->TakeFd(i));
    return fds;
  }
  // The first frame the daemon sends without being asked, or -1.
  int Unasked() {
    auto reply = simd::RecvFrame(fd_);
    return reply ? static_cast<int>(reply->header.status) : -1;
  }

 private:
  int fd_ = -1;
  bool connected_ = false;
};

// DESTROY_MKEY of an mkey an attack test made by hand.
Result<void> DestroyMkey(driver::Device& device, uint32_t mkey_index) {
  auto in = prm::CommandIn<prm::destroy_mkey_in>(prm::DESTROY_MKEY);
  in.set(prm::destroy_mkey_in::mkey_index, mkey_index);
  std::vector<std::byte> out(prm::size_bytes<prm::destroy_mkey_out>);
  return device.commander().Exec(in.bytes(), out);
}

class IsolationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    signal(SIGPIPE, SIG_IGN);
    StartDaemon({});
  }
  void StartDaemon(std::vector<std::string> args) {
    daemon_.reset();
    daemon_ = std::make_unique<Daemon>("isolation", std::move(args));
    ASSERT_TRUE(daemon_->Start());
  }
  // The daemon still serves: a new client gets a PD.
  void ExpectServing() {
    auto d = driver::Open(daemon_->locator(0));
    ASSERT_TRUE(d) << d.error().describe();
    ibv_pd* pd = v::alloc_pd((*d)->verbs());
    ASSERT_NE(pd, nullptr) << strerror(errno);
    EXPECT_EQ(v::dealloc_pd(pd), 0);
    (*d)->Close();
  }
  std::unique_ptr<Daemon> daemon_;
};

// F5: QUERY_MKEY and QUERY_CQ carry the client's uid, and the firmware answers only the owner
// (the rkey, VA and IOVAs of another client's MR are what an mkey forged over them would need).
TEST_F(IsolationTest, AnotherClientsMkeyAndCqCannotBeQueried) {
  Endpoint victim;
  ASSERT_TRUE(victim.Open(daemon_->locator(0), 0));
  auto attacker = driver::Open(daemon_->locator(0));
  ASSERT_TRUE(attacker) << attacker.error().describe();
  auto query_mkey = [&](driver::Device& d, uint32_t lkey) {
    auto in = prm::CommandIn<prm::query_mkey_in>(prm::QUERY_MKEY);
    in.set(prm::query_mkey_in::mkey_index, lkey >> 8);
    std::vector<std::byte> out(prm::size_bytes<prm::query_mkey_out>);
    return d.commander().Exec(in.bytes(), out);
  };
  auto query_cq = [&](driver::Device& d, uint32_t cqn) {
    auto in = prm::CommandIn<prm::query_cq_in>(prm::QUERY_CQ);
    in.set(prm::query_cq_in::cqn, cqn);
    std::vector<std::byte> out(prm::size_bytes<prm::query_cq_out>);
    return d.commander().Exec(in.bytes(), out);
  };
  const uint32_t victim_cqn = driver::Cq::From(victim.cq)->cqn;
  auto m = query_mkey(**attacker, victim.mr->lkey);
  ASSERT_FALSE(m);
  EXPECT_TRUE(m.error().from_firmware()) << m.error().describe();
  auto c = query_cq(**attacker, victim_cqn);
  ASSERT_FALSE(c);
  EXPECT_TRUE(c.error().from_firmware()) << c.error().describe();
  // The owner is answered.
  EXPECT_TRUE(query_mkey(*victim.device, victim.mr->lkey));
  EXPECT_TRUE(query_cq(*victim.device, victim_cqn));
  (*attacker)->Close();
  victim.Close();
  ExpectServing();
}

// F1: an MTT entry is a bus address, and a client knows (or guesses) another client's IOVAs. A
// key on the attacker's own PD over the victim's MR pages would read and write the victim's
// local-only memory; the device refuses it, as the kernel builds a user MR only over the
// caller's own pinned pages. The same command over the attacker's own pages is accepted.
TEST_F(IsolationTest, AnMkeyOverAnotherClientsMemoryIsRefused) {
  Endpoint victim, attacker;
  ASSERT_TRUE(victim.Open(daemon_->locator(0), 0));
  ASSERT_TRUE(attacker.Open(daemon_->locator(0), 0));
  for (std::size_t i = 0; i < victim.buf->size; ++i) victim.buf->data[i] = static_cast<uint8_t>(i);
  const uint64_t victim_iova = driver::Mr::From(victim.mr)->mapping.iova();
  const uint64_t own_iova = driver::Mr::From(attacker.mr)->mapping.iova();
  ASSERT_NE(victim_iova, 0u);
  ASSERT_NE(own_iova, 0u);
  using C = prm::create_mkey_in;
  constexpr auto mkc = C::memory_key_mkey_entry;
  auto create = [&](uint64_t bus) -> Result<uint32_t> {
    prm::Message<C> in(16);
    in.set(C::opcode, prm::CREATE_MKEY)
        .set(mkc.access_mode_1_0, prm::MKC_ACCESS_MODE_MTT)
        .set(mkc.qpn, prm::MLX5_MKEY_NO_QPN)
        .set(mkc.lr, 1)
        .set(mkc.lw, 1)
        .set(mkc.rr, 1)
        .set(mkc.rw, 1)
        .set(mkc.pd, driver::Pd::From(attacker.pd)->pdn)
        .set(mkc.start_addr, 0)
        .set(mkc.len, 4096)
        .set(mkc.log_page_size, 12)
        .set(mkc.translations_octword_size, 1)
        .set(C::translations_octword_actual_size, 1)
        .set(prm::Element<64>{C::klm_pas_mtt.bit_offset, C::klm_pas_mtt.name}, bus);
    std::vector<std::byte> out(prm::size_bytes<prm::create_mkey_out>);
    ONCHIP_CHECK(attacker.device->commander().Exec(in.bytes(), out));
    return static_cast<uint32_t>(
        prm::Get(std::span<const std::byte>(out), prm::create_mkey_out::mkey_index));
  };
  auto stolen = create(victim_iova);
  ASSERT_FALSE(stolen) << "an mkey over another client's pages was created";
  ASSERT_TRUE(stolen.error().from_firmware()) << stolen.error().describe();
  EXPECT_EQ(stolen.error().firmware().syndrome,
            static_cast<uint32_t>(sim::Syndrome::MKEY_MTT_UNMAPPED));
  EXPECT_EQ(stolen.error().errno_value(), EINVAL);
  auto own = create(own_iova);
  ASSERT_TRUE(own) << own.error().describe();
  EXPECT_TRUE(DestroyMkey(*attacker.device, *own));
  for (std::size_t i = 0; i < victim.buf->size; ++i)
    ASSERT_EQ(victim.buf->data[i], static_cast<uint8_t>(i)) << "at " << i;
  attacker.Close();
  victim.Close();
  ExpectServing();
}

// F1: a queue's doorbell record and pages are bus addresses too. A CQ whose doorbell record or
// pages lie in another client's memory would have the device write CQEs there; the device
// refuses both, and accepts the same CQ over the attacker's own memory.
TEST_F(IsolationTest, AQueueInAnotherClientsMemoryIsRefused) {
  Endpoint victim, attacker;
  ASSERT_TRUE(victim.Open(daemon_->locator(0), 0));
  ASSERT_TRUE(attacker.Open(daemon_->locator(0), 0));
  const uint64_t victim_iova = driver::Mr::From(victim.mr)->mapping.iova();
  // The attacker's own CQ, as the device holds it: a context and pages it may name.
  auto query = prm::CommandIn<prm::query_cq_in>(prm::QUERY_CQ);
  query.set(prm::query_cq_in::cqn, driver::Cq::From(attacker.cq)->cqn);
  std::vector<std::byte> found(prm::size_bytes<prm::query_cq_out> + 8 * 8);
  ASSERT_TRUE(attacker.device->commander().Exec(query.bytes(), found));
  using Q = prm::cqc_bits<prm::query_cq_out::cq_context.bit_offset>;
  const std::span<const std::byte> q(found);
  std::vector<uint64_t> pages;
  for (std::size_t i = 0; i < 8; ++i)
    if (uint64_t e = prm::Get(q, prm::query_cq_out::pas[i]); e != 0) pages.push_back(e);
  ASSERT_FALSE(pages.empty());
  using In = prm::create_cq_in;
  auto create = [&](uint64_t dbr, uint64_t first_page) -> Result<uint32_t> {
    auto in = prm::CommandIn<In>(prm::CREATE_CQ, 0, 8 * pages.size());
    in.set(In::cq_context.log_cq_size, prm::Get(q, Q::log_cq_size))
        .set(In::cq_context.cqe_sz, prm::Get(q, Q::cqe_sz))
        .set(In::cq_context.uar_page, prm::Get(q, Q::uar_page))
        .set(In::cq_context.c_eqn_or_apu_element, prm::Get(q, Q::c_eqn_or_apu_element))
        .set(In::cq_context.log_page_size, prm::Get(q, Q::log_page_size))
        .set(In::cq_context.dbr_addr, dbr);
    for (std::size_t i = 0; i < pages.size(); ++i)
      in.set(In::pas[i], i == 0 ? first_page : pages[i]);
    std::vector<std::byte> out(prm::size_bytes<prm::create_cq_out>);
    ONCHIP_CHECK(attacker.device->commander().Exec(in.bytes(), out));
    return static_cast<uint32_t>(
        prm::Get(std::span<const std::byte>(out), prm::create_cq_out::cqn));
  };
  auto refused_with = [](const Result<uint32_t>& r, sim::Syndrome syndrome) {
    return !r && r.error().from_firmware() &&
           r.error().firmware().syndrome == static_cast<uint32_t>(syndrome);
  };
  const uint64_t own_dbr = prm::Get(q, Q::dbr_addr);
  EXPECT_TRUE(refused_with(create(victim_iova, pages[0]), sim::Syndrome::CQ_DBR_UNMAPPED));
  EXPECT_TRUE(refused_with(create(own_dbr, victim_iova), sim::Syndrome::CQ_PAS_UNMAPPED));
  // The daemon's own memory (the command queue, its pages) is no client's either.
  EXPECT_TRUE(refused_with(create(own_dbr, 0), sim::Syndrome::CQ_PAS_UNMAPPED));
  auto own = create(own_dbr, pages[0]);
  ASSERT_TRUE(own) << own.error().describe();
  auto destroy = prm::CommandIn<prm::destroy_cq_in>(prm::DESTROY_CQ);
  destroy.set(prm::destroy_cq_in::cqn, *own);
  std::vector<std::byte> out(prm::size_bytes<prm::destroy_cq_out>);
  EXPECT_TRUE(attacker.device->commander().Exec(destroy.bytes(), out));
  attacker.Close();
  victim.Close();
  ExpectServing();
}

// F6: device memory has an owner too. An mkey over another client's MEMIC range would read and
// write it and pin the allocation, so that its owner's ibv_free_dm failed with EBUSY; the daemon
// refuses it with EPERM (MEMIC carries no uid: the daemon keeps the owner, as the kernel does),
// and accepts the same command over the attacker's own allocation.
TEST_F(IsolationTest, AnMkeyOverAnotherClientsDeviceMemoryIsRefused) {
  Endpoint victim, attacker;
  ASSERT_TRUE(victim.Open(daemon_->locator(0), 0));
  ASSERT_TRUE(attacker.Open(daemon_->locator(0), 0));
  ibv_alloc_dm_attr attr{.length = 4096, .log_align_req = 0, .comp_mask = 0};
  ibv_dm* victim_dm = v::alloc_dm(victim.device->verbs(), &attr);
  ibv_dm* own_dm = v::alloc_dm(attacker.device->verbs(), &attr);
  if (victim_dm == nullptr && errno == EOPNOTSUPP) GTEST_SKIP() << "this function has no MEMIC";
  ASSERT_NE(victim_dm, nullptr) << strerror(errno);
  ASSERT_NE(own_dm, nullptr) << strerror(errno);
  using C = prm::create_mkey_in;
  constexpr auto mkc = C::memory_key_mkey_entry;
  auto create = [&](ibv_dm* dm) -> Result<uint32_t> {
    prm::Message<C> in;
    in.set(C::opcode, prm::CREATE_MKEY)
        .set(mkc.access_mode_1_0, prm::MKC_ACCESS_MODE_MEMIC & 0x3)
        .set(mkc.access_mode_4_2, prm::MKC_ACCESS_MODE_MEMIC >> 2)
        .set(mkc.qpn, prm::MLX5_MKEY_NO_QPN)
        .set(mkc.lr, 1)
        .set(mkc.lw, 1)
        .set(mkc.pd, driver::Pd::From(attacker.pd)->pdn)
        .set(mkc.start_addr, driver::Dm::From(dm)->memic.bar_offset)
        .set(mkc.len, 4096);
    std::vector<std::byte> out(prm::size_bytes<prm::create_mkey_out>);
    ONCHIP_CHECK(attacker.device->commander().Exec(in.bytes(), out));
    return static_cast<uint32_t>(
        prm::Get(std::span<const std::byte>(out), prm::create_mkey_out::mkey_index));
  };
  auto stolen = create(victim_dm);
  ASSERT_FALSE(stolen) << "an mkey over another client's device memory was created";
  EXPECT_EQ(stolen.error().errno_value(), EPERM) << stolen.error().describe();
  auto own = create(own_dm);
  ASSERT_TRUE(own) << own.error().describe();
  EXPECT_TRUE(DestroyMkey(*attacker.device, *own));
  // Nothing pins the victim's allocation: its free succeeds.
  EXPECT_EQ(v::free_dm(victim_dm), 0) << strerror(errno);
  EXPECT_EQ(v::free_dm(own_dm), 0) << strerror(errno);
  attacker.Close();
  victim.Close();
  ExpectServing();
}

// F2: a client maps no BAR0. What it maps where BAR0 would be is a window of its own
// (tools/simd/client_window.h): another client's device memory and UAR pages are not in it, so
// what the attacker reads there is not the victim's and what it stores there reaches neither
// the victim nor the device.
TEST_F(IsolationTest, AnotherClientsDeviceMemoryAndUarPagesAreNotInAClientsBar) {
  Endpoint victim, attacker;
  ASSERT_TRUE(victim.Open(daemon_->locator(0), 0));
  ASSERT_TRUE(attacker.Open(daemon_->locator(0), 0));
  ibv_alloc_dm_attr attr{.length = 4096, .log_align_req = 0, .comp_mask = 0};
  ibv_dm* dm = v::alloc_dm(victim.device->verbs(), &attr);
  if (dm == nullptr && errno == EOPNOTSUPP) GTEST_SKIP() << "this function has no MEMIC";
  ASSERT_NE(dm, nullptr) << strerror(errno);
  std::vector<std::byte> secret(4096, std::byte{0x5a}), seen(4096);
  ASSERT_EQ(dm->memcpy_to_dm(dm, 0, secret.data(), secret.size()), 0);

  // The attacker is told where the victim's allocation is (it could guess: MEMIC is small).
  const uint64_t at = driver::Dm::From(dm)->memic.bar_offset;
  std::byte* const bar = attacker.device->bus().bar0();
  std::memcpy(seen.data(), bar + at, seen.size());
  EXPECT_NE(seen, secret) << "the attacker read the victim's device memory";
  std::memset(bar + at, 0xee, 4096);
  // And it stores a marker in the reserved part of every UAR page.
  const sim::BarLayout layout = sim::BarLayout::For(simd::FunctionConfig(0));
  constexpr uint64_t kMarkerAt = 0x400;
  constexpr uint32_t kMarker = 0xdeadbeef;
  for (uint64_t page = layout.uar_start; page < layout.uar_end; page += prm::kUarPageBytes)
    std::memcpy(bar + page + kMarkerAt, &kMarker, sizeof(kMarker));

  ASSERT_EQ(dm->memcpy_from_dm(seen.data(), dm, 0, seen.size()), 0);
  EXPECT_EQ(seen, secret) << "the attacker's stores reached the victim's device memory";
  const std::byte* const victims = victim.device->bus().bar0();
  for (uint64_t page = layout.uar_start; page < layout.uar_end; page += prm::kUarPageBytes) {
    uint32_t word = 0;
    std::memcpy(&word, victims + page + kMarkerAt, sizeof(word));
    ASSERT_NE(word, kMarker) << "the attacker's store reached the victim's UAR page at 0x"
                             << std::hex << page;
  }
  EXPECT_EQ(v::free_dm(dm), 0) << strerror(errno);
  attacker.Close();
  victim.Close();
  ExpectServing();
}

// F2: pointing the command queue elsewhere, or at 0, through what a client maps changes nothing:
// the client's commands go over its connection and the daemon's queue address is not in any
// client's reach (and the device latched it at bring-up).
TEST_F(IsolationTest, TheCommandQueueCannotBeRedirected) {
  auto attacker = driver::Open(daemon_->locator(0));
  ASSERT_TRUE(attacker) << attacker.error().describe();
  driver::bus::Bus& bus = (*attacker)->bus();
  EXPECT_EQ(bus.Read32(prm::init_seg::kCmdqAddrH), 0u) << "the daemon's cmdq address is visible";
  EXPECT_EQ(bus.Read32(prm::init_seg::kCmdqAddrLSz) & ~prm::init_seg::kCmdqAddrLowDeviceBits, 0u);
  bus.Write32(prm::init_seg::kCmdqAddrH, 0);
  bus.Write32(prm::init_seg::kCmdqAddrLSz, 0);
  bus.Write32(prm::init_seg::kCmdDbell, 0xffffffff);
  bus.Notify();
  ExpectServing();
  (*attacker)->Close();
}

// F8: a client's sleep word is its own. Clearing it (which once told every other client the
// device was awake, so that their doorbells waited for the idle poll) leaves the victim's word
// saying the device sleeps, so the victim's next doorbell wakes it.
TEST_F(IsolationTest, ClearingItsSleepWordMisleadsNoOtherClient) {
  auto victim = driver::Open(daemon_->locator(0));
  auto attacker = driver::Open(daemon_->locator(0));
  ASSERT_TRUE(victim && attacker);
  auto word = [](driver::Device& d) {
    return std::atomic_ref<uint32_t>(
        *reinterpret_cast<uint32_t*>(d.bus().bar0() + vpci::kEngineSleepWordOffset));
  };
  bool misled = true;
  for (int attempt = 0; attempt < 20 && misled; ++attempt) {
    // Wait for the idle device to sleep (its idle period is milliseconds).
    for (int i = 0; i < 2000 && word(**victim).load() != vpci::kEngineAsleep; ++i) usleep(1000);
    ASSERT_EQ(word(**victim).load(), vpci::kEngineAsleep) << "the idle device never slept";
    word(**attacker).store(0);
    // Only a wakeup of the device in between (its idle poll) would clear the victim's word.
    misled = word(**victim).load() != vpci::kEngineAsleep;
  }
  EXPECT_FALSE(misled) << "the attacker's store reached the victim's sleep word";
  (*attacker)->Close();
  (*victim)->Close();
  ExpectServing();
}

// F2: the clock page cannot be made writable (sealed against writable mappings, even through a
// reopened descriptor), and the window cannot be shrunk under the device that stores into it.
TEST_F(IsolationTest, TheClockPageIsReadOnlyAndTheWindowCannotShrink) {
  RawClient raw(daemon_->socket());
  ASSERT_TRUE(raw.connected());
  simd::HelloReply reply{};
  std::vector<int> fds = raw.HelloFds(0, &reply);
  ASSERT_GE(fds.size(), 2u);
  const int window = fds[0], clock = fds[1];
  EXPECT_EQ(mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, clock, 0), MAP_FAILED);
  EXPECT_EQ(errno, EPERM);
  const std::string path = "/proc/self/fd/" + std::to_string(clock);
  const int reopened = open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (reopened >= 0) {
    EXPECT_EQ(mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, reopened, 0), MAP_FAILED);
    EXPECT_EQ(pwrite(reopened, "x", 1, 0), -1);
    close(reopened);
  }
  void* ro = mmap(nullptr, 4096, PROT_READ, MAP_SHARED, clock, 0);
  ASSERT_NE(ro, MAP_FAILED) << strerror(errno);
  EXPECT_NE(mprotect(ro, 4096, PROT_READ | PROT_WRITE), 0) << "the clock page became writable";
  // The internal timer (internal_timer_l) ticks in it as the device works.
  auto timer_low = [&] { return *(static_cast<volatile uint32_t*>(ro) + 1); };
  const uint32_t before = timer_low();
  ExpectServing();
  EXPECT_NE(timer_low(), before);
  munmap(ro, 4096);
  EXPECT_NE(ftruncate(window, 0), 0) << "the window shrank";
  EXPECT_EQ(errno, EPERM);
  for (int fd : fds) close(fd);
}

// The TPH steering-tag table is the daemon's to write (no client maps it): a client holds
// references to its entries, can drop only its own, and takes at most its quota of them; what
// it held goes back when it goes.
TEST_F(IsolationTest, SteeringTagEntriesAreTakenThroughTheDaemonAndAreOwnedByOneClient) {
  StartDaemon({"--quota", "steering_tags=1"});
  auto victim = driver::Open(daemon_->locator(0));
  ASSERT_TRUE(victim) << victim.error().describe();
  auto dmah_for = [](driver::Device& d, uint32_t cpu) {
    ibv_dmah_init_attr attr{};
    attr.comp_mask = IBV_DMAH_INIT_ATTR_MASK_PH | IBV_DMAH_INIT_ATTR_MASK_CPU_ID |
                     IBV_DMAH_INIT_ATTR_MASK_TPH_MEM_TYPE;
    attr.ph = 0;
    attr.cpu_id = cpu;
    attr.tph_mem_type = IBV_TPH_MEM_TYPE_VM;
    return v::alloc_dmah(d.verbs(), &attr);
  };
  ibv_dmah* held = dmah_for(**victim, 0);
  if (held == nullptr && errno == EOPNOTSUPP) GTEST_SKIP() << "this function has no TPH";
  ASSERT_NE(held, nullptr) << strerror(errno);
  ibv_dmah* same = dmah_for(**victim, 0);  // the same entry: no second one taken
  ASSERT_NE(same, nullptr) << strerror(errno);
  EXPECT_EQ(dmah_for(**victim, 1), nullptr) << "a second entry past a quota of one";
  EXPECT_EQ(errno, EAGAIN);

  // A stranger's release of every index is refused: it holds none of them.
  RawClient raw(daemon_->socket());
  ASSERT_EQ(raw.Hello(0), 0);
  for (uint32_t index = 0; index < 256; ++index) {
    simd::SteeringTagRequest release{.op = simd::kSteeringTagRelease, .cpu = 0, .mem_type = 0,
                                     .index = static_cast<uint8_t>(index), .reserved = 0};
    ASSERT_EQ(raw.Call(simd::MessageType::kSteeringTag, simd::AsBytes(release)), ENOENT);
  }
  EXPECT_EQ(v::dealloc_dmah(same), 0);
  EXPECT_EQ(v::dealloc_dmah(held), 0);
  // Its entry is free again: the next client's first is within its quota.
  (*victim)->Close();
  auto next = driver::Open(daemon_->locator(0));
  ASSERT_TRUE(next) << next.error().describe();
  ibv_dmah* again = dmah_for(**next, 1);
  ASSERT_NE(again, nullptr) << strerror(errno);
  EXPECT_EQ(v::dealloc_dmah(again), 0);
  (*next)->Close();
}

// F3: a file mapping longer than the file would raise SIGBUS in the daemon at the first device
// access past its end; it is refused at registration (EFAULT, as ib_umem_get fails on a page it
// cannot pin).
TEST_F(IsolationTest, AnMrLongerThanItsFileIsRefused) {
  Endpoint client;
  ASSERT_TRUE(client.Open(daemon_->locator(0), 0));
  const int fd = memfd_create("isolation-short", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(ftruncate(fd, 4096), 0);
  constexpr std::size_t kLength = 64 << 10;
  void* p = mmap(nullptr, kLength, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  ASSERT_NE(p, MAP_FAILED);
  errno = 0;
  ibv_mr* mr = v::reg_mr(client.pd, p, kLength, reinterpret_cast<uintptr_t>(p),
                         IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
  EXPECT_EQ(mr, nullptr);
  EXPECT_EQ(errno, EFAULT);
  if (mr != nullptr) v::dereg_mr(mr);
  munmap(p, kLength);
  close(fd);
  client.Close();
  ExpectServing();
}

// F3: once registered, a file the daemon maps cannot shrink under it (F_SEAL_SHRINK), and the MR
// goes on working.
TEST_F(IsolationTest, ARegisteredFileCannotBeTruncated) {
  Endpoint a, b;
  ASSERT_TRUE(a.Open(daemon_->locator(0), 0));
  ASSERT_TRUE(b.Open(daemon_->locator(1), 1));
  EXPECT_EQ(ftruncate(b.buf->fd, 4096), -1);
  EXPECT_EQ(errno, EPERM);
  ibv_qp* qa = a.Rc();
  ibv_qp* qb = b.Rc();
  ASSERT_TRUE(qa && qb);
  ASSERT_TRUE(Connect(qa, qb->qp_num, b.gid));
  ASSERT_TRUE(Connect(qb, qa->qp_num, a.gid));
  for (int i = 0; i < 8192; ++i) a.buf->data[i] = static_cast<uint8_t>(i * 5);
  ASSERT_TRUE(Write(a, qa, b, 0, 8192));
  EXPECT_EQ(std::memcmp(a.buf->data, b.buf->data, 8192), 0);
  a.Close();
  b.Close();
  ExpectServing();
}

// F3: a file that cannot be sealed (a memfd without MFD_ALLOW_SEALING, DPDK's hugetlbfs files) is
// mapped only for a client that may signal the daemon anyway (its own user, root); any other
// client is refused with EPERM and maps the memory as process memory instead.
TEST_F(IsolationTest, AnUnsealableFileIsMappedOnlyForAClientThatCouldEndTheDaemonAnyway) {
  constexpr std::size_t kLength = 64 << 10;
  const int fd = memfd_create("isolation-unsealable", MFD_CLOEXEC);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(ftruncate(fd, kLength), 0);
  auto refused = simd::PinClientFile(fd, 0, kLength, /*client_may_signal=*/false);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().errno_value(), EPERM);
  EXPECT_TRUE(simd::PinClientFile(fd, 0, kLength, /*client_may_signal=*/true));
  // Too short is refused either way.
  auto short_file = simd::PinClientFile(fd, 0, 2 * kLength, /*client_may_signal=*/true);
  ASSERT_FALSE(short_file);
  EXPECT_EQ(short_file.error().errno_value(), EFAULT);
  // Through the daemon, as this (root or same-user) client: the registration works and bytes land.
  Endpoint a, b;
  ASSERT_TRUE(a.Open(daemon_->locator(0), 0));
  ASSERT_TRUE(b.Open(daemon_->locator(1), 1));
  auto* p = static_cast<uint8_t*>(mmap(nullptr, kLength, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0));
  ASSERT_NE(p, MAP_FAILED);
  ibv_mr* mr = v::reg_mr(b.pd, p, kLength, reinterpret_cast<uintptr_t>(p),
                         IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
  ASSERT_NE(mr, nullptr) << strerror(errno);
  ibv_qp* qa = a.Rc();
  ibv_qp* qb = b.Rc();
  ASSERT_TRUE(qa && qb);
  ASSERT_TRUE(Connect(qa, qb->qp_num, b.gid));
  ASSERT_TRUE(Connect(qb, qa->qp_num, a.gid));
  for (int i = 0; i < 4096; ++i) a.buf->data[i] = static_cast<uint8_t>(i * 3);
  ASSERT_TRUE(WriteTo(a, qa, 0, p, mr->rkey, 4096));
  EXPECT_EQ(std::memcmp(a.buf->data, p, 4096), 0);
  EXPECT_EQ(v::dereg_mr(mr), 0);
  munmap(p, kLength);
  close(fd);
  a.Close();
  b.Close();
  ExpectServing();
}

// F4: memory without an fd is reached only through the address-space handles the client itself
// handed over at hello, never by its pid with the daemon's privileges: a hello without them maps
// no process memory.
TEST_F(IsolationTest, WithoutItsOwnHandlesAClientMapsNoProcessMemory) {
  RawClient raw(daemon_->socket());
  ASSERT_TRUE(raw.connected());
  simd::HelloReply hello;
  ASSERT_EQ(raw.Hello(0, &hello), 0);
  static thread_local std::array<std::byte, 8192> memory;
  simd::MapDmaRequest req{.iova = hello.iova_base, .length = 4096, .fd_offset = 0,
                          .host = (reinterpret_cast<uint64_t>(memory.data()) + 4095) & ~uint64_t{4095},
                          .has_fd = 0, .reserved = 0};
  EXPECT_EQ(raw.Call(simd::MessageType::kMapDma, simd::AsBytes(req)), EPERM);
  ExpectServing();
}

// F4: the socket is 0660 whatever the umask, and a process of another user (not in the
// daemon's group) is refused at its first frame with EACCES.
TEST_F(IsolationTest, AnotherUsersProcessIsRefused) {
  struct stat st{};
  ASSERT_EQ(stat(daemon_->socket().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0660u);
  if (geteuid() != 0) GTEST_SKIP() << "becoming another user needs root";
  // The socket's directory is the daemon's; let the stranger reach the socket itself, so that
  // only the daemon's check stands in its way.
  chmod(daemon_->socket().c_str(), 0666);
  const std::string dir = daemon_->socket().substr(0, daemon_->socket().rfind('/'));
  chmod(dir.c_str(), 0711);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    if (setgid(65534) != 0 || setuid(65534) != 0) _exit(10);
    RawClient raw(daemon_->socket());
    if (!raw.connected()) _exit(11);
    _exit(raw.Hello(0) == EACCES ? 0 : 12);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  if (WEXITSTATUS(status) == 10) GTEST_SKIP() << "this sandbox has no other user to become";
  EXPECT_EQ(WEXITSTATUS(status), 0) << "11: no connection, 12: not EACCES";
  ExpectServing();
}

// F11: a member of the daemon's --group is served, but the status (every client's pid, user and
// objects) is only for the daemon's own user: EACCES.
TEST_F(IsolationTest, AGroupMemberIsServedButGetsNoStatus) {
  if (geteuid() != 0) GTEST_SKIP() << "becoming another user needs root";
  StartDaemon({"--group", "nogroup"});
  // The socket is the group's; its directory (the test's, made before the daemon) must let the
  // member through.
  struct stat st{};
  ASSERT_EQ(stat(daemon_->socket().c_str(), &st), 0);
  EXPECT_EQ(st.st_gid, 65534u);
  const std::string dir = daemon_->socket().substr(0, daemon_->socket().rfind('/'));
  chmod(dir.c_str(), 0711);
  // The daemon's own user is answered.
  RawClient own(daemon_->socket());
  ASSERT_TRUE(own.connected());
  EXPECT_EQ(own.Call(simd::MessageType::kStatus, {}), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    if (setgid(65534) != 0 || setuid(65534) != 0) _exit(10);
    RawClient status(daemon_->socket());
    if (!status.connected()) _exit(11);
    if (status.Call(simd::MessageType::kStatus, {}) != EACCES) _exit(12);
    RawClient member(daemon_->socket());
    if (!member.connected()) _exit(11);
    _exit(member.Hello(0) == 0 ? 0 : 13);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  if (WEXITSTATUS(status) == 10) GTEST_SKIP() << "this sandbox has no other user to become";
  EXPECT_EQ(WEXITSTATUS(status), 0) << "11: no connection, 12: status not EACCES, 13: not served";
  ExpectServing();
}

// F9: the function serves far more clients than a handful: 64 contexts open on one function at
// once, each with a PD, a completion channel (interrupts of its own) and a CQ on it.
TEST_F(IsolationTest, SixtyFourClientsOpenAContextOnOneFunctionAtOnce) {
  constexpr int kClients = 64;
  struct Client {
    std::shared_ptr<driver::Device> device;
    ibv_pd* pd = nullptr;
    ibv_comp_channel* channel = nullptr;
    ibv_cq* cq = nullptr;
  };
  std::vector<Client> clients(kClients);
  for (int i = 0; i < kClients; ++i) {
    auto d = driver::Open(daemon_->locator(0));
    ASSERT_TRUE(d) << "client " << i << ": " << d.error().describe();
    Client& c = clients[i];
    c.device = *d;
    c.pd = v::alloc_pd(c.device->verbs());
    ASSERT_NE(c.pd, nullptr) << "client " << i << ": " << strerror(errno);
    c.channel = v::create_comp_channel(c.device->verbs());
    ASSERT_NE(c.channel, nullptr) << "client " << i << ": " << strerror(errno);
    c.cq = v::create_cq(c.device->verbs(), 16, c.channel, 0);
    ASSERT_NE(c.cq, nullptr) << "client " << i << ": " << strerror(errno);
  }
  for (Client& c : clients) {
    EXPECT_EQ(v::destroy_cq(c.cq), 0);
    close(c.channel->fd);  // ibv_destroy_comp_channel's part: the channel is the caller's
    std::free(c.channel);
    EXPECT_EQ(v::dealloc_pd(c.pd), 0);
    c.device->Close();
  }
  clients.clear();
  ExpectServing();
}

// F9: one client cannot take every object of a kind or all the device memory: past its quota a
// creation is refused with EAGAIN (as the rdma cgroup refuses a charge; ibv_alloc_dm then says
// ENOMEM), while another client
// still gets its own, and a freed object makes room again.
TEST_F(IsolationTest, PastItsQuotaAClientIsRefusedAndOthersAreNot) {
  StartDaemon({"--quota", "pd=3", "--quota", "memic_bytes=4096"});
  auto greedy = driver::Open(daemon_->locator(0));
  auto other = driver::Open(daemon_->locator(0));
  ASSERT_TRUE(greedy && other);
  std::vector<ibv_pd*> pds;
  for (;;) {
    ibv_pd* pd = v::alloc_pd((*greedy)->verbs());
    if (pd == nullptr) break;
    pds.push_back(pd);
    ASSERT_LE(pds.size(), 3u) << "the quota did not hold";
  }
  EXPECT_EQ(errno, EAGAIN);
  EXPECT_EQ(pds.size(), 3u);
  ibv_pd* others = v::alloc_pd((*other)->verbs());
  ASSERT_NE(others, nullptr) << strerror(errno);
  EXPECT_EQ(v::dealloc_pd(pds.back()), 0);
  pds.pop_back();
  ibv_pd* again = v::alloc_pd((*greedy)->verbs());
  ASSERT_NE(again, nullptr) << strerror(errno);
  pds.push_back(again);
  // Device memory: 4 KiB, and then nothing more.
  ibv_alloc_dm_attr attr{.length = 4096, .log_align_req = 0, .comp_mask = 0};
  ibv_dm* dm = v::alloc_dm((*greedy)->verbs(), &attr);
  if (dm == nullptr && errno == EOPNOTSUPP) GTEST_SKIP() << "this function has no MEMIC";
  ASSERT_NE(dm, nullptr) << strerror(errno);
  attr.length = 64;
  errno = 0;
  EXPECT_EQ(v::alloc_dm((*greedy)->verbs(), &attr), nullptr);
  // The driver tries every free range on EAGAIN and then says ENOMEM, as mlx5_ib's MEMIC
  // allocator does (drivers/infiniband/hw/mlx5/dm.c, mlx5_cmd_alloc_memic).
  EXPECT_EQ(errno, ENOMEM);
  ibv_dm* others_dm = v::alloc_dm((*other)->verbs(), &attr);
  ASSERT_NE(others_dm, nullptr) << strerror(errno);
  EXPECT_EQ(v::free_dm(others_dm), 0);
  EXPECT_EQ(v::free_dm(dm), 0);
  for (ibv_pd* pd : pds) EXPECT_EQ(v::dealloc_pd(pd), 0);
  EXPECT_EQ(v::dealloc_pd(others), 0);
  (*greedy)->Close();
  (*other)->Close();
  ExpectServing();
}

// F10: a QP's affiliated events reach its owner. A write without the right to the victim's MR
// moves the victim's QP to error with WQ_ACCESS_ERROR: the victim's async sink gets
// IBV_EVENT_QP_ACCESS_ERR for that QP, and a bystander client, whose EQ subscribes to the same
// events, gets nothing.
TEST_F(IsolationTest, AQpsAsyncEventsReachItsOwnerOnly) {
  Endpoint writer, victim, bystander;
  ASSERT_TRUE(writer.Open(daemon_->locator(0), 0));
  ASSERT_TRUE(victim.Open(daemon_->locator(1), 1));
  ASSERT_TRUE(bystander.Open(daemon_->locator(1), 1));
  // Each client's context drains its events into a pipe of its own, as its async_fd would.
  auto sink = [](Endpoint& e, std::array<int, 2>& p) {
    ASSERT_EQ(pipe2(p.data(), O_CLOEXEC | O_NONBLOCK), 0);
    ASSERT_NE(e.device->events(), nullptr);
    e.device->events()->AddAsyncSink(e.device->verbs(), p[1]);
  };
  std::array<int, 2> victim_pipe{-1, -1}, bystander_pipe{-1, -1};
  sink(victim, victim_pipe);
  sink(bystander, bystander_pipe);
  ibv_qp* qw = writer.Rc();
  ibv_qp* qv = victim.Rc();
  ASSERT_TRUE(qw && qv);
  ASSERT_TRUE(Connect(qw, qv->qp_num, victim.gid));
  ASSERT_TRUE(Connect(qv, qw->qp_num, writer.gid));
  ibv_mr* local_only = v::reg_mr(victim.pd, victim.buf->data, 4096,
                                 reinterpret_cast<uintptr_t>(victim.buf->data),
                                 IBV_ACCESS_LOCAL_WRITE);
  ASSERT_NE(local_only, nullptr) << strerror(errno);
  ibv_wc_status status = IBV_WC_SUCCESS;
  EXPECT_FALSE(WriteTo(writer, qw, 0, victim.buf->data, local_only->rkey, 64, &status));
  EXPECT_EQ(status, IBV_WC_REM_ACCESS_ERR);
  ib_uverbs_async_event_desc event{};
  const bool got = WaitUntil([&] {
    return read(victim_pipe[0], &event, sizeof event) == ssize_t(sizeof event);
  });
  ASSERT_TRUE(got) << "the victim's QP event never reached it";
  EXPECT_EQ(event.event_type, static_cast<uint32_t>(IBV_EVENT_QP_ACCESS_ERR));
  EXPECT_EQ(event.element, reinterpret_cast<uint64_t>(qv));
  EXPECT_EQ(read(bystander_pipe[0], &event, sizeof event), -1) << "a bystander got the event";
  for (Endpoint* e : {&victim, &bystander}) e->device->events()->RemoveAsyncSink(e->device->verbs());
  EXPECT_EQ(v::dereg_mr(local_only), 0);
  for (int fd : {victim_pipe[0], victim_pipe[1], bystander_pipe[0], bystander_pipe[1]}) close(fd);
  writer.Close();
  victim.Close();
  bystander.Close();
  ExpectServing();
}

// F4: a connection that never says hello is dropped when the hello timeout ends (ETIMEDOUT),
// so silent connections cannot hold the daemon's threads.
TEST_F(IsolationTest, AConnectionThatSaysNothingIsDropped) {
  StartDaemon({"--hello-timeout-ms", "200"});
  RawClient raw(daemon_->socket());
  ASSERT_TRUE(raw.connected());
  EXPECT_EQ(raw.Unasked(), ETIMEDOUT);
  ExpectServing();
}

// F4: past the connection cap, one more client is refused with EUSERS; when one leaves, the
// next one is served.
TEST_F(IsolationTest, TheConnectionCapRefusesOneMore) {
  StartDaemon({"--max-clients", "2"});
  auto first = driver::Open(daemon_->locator(0));
  ASSERT_TRUE(first) << first.error().describe();
  auto second = driver::Open(daemon_->locator(1));
  ASSERT_TRUE(second) << second.error().describe();
  auto third = driver::Open(daemon_->locator(0));
  ASSERT_FALSE(third);
  EXPECT_EQ(third.error().errno_value(), EUSERS) << third.error().describe();
  (*second)->Close();
  second->reset();
  // The daemon reaps a finished session within its poll period (a second).
  bool served = false;
  for (int i = 0; i < 40 && !served; ++i) {
    auto again = driver::Open(daemon_->locator(0));
    if (again) {
      served = true;
      (*again)->Close();
    } else {
      usleep(100'000);
    }
  }
  EXPECT_TRUE(served);
  (*first)->Close();
}

}  // namespace
}  // namespace onchip::testing
