// A fuzz target's seed corpus as its replay test reads it: the directory in the test's runfiles
// and every file in it, whole. Each replay test (tools/fuzz/README.md) runs these inputs through
// its target's harness.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace onchip::fuzz {

struct CorpusInput {
  std::string name;  // the file's name in the corpus directory
  std::vector<uint8_t> bytes;
};

// The corpus directory at `path` (from the workspace root, e.g. "tools/sim/fuzz/corpus"): under
// the test's runfiles when Bazel runs it, else under the current directory.
std::filesystem::path CorpusDir(std::string_view path);

// Every file in `dir`, in name order.
std::vector<CorpusInput> ReadCorpus(const std::filesystem::path& dir);

}  // namespace onchip::fuzz
