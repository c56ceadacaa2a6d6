// Replays the data engine fuzz target's corpus and a stream of pseudo-random inputs, so CI runs
// the harness: every input ends with the device consistent (FuzzEngine aborts otherwise), and
// the seeds reach the engine (WQEs executed, CQEs written, QPs sent to error).
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "tools/fuzz/corpus.h"
#include "tools/sim/fuzz/engine_fuzz.h"

namespace onchip::sim::fuzz {
namespace {

using ::onchip::fuzz::CorpusDir;
using ::onchip::fuzz::ReadCorpus;

constexpr char kCorpus[] = "tools/sim/fuzz/engine_corpus";

TEST(EngineFuzzReplay, SeedsReachTheEngine) {
  std::map<std::string, EngineFuzzResult> got;
  for (const auto& input : ReadCorpus(CorpusDir(kCorpus)))
    got[input.name] = FuzzEngine(input.bytes.data(), input.bytes.size());
  ASSERT_GE(got.size(), 3u) << "corpus missing under " << CorpusDir(kCorpus);
  // A well-formed NOP with a CQE request on the RC QP: one CQE, nobody in error.
  EXPECT_EQ(got.at("nop").wqes, 1);
  EXPECT_EQ(got.at("nop").cqes, 1);
  EXPECT_EQ(got.at("nop").errors, 0);
  // A WQE with ds 0: an error CQE and the QP in error.
  EXPECT_EQ(got.at("ds_zero").cqes, 1);
  EXPECT_EQ(got.at("ds_zero").errors, 1);
  // QP_2ERR with a WQE posted after it: the WQE is flushed.
  EXPECT_GE(got.at("flush").cqes, 1);
  EXPECT_GE(got.at("flush").errors, 1);
}

bool Same(const EngineFuzzResult& a, const EngineFuzzResult& b) {
  return a.wqes == b.wqes && a.passes == b.passes && a.cqes == b.cqes && a.errors == b.errors;
}

// The copying paths of process memory behave as the pointer paths: every seed and a stream of
// pseudo-random inputs give the same WQEs, passes, CQEs and QPs in error either way (with the
// QPs' timers quiet, so the result cannot depend on speed).
TEST(EngineFuzzReplay, ProcessMemoryGivesTheSameResults) {
  const EngineFuzzOptions pointer_memory{HostMemory::kPointer, /*quiet_timers=*/true};
  const EngineFuzzOptions process_memory{HostMemory::kProcess, /*quiet_timers=*/true};
  int compared = 0;
  for (const auto& input : ReadCorpus(CorpusDir(kCorpus))) {
    const auto& bytes = input.bytes;
    const EngineFuzzResult pointer = FuzzEngine(bytes.data(), bytes.size(), pointer_memory);
    const EngineFuzzResult process = FuzzEngine(bytes.data(), bytes.size(), process_memory);
    EXPECT_TRUE(Same(pointer, process))
        << input.name << ": pointer " << pointer.wqes << "/" << pointer.cqes << "/"
        << pointer.errors << ", process " << process.wqes << "/" << process.cqes << "/"
        << process.errors;
    compared += pointer.cqes > 0;
  }
  EXPECT_GE(compared, 3);  // seeds that produced CQEs, compared
  std::vector<uint8_t> junk(4096);
  uint32_t x = 4242;
  for (int round = 0; round < 10; ++round) {
    for (auto& b : junk) b = static_cast<uint8_t>((x = x * 1103515245 + 12345) >> 16);
    EXPECT_TRUE(Same(FuzzEngine(junk.data(), junk.size(), pointer_memory),
                     FuzzEngine(junk.data(), junk.size(), process_memory)))
        << "round " << round;
  }
}

TEST(EngineFuzzReplay, GarbageIsContained) {
  std::vector<uint8_t> junk(4096);
  uint32_t x = 777;
  int wqes = 0;
  for (int round = 0; round < 40; ++round) {
    for (auto& b : junk) b = static_cast<uint8_t>((x = x * 1103515245 + 12345) >> 16);
    const EngineFuzzResult r = FuzzEngine(junk.data(), junk.size());
    wqes += r.wqes;
    EXPECT_GE(r.passes, 4);
  }
  EXPECT_GT(wqes, 100);
  const EngineFuzzResult none = FuzzEngine(nullptr, 0);
  EXPECT_EQ(none.wqes, 0);
  EXPECT_EQ(none.cqes, 0);
  EXPECT_EQ(none.errors, 0);
}

}  // namespace
}  // namespace onchip::sim::fuzz
