// alloc/fallback_report.h: "each fallback is reported once, with the reason".
//
// One stderr line per (tier, reason) per process, for example
//   onchip alloc: dpdk-hugepages unavailable: no hugepages reserved (nr_hugepages=0); using memfd-hugetlb
// Returns true when this call printed the line (tests use it; callers usually ignore it).
#pragma once

#include "alloc/tier.h"
#include "uapi/result.h"

namespace onchip::alloc {

bool ReportFallbackOnce(Tier from, const Error& why, Tier to);

// Number of lines printed so far in this process (for tests).
int FallbackReportsPrinted();

}  // namespace onchip::alloc
