#include "alloc/fallback_report.h"

#include <atomic>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <set>
#include <string>
#include <tuple>

#include "alloc/hugepage_pool.h"
#include "log/log.h"

namespace onchip::alloc {
namespace {

std::mutex g_mu;
std::atomic<int> g_reported{0};

}  // namespace

bool ReportFallbackOnce(Tier from, const Error& why, Tier to) {
  {
    // Keyed by the reason's identity (errno and the literal), not its text.
    static std::set<std::tuple<int, int, const void*>>* seen =
        new std::set<std::tuple<int, int, const void*>>();  // never freed: may run at exit
    std::lock_guard lock(g_mu);
    if (!seen->emplace(static_cast<int>(from), why.errno_value(), why.what()).second) return false;
  }
  g_reported.fetch_add(1, std::memory_order_relaxed);
  if (!log::Enabled(log::Level::kInfo)) return true;
  std::string reason = why.describe();
  if (from != Tier::kMemfd4k && why.errno_value() == ENOMEM) {
    if (auto pool = ReadHugepagePool()) {
      reason += pool->reserved == 0 ? " (no hugepages reserved, nr_hugepages=0)"
                                    : " (nr_hugepages=" + std::to_string(pool->reserved) +
                                          ", free=" + std::to_string(pool->free) + ")";
    }
  }
  log::Say(log::Level::kInfo, "onchip alloc: %.*s unavailable: %s; using %.*s",
           static_cast<int>(TierName(from).size()), TierName(from).data(), reason.c_str(),
           static_cast<int>(TierName(to).size()), TierName(to).data());
  return true;
}

int FallbackReports() { return g_reported.load(std::memory_order_relaxed); }

}  // namespace onchip::alloc
