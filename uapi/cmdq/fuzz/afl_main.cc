// main() for the AFL++ build of a LLVMFuzzerTestOneInput target, for afl-g++'s classic
// (afl-as) instrumentation, which brings its own fork server but no persistent mode: each run
// reads the files named on the command line (afl-fuzz passes @@), or stdin, and exits.
// Also the way to reproduce a saved crash: mailbox_fuzz crashes/id:000000...
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size);

namespace {

std::vector<uint8_t> ReadAll(std::FILE* f) {
  std::vector<uint8_t> bytes;
  uint8_t buf[1 << 16];
  for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;)
    bytes.insert(bytes.end(), buf, buf + n);
  return bytes;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    const std::vector<uint8_t> in = ReadAll(stdin);
    return LLVMFuzzerTestOneInput(in.data(), in.size());
  }
  for (int i = 1; i < argc; ++i) {
    std::FILE* f = std::fopen(argv[i], "rb");
    if (f == nullptr) {
      std::perror(argv[i]);
      return 2;
    }
    const std::vector<uint8_t> in = ReadAll(f);
    std::fclose(f);
    LLVMFuzzerTestOneInput(in.data(), in.size());
  }
  return 0;
}
