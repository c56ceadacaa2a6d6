#include "alloc/eal.h"

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_lcore.h>
#include <rte_log.h>
#include <getopt.h>
#include <sched.h>
#include <stdio.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <mutex>
#include <sstream>

#include "alloc/hugepage_pool.h"
#include "log/log.h"

namespace onchip::alloc {
namespace {

enum class State { kDown, kUp, kFailed, kShutDown };

struct Singleton {
  std::mutex mu;
  State state = State::kDown;
  Eal::Origin origin = Eal::Origin::kOnchip;
  int failed_errno = 0;
  int leases = 0;
  // The process the EAL came up in. A forked child inherits the singleton's state and DPDK's
  // (heap metadata, locks) but not its threads, while the hugepages stay shared with the parent:
  // allocating there would hand out memory the parent also hands out.
  pid_t pid = 0;
  // rte_eal_init may keep pointers into argv: the strings live as long as the process.
  std::vector<std::string> argv_storage;
  std::vector<char*> argv;
};

Singleton& S() {
  static Singleton* s = new Singleton();  // never destroyed: leases may outlive static teardown
  return *s;
}

int OneCpuOfAffinity() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) return 0;
  int here = sched_getcpu();
  if (here >= 0 && CPU_ISSET(here, &set)) return here;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &set)) return c;
  }
  return 0;
}

// Where DPDK's log goes once onchip brings the EAL up: through log/log.h at debug, so that a
// library user sees nothing of it unless ONCHIP_LOG=debug. Without a stream of its own, DPDK
// writes to stderr before rte_eal_init has parsed --log-level and, after it, to stdout and
// syslog (lib/eal/linux/eal_log.c, console_log_func); rte_openlog_stream replaces all three.
// rte_vlog formats one message and flushes, so each write here is one message.
ssize_t WriteEalLog(void*, const char* buf, size_t size) {
  std::size_t n = size;
  while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r')) --n;
  log::Say(log::Level::kDebug, "onchip alloc: dpdk: %.*s", static_cast<int>(n), buf);
  return static_cast<ssize_t>(size);
}

FILE* EalLogStream() {
  static FILE* const stream = [] {
    cookie_io_functions_t io{};
    io.write = WriteEalLog;
    FILE* f = fopencookie(nullptr, "w", io);  // never closed: DPDK keeps it for the process
    if (f != nullptr) setvbuf(f, nullptr, _IOFBF, 4096);  // whole messages, at DPDK's fflush
    return f;
  }();
  return stream;
}

}  // namespace

EalOptions EalOptions::FromEnvironment() {
  EalOptions o;
  if (const char* env = std::getenv("ONCHIP_EAL_ARGS"); env != nullptr && *env != '\0') {
    std::istringstream in(env);
    for (std::string word; in >> word;) o.args.push_back(word);
  }
  return o;
}

std::vector<std::string> DefaultEalArgs() {
  static std::atomic<int> counter{0};
  return {
      "--in-memory",
      "--no-pci",
      "--single-file-segments",
      "--no-telemetry",
      "--iova-mode=va",  // onchip's bus assigns IOVAs; DPDK need not read /proc/self/pagemap
      "--log-level=lib.eal:error",
      "--file-prefix=onchip-" + std::to_string(getpid()) + "-" + std::to_string(counter++),
      "-l",
      std::to_string(OneCpuOfAffinity()),
  };
}

