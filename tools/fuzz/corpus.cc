#include "tools/fuzz/corpus.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <iterator>

namespace onchip::fuzz {

namespace fs = std::filesystem;

fs::path CorpusDir(std::string_view path) {
  const char* srcdir = std::getenv("TEST_SRCDIR");
  const char* workspace = std::getenv("TEST_WORKSPACE");
  fs::path root = srcdir && workspace ? fs::path(srcdir) / workspace : fs::current_path();
  return root / path;
}

std::vector<CorpusInput> ReadCorpus(const fs::path& dir) {
  std::vector<CorpusInput> inputs;
  for (const auto& f : fs::directory_iterator(dir)) {
    std::ifstream in(f.path(), std::ios::binary);
    inputs.push_back({f.path().filename().string(),
                      {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()}});
  }
  std::sort(inputs.begin(), inputs.end(),
            [](const CorpusInput& a, const CorpusInput& b) { return a.name < b.name; });
  return inputs;
}

}  // namespace onchip::fuzz
