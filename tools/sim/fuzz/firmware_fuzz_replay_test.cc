// Replays the firmware fuzz target's corpus (seeds plus anything the fuzzer found and was fixed),
// so CI runs the harness and its invariant checks, and pins that the seeds reach the firmware.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include "tools/sim/fuzz/firmware_fuzz.h"

namespace onchip::sim::fuzz {
namespace {

namespace fs = std::filesystem;

fs::path CorpusDir() {
  const char* srcdir = std::getenv("TEST_SRCDIR");
  const char* workspace = std::getenv("TEST_WORKSPACE");
  fs::path root = srcdir && workspace ? fs::path(srcdir) / workspace : fs::current_path();
  return root / "tools/sim/fuzz/corpus";
}

TEST(FirmwareFuzzReplay, SeedsReachTheFirmwareAndKeepItConsistent) {
  std::map<std::string, FuzzResult> got;
  for (const auto& f : fs::directory_iterator(CorpusDir())) {
    std::ifstream in(f.path(), std::ios::binary);
    std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    // FuzzFirmware aborts on a broken invariant.
    got[f.path().filename().string()] =
        FuzzFirmware(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  }
  ASSERT_GE(got.size(), 4u) << "corpus missing under " << CorpusDir();
  EXPECT_EQ(got.at("cmdq_bringup").completed, 4);
  EXPECT_EQ(got.at("cmdq_bringup").commands, 4);
  EXPECT_EQ(got.at("cmdq_resources").completed, 5);
  EXPECT_GE(got.at("raw_resources").commands, 12);
  EXPECT_EQ(got.at("raw_bringup").commands, 6);
}

TEST(FirmwareFuzzReplay, GarbageIsHarmless) {
  std::vector<uint8_t> junk(70000);
  uint32_t x = 12345;
  for (int flags = 0; flags < 8; ++flags) {
    for (auto& b : junk) b = static_cast<uint8_t>((x = x * 1103515245 + 12345) >> 16);
    junk[0] = static_cast<uint8_t>(flags);
    FuzzFirmware(junk.data(), junk.size());
    FuzzFirmware(junk.data(), 3);
  }
  FuzzFirmware(nullptr, 0);
}

}  // namespace
}  // namespace onchip::sim::fuzz
