#include "driver/context.h"

#include <cstdio>

#include "driver/open.h"
#include "log/log.h"

namespace onchip {

DeviceMemory& DeviceMemory::operator=(DeviceMemory&& o) noexcept {
  if (this != &o) {
    (void)Free();
    dm_ = std::exchange(o.dm_, nullptr);
  }
  return *this;
}
DeviceMemory::~DeviceMemory() { (void)Free(); }

Result<void> DeviceMemory::Write(uint64_t offset, std::span<const std::byte> bytes) {
  if (!dm_) return Fail(EINVAL, "dm write: empty handle");
  const int err = dm_->ibv.memcpy_to_dm(&dm_->ibv, offset, bytes.data(), bytes.size());
  if (err) return Fail(err, "memcpy_to_dm");
  return {};
}

Result<void> DeviceMemory::Read(uint64_t offset, std::span<std::byte> bytes) const {
  if (!dm_) return Fail(EINVAL, "dm read: empty handle");
  const int err = dm_->ibv.memcpy_from_dm(bytes.data(), &dm_->ibv, offset, bytes.size());
  if (err) return Fail(err, "memcpy_from_dm");
  return {};
}

Result<void> DeviceMemory::Free() {
  if (!dm_) return {};
  ONCHIP_CHECK(driver::FreeDm(dm_));
  dm_ = nullptr;
  return {};
}

ProtectionDomain& ProtectionDomain::operator=(ProtectionDomain&& o) noexcept {
  if (this != &o) {
    (void)Free();
    pd_ = std::exchange(o.pd_, nullptr);
  }
  return *this;
}
ProtectionDomain::~ProtectionDomain() { (void)Free(); }
Result<void> ProtectionDomain::Free() {
  if (!pd_) return {};
  ONCHIP_CHECK(driver::DeallocPd(pd_));
  pd_ = nullptr;
  return {};
}

MemoryRegion& MemoryRegion::operator=(MemoryRegion&& o) noexcept {
  if (this != &o) {
    (void)Deregister();
    mr_ = std::exchange(o.mr_, nullptr);
  }
  return *this;
}
MemoryRegion::~MemoryRegion() { (void)Deregister(); }
Result<void> MemoryRegion::Deregister() {
  if (!mr_) return {};
  ONCHIP_CHECK(driver::DeregMr(mr_));
  mr_ = nullptr;
  return {};
}

Result<Context> Context::Open(const driver::Locator& locator, driver::DeviceOptions opts) {
  ONCHIP_TRY(auto device, driver::Open(locator, opts));
  return Context(std::move(device));
}

Result<Context> Context::Open(std::string_view locator, driver::DeviceOptions opts) {
  ONCHIP_TRY(auto device, driver::Open(locator, opts));
  return Context(std::move(device));
}

Context& Context::operator=(Context&& o) noexcept {
  if (this != &o) {
    Close();
    device_ = std::move(o.device_);
  }
  return *this;
}

Context::~Context() {
  // Nobody reads the report of an implicit close, so an unclean one is said on stderr under
  // ONCHIP_LOG=warn (never on a hot path: once per device).
  const driver::TeardownReport report = Close();
  if ((report.first_error || report.objects() != 0 || report.pages_still_held) &&
      log::Enabled(log::Level::kWarn))
    log::Say(log::Level::kWarn, "onchip: context destroyed with live objects: %s",
             report.describe().c_str());
}

driver::TeardownReport Context::Close() {
  if (!device_) return {};
  return device_->Close();
}

Result<DeviceMemory> Context::AllocDm(uint64_t length, uint32_t log_align_req, int type) {
  ibv_alloc_dm_attr attr{.length = length, .log_align_req = log_align_req, .comp_mask = 0};
  mlx5dv_alloc_dm_attr dv{};
  driver::SetDmType(dv, type);
  ONCHIP_TRY(driver::Dm * dm, driver::AllocDm(device_, attr, &dv));
  return DeviceMemory(dm);
}

Result<ProtectionDomain> Context::AllocPd() {
  ONCHIP_TRY(driver::Pd * pd, driver::AllocPd(device_));
  return ProtectionDomain(pd);
}

Result<MemoryRegion> Context::RegDmMr(ProtectionDomain& pd, DeviceMemory& dm, uint64_t offset,
                                      size_t length, unsigned int access) {
  ONCHIP_TRY(driver::Mr * mr, driver::RegDmMr(pd.get(), dm.get(), offset, length, access));
  return MemoryRegion(mr);
}

}  // namespace onchip
