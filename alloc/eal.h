// alloc/eal.h: DPDK's environment abstraction layer, initialised at most once per process.
//
// rte_eal_init can run only once in a process (a second call fails with EALREADY, even after
// rte_eal_cleanup), so the EAL is a process-wide singleton with an explicit lifetime:
//
//   ONCHIP_TRY(auto lease, Eal::Acquire(EalOptions::FromEnvironment()));  // init or adopt
//   ... rte_malloc memory ...
//   lease = {};            // drop every lease (providers hold one), then, optionally:
//   Eal::Shutdown();       // rte_eal_cleanup; the process cannot use the EAL again
//
// If the host application (a trading stack running DPDK) already initialised the EAL, Acquire
// adopts it and never re-initialises or cleans it up. onchip's own initialisation uses
// --in-memory (no files in /var/run, no hugetlbfs mount), --no-pci (onchip probes nothing
// through DPDK), --single-file-segments (one memfd per memseg list, so a multi-page region has one
// fd), a unique --file-prefix, and one lcore taken from the caller's current affinity. The
// caller's CPU affinity is restored afterwards: rte_eal_init pins the calling thread.
#pragma once

#include <string>
#include <vector>

#include "uapi/result.h"

namespace onchip::alloc {

struct EalOptions {
  // The complete argument list after argv[0]. Empty: DefaultEalArgs() plus extra_args.
  std::vector<std::string> args;
  // Appended to the defaults when `args` is empty (e.g. "--socket-mem=1024").
  std::vector<std::string> extra_args;

  // Defaults, with ONCHIP_EAL_ARGS (whitespace-separated) replacing `args` when set.
  static EalOptions FromEnvironment();
};

// --in-memory --no-pci --single-file-segments --no-telemetry --iova-mode=va
// --log-level=lib.eal:error --file-prefix=onchip-<pid>-<n> -l <one cpu of the current affinity>
std::vector<std::string> DefaultEalArgs();

class EalLease;

class Eal {
 public:
  enum class Origin { kOnchip, kHost };

  // Initialises the EAL on first use (or adopts one the host initialised) and returns a lease
  // that keeps it alive. Options are ignored once the EAL is up. Errors:
  //   ENOMEM     no 2 MiB hugepages reserved (nothing is attempted; a later call may succeed)
  //   ESHUTDOWN  Shutdown() already ran: DPDK cannot be initialised twice in one process
  //   rte_errno  of a failed rte_eal_init; the failure is remembered and returned again
  //   ENOTSUP    in a forked child of the process the EAL came up in (DPDK does not survive
  //              fork: its heap would hand out pages the parent also hands out)
  static Result<EalLease> Acquire(const EalOptions& options);

  // rte_eal_cleanup for an EAL onchip initialised; a no-op for a host's EAL.
  // EBUSY while leases are held.
  static Result<void> Shutdown();

  // Whether the EAL is up (initialised by onchip or the host) right now.
  static bool Running();
  // Whether this process is a forked child of the one the EAL came up in (Acquire: ENOTSUP).
  static bool InheritedByFork();
  static Origin origin();
  static bool has_hugepages();
};

// Move-only: while one is alive, Eal::Shutdown() refuses with EBUSY.
class EalLease {
 public:
  EalLease() = default;
  EalLease(EalLease&& o) noexcept : held_(o.held_) { o.held_ = false; }
  EalLease& operator=(EalLease&& o) noexcept;
  EalLease(const EalLease&) = delete;
  EalLease& operator=(const EalLease&) = delete;
  ~EalLease() { reset(); }

  explicit operator bool() const { return held_; }
  void reset();

 private:
  friend class Eal;
  explicit EalLease(bool held) : held_(held) {}
  bool held_ = false;
};

}  // namespace onchip::alloc
