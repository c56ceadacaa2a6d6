#include "tools/simd/quota.h"

#include <charconv>
#include <string>

#include "uapi/prm/cmd_layout.h"
#include "uapi/prm/field.h"
#include "uapi/prm/memic.h"

namespace onchip::simd {
namespace {

using prm::ObjectKind;

struct DefaultRow {
  ObjectKind kind;
  uint32_t max;
};
// The software ConnectX has 256 UARs and EQs, 2^16 PDs, mkeys and XRC domains, 2^12 transport
// domains, CQs and QP numbers (SQs and RQs share them), 2^10 SRQs, TISes and TIRs.
constexpr DefaultRow kDefaults[] = {
    {ObjectKind::kUar, 32},     {ObjectKind::kPd, 4096},     {ObjectKind::kTd, 1024},
    {ObjectKind::kMkey, 16384}, {ObjectKind::kMemic, 256},   {ObjectKind::kSwIcm, 64},
    {ObjectKind::kEq, 32},      {ObjectKind::kCq, 1024},     {ObjectKind::kQp, 1024},
    {ObjectKind::kSrq, 256},    {ObjectKind::kTis, 256},     {ObjectKind::kSq, 1024},
    {ObjectKind::kRq, 1024},    {ObjectKind::kTir, 256},     {ObjectKind::kXrcd, 4096},
    {ObjectKind::kXrcSrq, 256},
};
static_assert(std::size(kDefaults) == prm::kObjectKindCount, "a default for every kind");

bool ParseCount(std::string_view text, uint64_t* n) {
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *n);
  return !text.empty() && ec == std::errc() && end == text.data() + text.size();
}

}  // namespace

Quota Quota::Default() {
  Quota q;
  for (const DefaultRow& row : kDefaults) q.objects[static_cast<std::size_t>(row.kind)] = row.max;
  return q;
}

bool Quota::Set(std::string_view assignment) {
  const std::size_t eq = assignment.find('=');
  if (eq == std::string_view::npos) return false;
  const std::string_view name = assignment.substr(0, eq);
  uint64_t n = 0;
  if (!ParseCount(assignment.substr(eq + 1), &n)) return false;
  if (name == "memic_bytes") {
    memic_bytes = n;
    return true;
  }
  if (name == "mappings") {
    mappings = n;
    return true;
  }
  if (name == "steering_tags") {
    if (n > std::numeric_limits<uint32_t>::max()) return false;
    steering_tags = static_cast<uint32_t>(n);
    return true;
  }
  for (const prm::ObjectKindRow& row : prm::kObjectKinds) {
    if (row.name != name) continue;
    if (n > std::numeric_limits<uint32_t>::max()) return false;
    objects[static_cast<std::size_t>(row.kind)] = static_cast<uint32_t>(n);
    return true;
  }
  return false;
}

const char* OverQuota(const Quota& quota, const OwnedObjects& owned, std::span<const std::byte> in) {
  if (in.size() < 16) return nullptr;
  const auto opcode = static_cast<uint16_t>(prm::Get(in, prm::mbox_in::opcode));
  const prm::ObjectKindRow* row = prm::CreatedBy(opcode);
  if (row == nullptr) return nullptr;
  const auto kind = static_cast<std::size_t>(row->kind);
  if (owned.counts()[kind] >= quota.objects[kind])
    return "the client holds as many objects of this kind as its quota allows (onchip-simd --quota)";
  if (row->kind == prm::ObjectKind::kMemic && in.size() >= prm::size_bytes<prm::alloc_memic_in>) {
    const uint64_t size = prm::Get(in, prm::alloc_memic_in::memic_size);
    if (size > quota.memic_bytes || owned.memic_bytes() > quota.memic_bytes - size)
      return "the client holds as much device memory as its quota allows (onchip-simd --quota)";
  }
  return nullptr;
}

}  // namespace onchip::simd
