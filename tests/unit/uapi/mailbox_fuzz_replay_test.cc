// Replays the cmdq fuzz target's seed corpus, so CI runs the harness and its contract checks
// (the harness aborts on a violation), and pins what each seed exercises.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include "uapi/cmdq/fuzz/mailbox_fuzz.h"

namespace onchip::cmdq {
namespace {

namespace fs = std::filesystem;
using prm::DeliveryStatus;

fs::path CorpusDir() {
  const char* srcdir = std::getenv("TEST_SRCDIR");
  const char* workspace = std::getenv("TEST_WORKSPACE");
  fs::path root = srcdir && workspace ? fs::path(srcdir) / workspace : fs::current_path();
  return root / "uapi/cmdq/fuzz/corpus";
}

std::map<std::string, FuzzOutcome> ReplayAll() {
  std::map<std::string, FuzzOutcome> got;
  for (const auto& f : fs::directory_iterator(CorpusDir())) {
    std::ifstream in(f.path(), std::ios::binary);
    std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    got[f.path().filename().string()] =
        FuzzMailbox(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  }
  return got;
}

TEST(MailboxFuzzReplay, SeedsTakeTheirIntendedPaths) {
  const auto got = ReplayAll();
  ASSERT_GE(got.size(), 9u) << "corpus missing under " << CorpusDir();
  struct Want {
    DeliveryStatus read;
    DeliveryStatus write;
  };
  const std::map<std::string, Want> want = {
      {"inline_only", {DeliveryStatus::OK, DeliveryStatus::OK}},
      {"two_in_three_out", {DeliveryStatus::OK, DeliveryStatus::OK}},
      {"two_in_three_out_signed", {DeliveryStatus::OK, DeliveryStatus::OK}},
      {"aliased_high_bits", {DeliveryStatus::OK, DeliveryStatus::OK}},
      {"query_hca_cap_out", {DeliveryStatus::OK, DeliveryStatus::OK}},
      {"manage_pages_in", {DeliveryStatus::OK, DeliveryStatus::OK}},
      {"zero_length", {DeliveryStatus::OK, DeliveryStatus::OK}},
      {"loop", {DeliveryStatus::BAD_BLK_NUM_ERR, DeliveryStatus::OK}},
      {"token_mismatch", {DeliveryStatus::TOK_ERR, DeliveryStatus::OK}},
  };
  for (const auto& [name, w] : want) {
    SCOPED_TRACE(name);
    auto it = got.find(name);
    ASSERT_NE(it, got.end());
    ASSERT_TRUE(it->second.read.has_value());
    ASSERT_TRUE(it->second.write.has_value());
    EXPECT_EQ(*it->second.read, w.read);
    EXPECT_EQ(*it->second.write, w.write);
  }
}

TEST(MailboxFuzzReplay, TruncatedInputsAreIgnored) {
  const uint8_t short_input[10] = {};
  const FuzzOutcome o = FuzzMailbox(short_input, sizeof short_input);
  EXPECT_FALSE(o.read.has_value());
  EXPECT_FALSE(o.write.has_value());
}

}  // namespace
}  // namespace onchip::cmdq
