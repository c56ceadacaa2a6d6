// A coverage-guided fuzzer that runs a libFuzzer-style target in one process, input after input,
// with no fork per input: onchip's own persistent loop, because on Debian 12 neither libFuzzer
// (clang cannot build GCC 12's std::expected) nor AFL++'s persistent mode (its GCC plugin
// refuses the installed GCC) is available, and AFL++'s fork server pays a fork and ASan's start-up
// per input (about 170 executions a second on 2 cores).
//
// The target is compiled with GCC's -fsanitize-coverage=trace-pc (and ASan and UBSan); this file
// is compiled without it and provides the callback. Each basic block the target enters calls
// __sanitizer_cov_trace_pc(); the pair (previous block, this block) is hashed into a 64 KiB map
// of hit counters, as AFL does. After each input the counters are put into AFL's buckets (1, 2,
// 3, 4-7, 8-15, 16-31, 32-127, 128+); an input that reaches a bucket no earlier input reached
// joins the queue (and OUT/queue/). Inputs are made from queue entries by stacked havoc
// mutations: bit flips, random and "interesting" bytes and words in both byte orders, small
// arithmetic, block deletion, duplication and overwrite, and splicing with another entry.
//
// Crashes: before each run the input is copied into OUT/.current, a shared mapping (no syscall);
// ASan's and UBSan's death callback copies it to OUT/crashes/ and the process ends with the
// sanitizer's report. A watchdog thread saves an input that runs longer than the time limit to
// OUT/hangs/ and ends the process.
//
//   persistent_fuzz [-t SECONDS] [-T MS_PER_INPUT] [-m MAX_LEN] [-s SEED] OUT_DIR CORPUS_DIR...
//   persistent_fuzz FILE...        replays each file once (for crash reproduction)
//
// The last line it prints: execs_done=N execs_per_sec=N corpus_count=N edges_found=N
// saved_crashes=N saved_hangs=N. Exit status 0 unless it saved a crash or a hang.
#include <dirent.h>
#include <fcntl.h>
#include <sanitizer/common_interface_defs.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <thread>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size);

namespace {

constexpr std::size_t kMapSize = 1 << 16;
std::array<uint8_t, kMapSize> g_hits;  // this input's edge counters
thread_local uintptr_t g_prev = 0;
bool g_tracing = false;

}  // namespace

// Called by the instrumented target at every basic block it enters.
extern "C" void __sanitizer_cov_trace_pc() {
  if (!g_tracing) return;
  uintptr_t pc = reinterpret_cast<uintptr_t>(__builtin_return_address(0));
  pc = (pc ^ (pc >> 15)) * 0x9E3779B97F4A7C15ull;
  const uintptr_t here = pc >> 48;
  ++g_hits[(here ^ g_prev) & (kMapSize - 1)];
  g_prev = here >> 1;
}

namespace {

using Input = std::vector<uint8_t>;
using Clock = std::chrono::steady_clock;

uint8_t Bucket(uint8_t hits) {
  if (hits <= 3) return hits == 0 ? 0 : uint8_t(1u << (hits - 1));
  if (hits < 8) return 8;
  if (hits < 16) return 16;
  if (hits < 32) return 32;
  if (hits < 128) return 64;
  return 128;
}

std::string g_out;
uint8_t* g_current = nullptr;  // OUT/.current: u32 length, then the bytes
std::size_t g_current_cap = 0;
std::atomic<uint64_t> g_execs{0};
std::atomic<bool> g_running{false};

void SaveCurrent(const char* kind) {
  uint32_t len;
  std::memcpy(&len, g_current, sizeof len);
  len = std::min<uint32_t>(len, static_cast<uint32_t>(g_current_cap));
  const std::string path = g_out + "/" + kind + "/id-" + std::to_string(g_execs.load());
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) return;
  [[maybe_unused]] ssize_t n = write(fd, g_current + sizeof len, len);
  close(fd);
  const std::string msg = std::string("persistent_fuzz: saved ") + path + "\n";
  n = write(2, msg.data(), msg.size());
}

void OnSanitizerDeath() { SaveCurrent("crashes"); }

bool ReadFile(const std::string& path, Input* out) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return false;
  out->assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
  return true;
}

void WriteFile(const std::string& path, const Input& in) {
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char*>(in.data()), static_cast<std::streamsize>(in.size()));
}

std::vector<std::string> FilesIn(const std::string& dir) {
  std::vector<std::string> files;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      if (e->d_name[0] == '.') continue;
      const std::string path = dir + "/" + e->d_name;
      struct stat st;
      if (stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode)) files.push_back(path);
    }
    closedir(d);
  }
  std::sort(files.begin(), files.end());
  return files;
}

class Fuzzer {
 public:
  Fuzzer(std::size_t max_len, uint64_t seed) : max_len_(max_len), rng_(seed) { virgin_.fill(0); }

