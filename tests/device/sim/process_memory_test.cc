// The software ConnectX reaching process memory (Iommu::MapProcess), as a device daemon reaches
// a client's malloc'd buffers: commands whose cmdq entry and mailboxes lie there, and RC traffic
// (SEND, RDMA WRITE, READ, atomics, CQEs, EQEs, doorbell records, WQEs) in and out of it. First
// with this process's own pid (every device access goes through the copying paths), then with a
// forked child's memory (bytes verified by the child), and a child that dies mid-traffic.
#include <sys/mman.h>

#include <cstring>

#include "tests/device/sim/engine_node.h"
#include "tests/device/sim/memory_child.h"
#include "tests/device/sim/sim_fixture.h"

namespace onchip::sim::testing {
namespace {

using prm::QP_ST_RC;
using Piece = CommandWriter::Piece;

constexpr uint64_t kSrc = Node::kDataVa + 0x1000;
constexpr uint64_t kDst = Node::kDataVa + 0x20000;
constexpr uint64_t kBack = Node::kDataVa + 0x30000;
constexpr uint64_t kWord = Node::kDataVa + 0x40000;
constexpr uint64_t kResult = Node::kDataVa + 0x40040;
constexpr std::size_t kDataOffset = Node::kDataIova - CommandWriter::kArenaIova;

// Malloc'd memory for the command writer's arena (the kind a daemon's client registers).
struct Arena {
  Arena() : p(static_cast<std::byte*>(std::aligned_alloc(4096, CommandWriter::kArenaBytes))) {
    std::memset(p, 0, CommandWriter::kArenaBytes);
  }
  ~Arena() { std::free(p); }
  std::byte* p;
};

// An RC pair on one device whose arena is mapped by `map`. The device must stop using the arena
// (the writer unmaps it) before the arena is freed: TearDown does it in that order.
class ProcessMemoryTest : public onchip::testing::SimDeviceTest {
 protected:
  void TearDown() override {
    node_.reset();
    w_.reset();
    arena_.reset();
    SimDeviceTest::TearDown();
  }
  void Start(std::byte* arena, const CommandWriter::ArenaMapper& map) {
    w_ = std::make_unique<CommandWriter>(*sim_, arena, map);
    node_ = std::make_unique<Node>(*w_);
    node_->Start();
    cq_a_ = node_->NewCq(0);
    cq_b_ = node_->NewCq(1);
    key_ = node_->MttKey(kAll);
    a_ = node_->NewQp(0, QP_ST_RC, cq_a_.cqn, cq_a_.cqn);
    b_ = node_->NewQp(1, QP_ST_RC, cq_b_.cqn, cq_b_.cqn);
    node_->ConnectPair(a_, b_, sim_->engine().gids()[3]);
  }
  void ExpectGood(Node::CqInfo& cq, uint8_t opcode) {
    auto c = node_->Poll(cq);
    ASSERT_TRUE(c);
    EXPECT_EQ(c->opcode(), opcode) << "syndrome 0x" << std::hex << int(c->syndrome());
  }
  // RDMA WRITE kSrc -> kDst (n bytes), SEND kSrc -> kBack, READ kDst -> kBack + n, a fetch-add
  // and a compare-and-swap on kWord (its old value lands at kResult).
  void Traffic(std::size_t n) {
    node_->PostSend(a_, prm::MLX5_OPCODE_RDMA_WRITE,
                    Cat({RaddrSeg(kDst, key_), DataSeg(key_, kSrc, static_cast<uint32_t>(n))}));
    ExpectGood(cq_a_, prm::MLX5_CQE_REQ);
    node_->PostRecv(b_, key_, kBack, static_cast<uint32_t>(n));
    node_->PostSend(a_, prm::MLX5_OPCODE_SEND, DataSeg(key_, kSrc, static_cast<uint32_t>(n)));
    ExpectGood(cq_a_, prm::MLX5_CQE_REQ);
    ExpectGood(cq_b_, prm::MLX5_CQE_RESP_SEND);
    node_->PostSend(a_, prm::MLX5_OPCODE_RDMA_READ,
                    Cat({RaddrSeg(kDst, key_), DataSeg(key_, kBack + n, static_cast<uint32_t>(n))}));
    ExpectGood(cq_a_, prm::MLX5_CQE_REQ);
    node_->PostSend(a_, prm::MLX5_OPCODE_ATOMIC_FA,
                    Cat({RaddrSeg(kWord, key_), AtomicSeg(5, 0), DataSeg(key_, kResult, 8)}));
    ExpectGood(cq_a_, prm::MLX5_CQE_REQ);
    node_->PostSend(a_, prm::MLX5_OPCODE_ATOMIC_CS,
                    Cat({RaddrSeg(kWord, key_), AtomicSeg(9, 5), DataSeg(key_, kResult + 8, 8)}));
    ExpectGood(cq_a_, prm::MLX5_CQE_REQ);
  }
  void ExpectNoCommandLost() {
    const auto q = sim_->queue_counters();
    EXPECT_EQ(q.unreachable, 0u);
    EXPECT_EQ(q.delivery_errors, 0u);
  }

