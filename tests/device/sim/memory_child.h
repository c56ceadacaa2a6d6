// A forked child process that holds memory for the device to reach as process memory
// (Iommu::MapProcess) and answers questions about its own copy of it over pipes: fill a range
// with a pattern, checksum a range, load a word. The child is forked from a process that may run
// device threads, so it does only async-signal-safe work (read, write, plain loops, _exit).
#pragma once

#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <span>
#include <vector>

namespace onchip::sim::testing {

// Byte i of a test pattern.
inline std::byte PatternByte(uint8_t seed, std::size_t i) {
  return static_cast<std::byte>(seed + i * 7);
}
inline std::vector<std::byte> PatternBytes(std::size_t n, uint8_t seed) {
  std::vector<std::byte> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = PatternByte(seed, i);
  return v;
}
// FNV-1a, 64 bits: what the child sends back for a range.
inline uint64_t Checksum(const std::byte* p, std::size_t n) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (std::size_t i = 0; i < n; ++i) h = (h ^ std::to_integer<uint64_t>(p[i])) * 0x100000001b3ull;
  return h;
}
inline uint64_t Checksum(std::span<const std::byte> b) { return Checksum(b.data(), b.size()); }

class MemoryChild {
 public:
  MemoryChild() {
    int to[2], from[2];
    if (pipe(to) != 0 || pipe(from) != 0) std::abort();
    pid_ = fork();
    if (pid_ < 0) std::abort();
    if (pid_ == 0) {
      close(to[1]);
      close(from[0]);
      Serve(to[0], from[1]);
    }
    close(to[0]);
    close(from[1]);
    to_ = to[1];
    from_ = from[0];
  }
  ~MemoryChild() {
    Kill();
    close(to_);
    close(from_);
  }
  MemoryChild(const MemoryChild&) = delete;
  MemoryChild& operator=(const MemoryChild&) = delete;

  pid_t pid() const { return pid_; }
  // In the child's copy of the address space.
  void Fill(const void* addr, std::size_t len, uint8_t seed) { Ask(kFill, addr, len, seed); }
  uint64_t Sum(const void* addr, std::size_t len) { return Ask(kSum, addr, len, 0); }
  uint64_t Load64(const void* addr) { return Ask(kLoad64, addr, 8, 0); }
  // SIGKILL and reap (idempotent).
  void Kill() {
    if (pid_ <= 0) return;
    kill(pid_, SIGKILL);
    int status = 0;
    waitpid(pid_, &status, 0);
    pid_ = -1;
  }

 private:
  enum Op : uint32_t { kFill = 1, kSum, kLoad64 };
  struct Request {
    uint32_t op;
    uint32_t seed;
    uint64_t addr;
    uint64_t len;
  };

  uint64_t Ask(Op op, const void* addr, std::size_t len, uint8_t seed) {
    const Request r{op, seed, reinterpret_cast<uint64_t>(addr), len};
    uint64_t answer = 0;
    if (write(to_, &r, sizeof r) != sizeof r || read(from_, &answer, sizeof answer) != sizeof answer)
      std::abort();
    return answer;
  }

  [[noreturn]] static void Serve(int in, int out) {
    Request r;
    while (read(in, &r, sizeof r) == sizeof r) {
      auto* p = reinterpret_cast<std::byte*>(r.addr);
      uint64_t answer = 0;
      switch (r.op) {
        case kFill:
          for (uint64_t i = 0; i < r.len; ++i) p[i] = PatternByte(static_cast<uint8_t>(r.seed), i);
          break;
        case kSum: answer = Checksum(p, r.len); break;
        case kLoad64: std::memcpy(&answer, p, 8); break;
        default: _exit(2);
      }
      if (write(out, &answer, sizeof answer) != sizeof answer) _exit(3);
    }
    _exit(0);
  }

  pid_t pid_ = -1;
  int to_ = -1;
  int from_ = -1;
};

}  // namespace onchip::sim::testing
