// A benchmark row's fields, the one contract between the suites and tools/onchip bench's report
// (tools/cli/report.py reads them; it never parses a row's name). Register() sets them as the
// row's label, "key=value" words separated by spaces, before the row's function runs, so a row
// that fails carries them too:
//   op       the operation (rdma_write, memcpy_to_dm, wc_copy_to_device, PostSend/blueflame, ...)
//   impl     who does it: onchip, vendor (the vendor's algorithm, bench/baselines), floor (bare
//            shared memory), bound, memcpy, a peer tool (peer), or a variant's own name
//   place    where the bytes are: dm (device memory), host, or absent when neither
//   side     which buffer of a wire operation the placement moves: remote or local
//   procs    how many processes take part (1 or 2)
//   bytes    the size: the row's argument unless the fields fix it (absent: no size)
//   measure  latency (time per operation) or bandwidth (bytes per second)
//   pair     for a row timing a variant beside a baseline by turns: the baseline's name
// and any further word a suite adds (floor=, bound=, tier=, ...). Values are single words.
#pragma once

#include <benchmark/benchmark.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace onchip::bench {

// A row's fields, built by naming its op and impl and setting the rest:
//   bench::Fields("rdma_write", "onchip").Place("dm").Side("remote").Procs(2)
class Fields {
 public:
  static constexpr int64_t kFromArg = -1;  // the size is the row's argument, range(0)
  static constexpr int64_t kNone = -2;     // a row with no size

  Fields(std::string op, std::string impl) : op_(std::move(op)), impl_(std::move(impl)) {}
  Fields& Place(std::string place) { return Set(place_, std::move(place)); }
  Fields& Side(std::string side) { return Set(side_, std::move(side)); }
  Fields& Measure(std::string measure) { return Set(measure_, std::move(measure)); }
  Fields& Procs(int procs) {
    procs_ = procs;
    return *this;
  }
  Fields& Bytes(int64_t bytes) {
    bytes_ = bytes;
    return *this;
  }
  Fields& With(std::string key, std::string value) {
    extra_.emplace_back(std::move(key), std::move(value));
    return *this;
  }

  const std::string& impl() const { return impl_; }
  int64_t bytes() const { return bytes_; }

  // The label of a run whose argument is `arg` (read only when the size is kFromArg).
  std::string Label(int64_t arg) const {
    std::string out = "op=" + op_ + " impl=" + impl_;
    if (!place_.empty()) out += " place=" + place_;
    if (!side_.empty()) out += " side=" + side_;
    out += " procs=" + std::to_string(procs_);
    const int64_t n = bytes_ == kFromArg ? arg : bytes_;
    if (n >= 0) out += " bytes=" + std::to_string(n);
    out += " measure=" + measure_;
    for (const auto& [k, v] : extra_) out += " " + k + "=" + v;
    return out;
  }

 private:
  Fields& Set(std::string& field, std::string value) {
    field = std::move(value);
    return *this;
  }

  std::string op_, impl_;
  std::string place_;  // "dm", "host" or empty
  std::string side_;   // "remote", "local" or empty
  std::string measure_ = "latency";
  int procs_ = 1;
  int64_t bytes_ = kFromArg;
  std::vector<std::pair<std::string, std::string>> extra_;
};

// Sets the fields of the running row (Register does it for the rows it registers).
inline void Describe(benchmark::State& state, const Fields& f) {
  state.SetLabel(f.Label(f.bytes() == Fields::kFromArg ? state.range(0) : 0));
}

// Registers `fn` as row `name`, which carries `fields`.
template <class Fn>
benchmark::internal::Benchmark* Register(const std::string& name, Fields fields, Fn fn) {
  return benchmark::RegisterBenchmark(name.c_str(), [fields = std::move(fields), fn](benchmark::State& s) {
    Describe(s, fields);
    fn(s);
  });
}

}  // namespace onchip::bench