  // Runs one input; true if it reached a new bucket of some edge.
  bool Run(const Input& in) {
    const auto len = static_cast<uint32_t>(std::min(in.size(), g_current_cap));
    std::memcpy(g_current, &len, sizeof len);
    std::memcpy(g_current + sizeof len, in.data(), len);
    g_hits.fill(0);
    g_prev = 0;
    g_tracing = true;
    LLVMFuzzerTestOneInput(in.data(), in.size());
    g_tracing = false;
    g_execs.fetch_add(1, std::memory_order_relaxed);
    bool fresh = false;
    for (std::size_t i = 0; i < kMapSize; ++i) {
      if (g_hits[i] == 0) continue;
      const uint8_t b = Bucket(g_hits[i]);
      if ((virgin_[i] & b) == 0) {
        if (virgin_[i] == 0) ++edges_;
        virgin_[i] |= b;
        fresh = true;
      }
    }
    return fresh;
  }

  void Keep(const Input& in) {
    queue_.push_back(in);
    WriteFile(g_out + "/queue/id-" + std::to_string(queue_.size()), in);
  }

  Input Mutate() {
    Input in = queue_[Pick(queue_.size())];
    const int rounds = 1 << (1 + Pick(4));
    for (int r = 0; r < rounds; ++r) MutateOnce(in);
    if (in.size() > max_len_) in.resize(max_len_);
    return in;
  }

  std::size_t queue_size() const { return queue_.size(); }
  uint64_t edges() const { return edges_; }

 private:
  std::size_t Pick(std::size_t n) { return n == 0 ? 0 : rng_() % n; }

  template <class T>
  void PutAt(Input& in, std::size_t at, T v, bool big_endian) {
    if (in.size() < sizeof(T) || at > in.size() - sizeof(T)) return;
    if (big_endian) {
      if constexpr (sizeof(T) == 2) v = __builtin_bswap16(v);
      if constexpr (sizeof(T) == 4) v = __builtin_bswap32(v);
      if constexpr (sizeof(T) == 8) v = __builtin_bswap64(v);
    }
    std::memcpy(in.data() + at, &v, sizeof v);
  }

  void MutateOnce(Input& in) {
    static constexpr int8_t kInteresting8[] = {-128, -1, 0, 1, 16, 32, 64, 100, 127};
    static constexpr int16_t kInteresting16[] = {-32768, -129, 128, 255, 256, 512, 1000, 1024, 4096, 32767};
    static constexpr int32_t kInteresting32[] = {-2147483647 - 1, -100663046, -32769, 32768, 65535,
                                                 65536, 100663045, 2147483647};
    if (in.empty()) {
      in.push_back(static_cast<uint8_t>(rng_()));
      return;
    }
    const std::size_t at = Pick(in.size());
    switch (Pick(12)) {
      case 0: in[at] ^= uint8_t(1u << Pick(8)); break;
      case 1: in[at] = static_cast<uint8_t>(rng_()); break;
      case 2: in[at] = static_cast<uint8_t>(kInteresting8[Pick(std::size(kInteresting8))]); break;
      case 3:
        PutAt(in, at, static_cast<uint16_t>(kInteresting16[Pick(std::size(kInteresting16))]), rng_() & 1);
        break;
      case 4:
        PutAt(in, at, static_cast<uint32_t>(kInteresting32[Pick(std::size(kInteresting32))]), rng_() & 1);
        break;
      case 5: in[at] = static_cast<uint8_t>(in[at] + 1 + Pick(35) * ((rng_() & 1) ? 1 : -1)); break;
      case 6: {  // a 32-bit big-endian field (the PRM's) nudged
        if (in.size() < 4) break;
        const std::size_t w = Pick(in.size() - 3) & ~std::size_t{3};
        uint32_t v;
        std::memcpy(&v, in.data() + w, 4);
        v = __builtin_bswap32(__builtin_bswap32(v) + static_cast<uint32_t>(Pick(33)) - 16);
        std::memcpy(in.data() + w, &v, 4);
        break;
      }
      case 7: {  // delete a block
        const std::size_t n = 1 + Pick(std::min<std::size_t>(in.size() - at, 64));
        if (in.size() > n) in.erase(in.begin() + at, in.begin() + at + n);
        break;
      }
      case 8: {  // duplicate a block in place
        const std::size_t n = 1 + Pick(std::min<std::size_t>(in.size() - at, 64));
        if (in.size() + n > max_len_) break;
        Input block(in.begin() + at, in.begin() + at + n);
        in.insert(in.begin() + at, block.begin(), block.end());
        break;
      }
      case 9: {  // overwrite with a block from elsewhere in the input
        const std::size_t from = Pick(in.size());
        const std::size_t n = 1 + Pick(std::min(in.size() - at, in.size() - from));
        std::memmove(in.data() + at, in.data() + from, n);
        break;
      }
      case 10: {  // splice: the head of this input, the tail of another
        const Input& other = queue_[Pick(queue_.size())];
        if (other.empty()) break;
        const std::size_t cut = Pick(other.size());
        in.resize(at);
        in.insert(in.end(), other.begin() + cut, other.end());
        break;
      }
      default: {  // a random 64-bit word
        PutAt(in, at, static_cast<uint64_t>(rng_()), false);
        break;
      }
    }
  }