  std::unique_ptr<Arena> arena_ = std::make_unique<Arena>();
  std::unique_ptr<CommandWriter> w_;
  std::unique_ptr<Node> node_;
  Node::CqInfo cq_a_, cq_b_;
  Node::QpInfo a_, b_;
  uint32_t key_ = 0;
};

uint64_t Addr(const void* p) { return reinterpret_cast<uint64_t>(p); }

// Everything the device touches is malloc'd memory of this process, reached by pid.
TEST_F(ProcessMemoryTest, OwnPidCommandsQueuesAndTraffic) {
  Start(arena_->p, [](Device& d, std::byte* a) {
    auto r = d.MapProcessDma(CommandWriter::kArenaIova, CommandWriter::kArenaBytes, getpid(), Addr(a));
    EXPECT_TRUE(r) << r.error().describe();
    return std::vector<Piece>{{CommandWriter::kArenaIova, CommandWriter::kArenaBytes}};
  });
  EXPECT_EQ(Iommu::Access(sim_->iommu()).Translate(CommandWriter::kArenaIova, 64), nullptr);
  const auto msg = PatternBytes(5000, 3);  // crosses pages
  std::memcpy(node_->Data(kSrc), msg.data(), msg.size());
  node_->Arm(cq_b_);
  Traffic(msg.size());
  EXPECT_EQ(std::memcmp(node_->Data(kDst), msg.data(), msg.size()), 0);
  EXPECT_EQ(std::memcmp(node_->Data(kBack), msg.data(), msg.size()), 0);
  EXPECT_EQ(std::memcmp(node_->Data(kBack + msg.size()), msg.data(), msg.size()), 0);
  uint64_t word, fetched, compared;
  std::memcpy(&word, node_->Data(kWord), 8);
  std::memcpy(&fetched, node_->Data(kResult), 8);
  std::memcpy(&compared, node_->Data(kResult + 8), 8);
  EXPECT_EQ(fetched, 0u);
  EXPECT_EQ(compared, 5u);
  EXPECT_EQ(word, 9u);
  // The armed CQ's completion wrote an EQE into process memory.
  auto eqe = node_->PeekEqe(0);
  ASSERT_TRUE(eqe);
  EXPECT_EQ(eqe->type, prm::MLX5_EVENT_TYPE_COMP);
  ExpectNoCommandLost();
}

// The whole arena is shared anonymous memory the device reaches through a child's pid: the
// child's view (its checksum) shows the bytes the device wrote into the child.
TEST_F(ProcessMemoryTest, ChildHoldsQueuesMailboxesAndData) {
  void* shared = mmap(nullptr, CommandWriter::kArenaBytes, PROT_READ | PROT_WRITE,
                      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(shared, MAP_FAILED);
  auto* arena = static_cast<std::byte*>(shared);
  MemoryChild child;
  Start(arena, [&](Device& d, std::byte* a) {
    auto r = d.MapProcessDma(CommandWriter::kArenaIova, CommandWriter::kArenaBytes, child.pid(), Addr(a));
    EXPECT_TRUE(r) << r.error().describe();
    return std::vector<Piece>{{CommandWriter::kArenaIova, CommandWriter::kArenaBytes}};
  });
  child.Fill(node_->Data(kSrc), 3000, 11);
  Traffic(3000);
  const uint64_t expect = Checksum(PatternBytes(3000, 11));
  EXPECT_EQ(child.Sum(node_->Data(kDst), 3000), expect);
  EXPECT_EQ(child.Sum(node_->Data(kBack), 3000), expect);
  EXPECT_EQ(child.Sum(node_->Data(kBack + 3000), 3000), expect);
  EXPECT_EQ(child.Load64(node_->Data(kWord)), 9u);
  EXPECT_EQ(child.Load64(node_->Data(kResult + 8)), 5u);
  ExpectNoCommandLost();
  // Without the child the device cannot reach its command queue: the command never completes
  // and the device counts the slot unreachable, nothing worse.
  child.Kill();
  auto r = w_->Run(prm::CommandIn<prm::alloc_pd_in>(prm::ALLOC_PD).bytes(), 16, 0,
                   std::chrono::milliseconds(300));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().errno_value(), ETIMEDOUT);
  EXPECT_GT(sim_->queue_counters().unreachable, 0u);
  node_.reset();
  w_.reset();
  munmap(shared, CommandWriter::kArenaBytes);
}

// Queues in this process, the data area in a forked child's private copy of the arena: the
// device writes the child's pages, not ours; when the child is killed mid-traffic the WQEs
// that reach its memory complete in error and the rest flush.
TEST_F(ProcessMemoryTest, ChildDataThenTheChildDiesMidTraffic) {
  MemoryChild child;  // after the arena exists: the child has its own copy at the same address
  Start(arena_->p, [&](Device& d, std::byte* a) {
    const uint64_t data_end = kDataOffset + Node::kDataBytes;
    EXPECT_TRUE(d.MapDma({CommandWriter::kArenaIova, kDataOffset, a, -1, 0}));
    auto r = d.MapProcessDma(Node::kDataIova, Node::kDataBytes, child.pid(), Addr(a + kDataOffset));
    EXPECT_TRUE(r) << r.error().describe();
    EXPECT_TRUE(d.MapDma({CommandWriter::kArenaIova + data_end, CommandWriter::kArenaBytes - data_end,
                          a + data_end, -1, 0}));
    return std::vector<Piece>{{CommandWriter::kArenaIova, kDataOffset},
                              {Node::kDataIova, Node::kDataBytes},
                              {CommandWriter::kArenaIova + data_end,
                               CommandWriter::kArenaBytes - data_end}};
  });
  child.Fill(node_->Data(kSrc), 5000, 21);
  Traffic(5000);
  const uint64_t expect = Checksum(PatternBytes(5000, 21));
  EXPECT_EQ(child.Sum(node_->Data(kDst), 5000), expect);
  EXPECT_EQ(child.Sum(node_->Data(kBack), 5000), expect);
  EXPECT_EQ(child.Sum(node_->Data(kBack + 5000), 5000), expect);
  EXPECT_EQ(child.Load64(node_->Data(kWord)), 9u);
  EXPECT_EQ(child.Load64(node_->Data(kResult)), 0u);
  EXPECT_EQ(child.Load64(node_->Data(kResult + 8)), 5u);
  // Our copy of the data area saw none of it.
  const std::vector<std::byte> zeros(5000);
  EXPECT_EQ(std::memcmp(node_->Data(kDst), zeros.data(), zeros.size()), 0);

  constexpr int kBurst = 32;
  for (int i = 0; i < kBurst; ++i)
    node_->PostSend(a_, prm::MLX5_OPCODE_RDMA_WRITE,
                    Cat({RaddrSeg(kDst + i * 4096, key_), DataSeg(key_, kSrc, 4096)}));
  child.Kill();
  node_->PostSend(a_, prm::MLX5_OPCODE_RDMA_WRITE,
                  Cat({RaddrSeg(kDst, key_), DataSeg(key_, kSrc, 4096)}));
  int good = 0, failed = 0, flushed = 0;
  for (int i = 0; i < kBurst + 1; ++i) {
    auto c = node_->Poll(cq_a_);
    ASSERT_TRUE(c) << "CQE " << i;
    if (c->opcode() == prm::MLX5_CQE_REQ) {
      ASSERT_EQ(failed + flushed, 0) << "a success after the error";
      ++good;
      continue;
    }
    ASSERT_EQ(c->opcode(), prm::MLX5_CQE_REQ_ERR);
    if (failed == 0) {
      // The local read of the source or the responder's write of the target failed.
      EXPECT_TRUE(c->syndrome() == prm::MLX5_CQE_SYNDROME_LOCAL_PROT_ERR ||
                  c->syndrome() == prm::MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR)
          << "syndrome 0x" << std::hex << int(c->syndrome());
      ++failed;
    } else {
      EXPECT_EQ(c->syndrome(), prm::MLX5_CQE_SYNDROME_WR_FLUSH_ERR);
      ++flushed;
    }
  }
  EXPECT_EQ(failed, 1);
  EXPECT_EQ(good + failed + flushed, kBurst + 1);
  EXPECT_EQ(node_->QpState(a_.qpn), prm::QP_STATE_ERR);
  // The device goes on serving what it can reach.
  EXPECT_TRUE(Ok(w_->Run(prm::CommandIn<prm::alloc_pd_in>(prm::ALLOC_PD).bytes(), 16).value()));
  ExpectNoCommandLost();
}

}  // namespace
}  // namespace onchip::sim::testing
