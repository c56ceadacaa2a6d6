#include "alloc/hugepage_pool.h"

#include <cstdio>

namespace onchip::alloc {
namespace {

std::optional<uint64_t> ReadCounter(const char* path) {
  FILE* f = std::fopen(path, "re");
  if (f == nullptr) return std::nullopt;
  unsigned long long v = 0;
  int n = std::fscanf(f, "%llu", &v);
  std::fclose(f);
  if (n != 1) return std::nullopt;
  return v;
}

}  // namespace

std::optional<HugepagePool> ReadHugepagePool() {
  constexpr const char* kDir = "/sys/kernel/mm/hugepages/hugepages-2048kB/";
  char path[128];
  std::snprintf(path, sizeof path, "%snr_hugepages", kDir);
  auto reserved = ReadCounter(path);
  std::snprintf(path, sizeof path, "%sfree_hugepages", kDir);
  auto free = ReadCounter(path);
  if (!reserved || !free) return std::nullopt;
  return HugepagePool{*reserved, *free};
}

}  // namespace onchip::alloc
