// Replays the cmdq fuzz target's seed corpus, so CI runs the harness and its contract checks
// (the harness aborts on a violation), and pins what each seed exercises.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "tools/fuzz/corpus.h"
#include "uapi/cmdq/fuzz/mailbox_fuzz.h"

namespace onchip::cmdq {
namespace {

using ::onchip::fuzz::CorpusDir;
using ::onchip::fuzz::ReadCorpus;
using prm::DeliveryStatus;

constexpr char kCorpus[] = "uapi/cmdq/fuzz/corpus";

std::map<std::string, FuzzOutcome> ReplayAll() {
  std::map<std::string, FuzzOutcome> got;
  for (const auto& input : ReadCorpus(CorpusDir(kCorpus)))
    got[input.name] = FuzzMailbox(input.bytes.data(), input.bytes.size());
  return got;
}

TEST(MailboxFuzzReplay, SeedsTakeTheirIntendedPaths) {
  const auto got = ReplayAll();
  ASSERT_GE(got.size(), 9u) << "corpus missing under " << CorpusDir(kCorpus);
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
