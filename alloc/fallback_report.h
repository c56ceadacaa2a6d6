// alloc/fallback_report.h: "each fallback is reported once, with the reason".
//
// One report per (tier, reason) per process, logged at info (log/log.h: seen with
// ONCHIP_LOG=info or debug, silent otherwise), for example
//   onchip alloc: dpdk-hugepages unavailable: EAL: no 2 MiB hugepages reserved (...); using memfd-hugetlb
// Returns true when this call made the report (tests use it; callers usually ignore it).
#pragma once

#include "alloc/tier.h"
#include "uapi/result.h"

namespace onchip::alloc {

bool ReportFallbackOnce(Tier from, const Error& why, Tier to);

// Number of reports made so far in this process, logged or not (for tests).
int FallbackReports();

}  // namespace onchip::alloc