Result<EalLease> Eal::Acquire(const EalOptions& options) {
  Singleton& s = S();
  std::lock_guard lock(s.mu);
  switch (s.state) {
    case State::kUp:
      if (s.pid != getpid())
        return Fail(ENOTSUP, "EAL: brought up by the parent process; DPDK does not survive fork()");
      ++s.leases;
      return EalLease(true);
    case State::kFailed:
      // The same error as the first attempt (the same identity for fallback_report.h, so a
      // process whose EAL failed reports the fallback once, not once per provider).
      return Fail(s.failed_errno, "rte_eal_init");
    case State::kShutDown:
      return Fail(ESHUTDOWN, "EAL: already shut down in this process");
    case State::kDown:
      break;
  }
  // A host that initialised the EAL itself has lcores registered; adopt it as it is.
  if (rte_lcore_count() != 0) {
    s.state = State::kUp;
    s.pid = getpid();
    s.origin = Origin::kHost;
    ++s.leases;
    return EalLease(true);
  }
  auto pool = ReadHugepagePool();
  if (!pool || pool->reserved == 0) return Fail(ENOMEM, "EAL: no 2 MiB hugepages reserved");
  // With every reserved page in use (other processes hold them), rte_eal_init fails in
  // hugepage_info_init and writes "Cannot get hugepage information" to stderr itself
  // (lib/eal/linux/eal.c rte_eal_init_alert): the library would talk. Refuse first, as for none.
  if (pool->free == 0) return Fail(ENOMEM, "EAL: every reserved 2 MiB hugepage is in use");

  s.argv_storage = {"onchip"};
  std::vector<std::string> args = options.args;
  if (args.empty()) {
    args = DefaultEalArgs();
    args.insert(args.end(), options.extra_args.begin(), options.extra_args.end());
  }
  s.argv_storage.insert(s.argv_storage.end(), args.begin(), args.end());
  s.argv.clear();
  for (auto& a : s.argv_storage) s.argv.push_back(a.data());
  s.argv.push_back(nullptr);

  cpu_set_t affinity;
  bool have_affinity = sched_getaffinity(0, sizeof affinity, &affinity) == 0;
  // Before init, which logs from its first step on. An EAL the host brought up (above) keeps
  // the host's stream.
  if (FILE* stream = EalLogStream(); stream != nullptr) rte_openlog_stream(stream);
  // EAL parses its arguments with getopt_long, which prints its own complaint about an option it
  // does not know (glibc posix/getopt.c) unless opterr is 0; the failure still comes back as
  // rte_eal_init's EINVAL. DPDK's fatal-init alert itself goes to stderr whatever the log stream
  // (lib/eal/linux/eal.c rte_eal_init_alert): an ONCHIP_EAL_ARGS the EAL rejects shows that
  // one line.
  const int saved_opterr = opterr;
  opterr = 0;
  int rc = rte_eal_init(static_cast<int>(s.argv.size() - 1), s.argv.data());
  int err = rte_errno;
  opterr = saved_opterr;
  // rte_eal_init pins the calling thread to the main lcore; the caller did not ask for that.
  if (have_affinity) sched_setaffinity(0, sizeof affinity, &affinity);
  if (rc < 0) {
    if (err == EALREADY) {  // someone else got there first (a racing host thread)
      s.state = State::kUp;
      s.pid = getpid();
      s.origin = Origin::kHost;
      ++s.leases;
      return EalLease(true);
    }
    s.state = State::kFailed;
    s.failed_errno = err != 0 ? err : EIO;
    return Fail(s.failed_errno, "rte_eal_init");
  }
  s.state = State::kUp;
  s.pid = getpid();
  s.origin = Origin::kOnchip;
  ++s.leases;
  return EalLease(true);
}

Result<void> Eal::Shutdown() {
  Singleton& s = S();
  std::lock_guard lock(s.mu);
  if (s.state != State::kUp) return {};
  if (s.leases != 0) return Fail(EBUSY, "EAL shutdown: leases still held");
  if (s.origin == Origin::kHost) {
    s.state = State::kDown;  // the host owns it; forget we adopted it
    return {};
  }
  int rc = rte_eal_cleanup();
  s.state = State::kShutDown;
  if (rc != 0) return Fail(-rc, "rte_eal_cleanup");
  return {};
}

bool Eal::Running() {
  Singleton& s = S();
  std::lock_guard lock(s.mu);
  return s.state == State::kUp || (s.state == State::kDown && rte_lcore_count() != 0);
}

bool Eal::InheritedByFork() {
  Singleton& s = S();
  std::lock_guard lock(s.mu);
  return s.state == State::kUp && s.pid != getpid();
}

Eal::Origin Eal::origin() {
  Singleton& s = S();
  std::lock_guard lock(s.mu);
  return s.origin;
}

bool Eal::has_hugepages() { return rte_eal_has_hugepages() != 0; }

EalLease& EalLease::operator=(EalLease&& o) noexcept {
  if (this != &o) {
    reset();
    held_ = o.held_;
    o.held_ = false;
  }
  return *this;
}

void EalLease::reset() {
  if (!held_) return;
  held_ = false;
  Singleton& s = S();
  std::lock_guard lock(s.mu);
  --s.leases;
}

}  // namespace onchip::alloc
