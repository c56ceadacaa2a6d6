// Peers' own tools between two processes, as a user runs them in two shells: perftest's
// ib_send_lat and ib_write_lat (-x 1) and UCX's ucx_perftest tag_lat (UCX_TLS=rc_verbs,ud_verbs,
// self), 8 bytes, a server and a client each a client of the device daemon (function 0 both)
// under tools/verbs_env/launch.py, as `tools/onchip run` starts them. Each of 3 repetitions runs the
// pair once and reports the tool's own numbers, read from the client's output:
//   <tool>.peer/8   manual time: the tool's typical latency (perftest's t_typical, UCX's 50th
//                   percentile; one way, half the round trip, as both tools print it); counters
//                   p50_ns (the same), p999_ns (perftest's 99.9%; UCX prints none), mean_ns.
// Only when ONCHIP_BENCH_DAEMON names the daemon's socket (tools/onchip bench starts one) and
// the tool is installed; otherwise the row ends with an error that says which is missing.
#include <benchmark/benchmark.h>
#include <limits.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "bench/row.h"

namespace onchip {
namespace {

constexpr int kIterations = 2000;

// The file a data dependency lands at in this binary's runfiles tree.
std::string Runfile(const std::string& path) {
  char exe[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) return {};
  exe[n] = '\0';
  const std::string file = std::string(exe) + ".runfiles/onchip/" + path;
  return access(file.c_str(), R_OK) == 0 ? file : std::string();
}

bool Installed(const std::string& tool) {
  return std::system(("command -v " + tool + " >/dev/null 2>&1").c_str()) == 0;
}

struct Numbers {
  double typical_us = 0;
  double mean_us = 0;
  std::optional<double> p999_us;
};

// perftest's latency table: "#bytes #iterations t_min t_max t_typical t_avg t_stdev 99% 99.9%",
// one line of numbers for -s 8.
std::optional<Numbers> ParsePerftest(const std::string& out) {
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream in(line);
    double v[9];
    int i = 0;
    while (i < 9 && in >> v[i]) ++i;
    if (i == 9 && v[0] == 8) return Numbers{v[4], v[5], v[8]};
  }
  return std::nullopt;
}

// ucx_perftest's "Final:" line: iterations, 50.0%ile, average, overall (latency, us), then
// bandwidth and message rate.
std::optional<Numbers> ParseUcx(const std::string& out) {
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("Final:", 0) != 0) continue;
    std::istringstream in(line.substr(6));
    double iterations, p50, average;
    if (in >> iterations >> p50 >> average) return Numbers{p50, average, std::nullopt};
  }
  return std::nullopt;
}

struct Tool {
  const char* row;      // the row's name before "/8"
  const char* binary;   // what must be installed
  std::string env;      // VAR=VALUE ... before the launch
  std::string args;     // the tool's arguments but the port and the server's address
  std::optional<Numbers> (*parse)(const std::string&);
};

std::string Capture(const std::string& cmd) {
  std::string out;
  if (FILE* f = popen(cmd.c_str(), "r")) {
    char buf[4096];
    for (std::size_t n; (n = fread(buf, 1, sizeof buf, f)) > 0;) out.append(buf, n);
    pclose(f);
  }
  return out;
}

void RunPair(benchmark::State& state, const Tool& tool) {
  const char* daemon = std::getenv("ONCHIP_BENCH_DAEMON");
  const std::string launch = Runfile("tools/verbs_env/launch.py");
  const std::string plugin = Runfile("tools/plugin/libonchip-rdmav34.so");
  if (daemon == nullptr || *daemon == '\0')
    return state.SkipWithError("no device daemon (ONCHIP_BENCH_DAEMON; tools/onchip bench starts one)");
  if (launch.empty() || plugin.empty())
    return state.SkipWithError("launch.py or the plugin is not in this binary's runfiles");
  if (!Installed(tool.binary))
    return state.SkipWithError((std::string(tool.binary) + " is not installed").c_str());
  static int port = 23000 + getpid() % 10000;
  const std::string run = tool.env + " timeout 60 /usr/bin/python3 " + launch + " --daemon " +
                          daemon + " --plugin " + plugin + " -- ";
  for (auto _ : state) {
    ++port;
    const std::string args = tool.args + " -p " + std::to_string(port);
    // The server in the background, its output discarded; the client retries until it listens.
    if (std::system((run + args + " >/dev/null 2>&1 &").c_str()) != 0)
      return state.SkipWithError("could not start the server");
    std::optional<Numbers> got;
    std::string out;
    for (int attempt = 0; attempt < 40 && !got; ++attempt) {
      std::this_thread::sleep_for(std::chrono::milliseconds(250));
      out = Capture(run + args + " 127.0.0.1 2>&1");
      got = tool.parse(out);
      if (!got && out.find("onnect") == std::string::npos) break;  // not a refused connection
    }
    if (!got) {
      std::fprintf(stderr, "%s\n", out.c_str());
      return state.SkipWithError("the client printed no result (its output is on stderr)");
    }
    state.SetIterationTime(got->typical_us * 1e-6);
    state.counters["p50_ns"] = got->typical_us * 1e3;
    state.counters["mean_ns"] = got->mean_us * 1e3;
    if (got->p999_us) state.counters["p999_ns"] = *got->p999_us * 1e3;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));  // the server's exit
  }
}

void Register() {
  const std::string n = std::to_string(kIterations);
  static const std::vector<Tool> tools = {
      {"ib_send_lat.peer", "ib_send_lat", "", "ib_send_lat -x 1 -s 8 -n " + n, ParsePerftest},
      {"ib_write_lat.peer", "ib_write_lat", "", "ib_write_lat -x 1 -s 8 -n " + n, ParsePerftest},
      {"ucx_tag_lat.peer", "ucx_perftest",
       "UCX_TLS=rc_verbs,ud_verbs,self UCX_NET_DEVICES=onchip_0:1",
       "ucx_perftest -t tag_lat -s 8 -n " + n, ParseUcx},
  };
  // Each row carries its fields (bench/row.h): the tool is the operation, a peer's own.
  for (const Tool& t : tools) {
    const std::string row = t.row;
    bench::Register(row + "/8",
                    bench::Fields(row.substr(0, row.find('.')), "peer").Procs(2).Bytes(8),
                    [&t](benchmark::State& s) { RunPair(s, t); })
        ->Iterations(1)
        ->Repetitions(3)  // each repetition is a whole run of the pair: seconds, not microseconds
        ->UseManualTime()
        ->Unit(benchmark::kMicrosecond);
  }
}

}  // namespace
}  // namespace onchip

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  const char* daemon = std::getenv("ONCHIP_BENCH_DAEMON");
  benchmark::AddCustomContext("onchip.peers", daemon != nullptr && *daemon != '\0'
                                                  ? std::string("two processes on ") + daemon
                                                  : std::string("absent"));
  onchip::Register();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