  std::size_t max_len_;
  std::mt19937_64 rng_;
  std::array<uint8_t, kMapSize> virgin_;
  std::vector<Input> queue_;
  uint64_t edges_ = 0;
};

int Usage() {
  std::fprintf(stderr,
               "usage: persistent_fuzz [-t SECONDS] [-T MS_PER_INPUT] [-m MAX_LEN] [-s SEED] OUT_DIR "
               "CORPUS_DIR...\n       persistent_fuzz FILE...   (replay)\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  long seconds = 600, ms_per_input = 2000;
  std::size_t max_len = 1 << 16;
  uint64_t seed = static_cast<uint64_t>(Clock::now().time_since_epoch().count());
  int opt;
  while ((opt = getopt(argc, argv, "t:T:m:s:")) != -1) {
    switch (opt) {
      case 't': seconds = std::atol(optarg); break;
      case 'T': ms_per_input = std::atol(optarg); break;
      case 'm': max_len = std::strtoul(optarg, nullptr, 0); break;
      case 's': seed = std::strtoull(optarg, nullptr, 0); break;
      default: return Usage();
    }
  }
  if (optind >= argc) return Usage();

  struct stat st;
  const bool replay = stat(argv[optind], &st) == 0 && S_ISREG(st.st_mode);
  if (replay) {
    for (int i = optind; i < argc; ++i) {
      Input in;
      if (!ReadFile(argv[i], &in)) {
        std::fprintf(stderr, "persistent_fuzz: cannot read %s\n", argv[i]);
        return 2;
      }
      LLVMFuzzerTestOneInput(in.data(), in.size());
      std::printf("replayed %s (%zu bytes)\n", argv[i], in.size());
    }
    return 0;
  }

  g_out = argv[optind];
  for (const char* sub : {"", "/queue", "/crashes", "/hangs"}) mkdir((g_out + sub).c_str(), 0755);
  g_current_cap = max_len;
  const int cur = open((g_out + "/.current").c_str(), O_RDWR | O_CREAT | O_TRUNC, 0644);
  if (cur < 0 || ftruncate(cur, static_cast<off_t>(max_len + 4)) != 0) {
    std::perror("persistent_fuzz: OUT_DIR/.current");
    return 2;
  }
  g_current = static_cast<uint8_t*>(
      mmap(nullptr, max_len + 4, PROT_READ | PROT_WRITE, MAP_SHARED, cur, 0));
  if (g_current == MAP_FAILED) {
    std::perror("persistent_fuzz: mmap");
    return 2;
  }
  __sanitizer_set_death_callback(OnSanitizerDeath);

  Fuzzer fuzzer(max_len, seed);
  std::vector<std::string> seeds;
  for (int i = optind + 1; i < argc; ++i) {
    auto files = FilesIn(argv[i]);
    seeds.insert(seeds.end(), files.begin(), files.end());
  }
  for (const std::string& path : seeds) {
    Input in;
    if (ReadFile(path, &in) && in.size() <= max_len && fuzzer.Run(in)) fuzzer.Keep(in);
  }
  if (fuzzer.queue_size() == 0) fuzzer.Keep(Input(16, 0));

  // The watchdog: an input that runs past the limit is a hang.
  std::atomic<bool> done{false};
  std::thread watchdog([&] {
    uint64_t last = g_execs.load();
    auto since = Clock::now();
    while (!done.load()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      const uint64_t now_execs = g_execs.load();
      if (now_execs != last) {
        last = now_execs;
        since = Clock::now();
      } else if (Clock::now() - since > std::chrono::milliseconds(ms_per_input)) {
        SaveCurrent("hangs");
        std::fprintf(stderr, "persistent_fuzz: an input ran over %ld ms\n", ms_per_input);
        _exit(1);
      }
    }
  });

  const auto start = Clock::now();
  const auto end = start + std::chrono::seconds(seconds);
  auto next_report = start + std::chrono::seconds(10);
  while (Clock::now() < end) {
    for (int i = 0; i < 64; ++i) {
      Input in = fuzzer.Mutate();
      if (fuzzer.Run(in)) fuzzer.Keep(in);
    }
    if (Clock::now() >= next_report) {
      next_report += std::chrono::seconds(10);
      const double s = std::chrono::duration<double>(Clock::now() - start).count();
      std::fprintf(stderr, "[%4.0fs] execs %llu (%.0f/s) corpus %zu edges %llu\n", s,
                   static_cast<unsigned long long>(g_execs.load()), g_execs.load() / s,
                   fuzzer.queue_size(), static_cast<unsigned long long>(fuzzer.edges()));
    }
  }
  done = true;
  watchdog.join();
  const double s = std::chrono::duration<double>(Clock::now() - start).count();
  std::printf("execs_done=%llu execs_per_sec=%.0f corpus_count=%zu edges_found=%llu saved_crashes=0 "
              "saved_hangs=0\n",
              static_cast<unsigned long long>(g_execs.load()), g_execs.load() / s, fuzzer.queue_size(),
              static_cast<unsigned long long>(fuzzer.edges()));
  return 0;
}
