// Replays the daemon protocol fuzz target's corpus (seeds plus anything the fuzzer found and was
// fixed) against a real daemon in this process: every input ends with the daemon closing the
// connection, the daemon still answers, and nothing an input created outlives its connection.
#include <gtest/gtest.h>

#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "tools/fuzz/corpus.h"
#include "tools/simd/fuzz/protocol_fuzz.h"
#include "uapi/simd_protocol.h"

namespace onchip::simd::fuzz {
namespace {

using ::onchip::fuzz::CorpusDir;
using ::onchip::fuzz::ReadCorpus;

constexpr char kCorpus[] = "tools/simd/fuzz/corpus";

// The functions' object counters as the status reports them, without the command count (which
// grows with every input) and the clients (which come and go).
std::string Objects(const std::string& status) {
  const auto end = status.find("\"clients\"");
  std::string functions = status.substr(0, end);
  const std::string key = "\"commands\": ";
  for (std::size_t at = functions.find(key); at != std::string::npos; at = functions.find(key, at)) {
    std::size_t digits = at + key.size();
    while (digits < functions.size() && std::isdigit(static_cast<unsigned char>(functions[digits]))) ++digits;
    functions.erase(at, digits - at);
  }
  return functions;
}

bool NoClients(const std::string& status) { return status.find("\"clients\": []") != std::string::npos; }

std::string StatusWhenIdle() {
  std::string status;
  for (int i = 0; i < 200; ++i) {
    status = DaemonStatus();
    if (NoClients(status)) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return status;
}

TEST(ProtocolFuzzReplay, EveryInputEndsClosedAndLeavesNothingBehind) {
  const std::string before = StatusWhenIdle();
  ASSERT_FALSE(before.empty()) << "the daemon does not answer a status request";
  std::map<std::string, ProtocolFuzzResult> got;
  for (const auto& input : ReadCorpus(CorpusDir(kCorpus))) {
    // FuzzProtocol aborts if the daemon neither answers nor closes.
    got[input.name] = FuzzProtocol(input.bytes.data(), input.bytes.size());
    const std::string after = StatusWhenIdle();
    ASSERT_TRUE(NoClients(after)) << input.name << " left a client: " << after;
    EXPECT_EQ(Objects(after), Objects(before)) << input.name << " left objects behind";
  }
  ASSERT_GE(got.size(), 8u) << "corpus missing under " << CorpusDir(kCorpus);
  for (const auto& [name, r] : got) EXPECT_TRUE(r.closed_by_daemon) << name;
  EXPECT_GE(got.at("status").replies, 1u);
  EXPECT_GE(got.at("hello_alloc_pd").replies, 1u);
  EXPECT_GE(got.at("hello_steering_tags").replies, 1u);
  EXPECT_GE(got.at("command_before_hello").replies, 1u);  // EPROTO, then the close
}

// Every frame header in a seed speaks the protocol's current version (a seed of an older one
// only reaches the version check); "garbage" is the one seed that is not frames.
TEST(ProtocolFuzzReplay, SeedsSpeakTheCurrentVersion) {
  for (const auto& input : ReadCorpus(CorpusDir(kCorpus))) {
    if (input.name == "garbage") continue;
    std::size_t pos = 2;  // the fd choice and the split (protocol_fuzz.h)
    while (pos + sizeof(FrameHeader) <= input.bytes.size()) {
      FrameHeader h;
      std::memcpy(&h, input.bytes.data() + pos, sizeof(h));
      if (h.magic != kMagic) break;
      EXPECT_EQ(h.version, kVersion) << input.name << " at byte " << pos;
      pos += sizeof(h) + h.length;
    }
  }
}

}  // namespace
}  // namespace onchip::simd::fuzz
