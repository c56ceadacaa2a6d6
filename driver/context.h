// The C++ API for embedders: open a device, allocate device memory, copy, register, with RAII
// handles. Thin over the verbs-shaped objects (dm.h, pd.h, mr.h); verbs() on each handle gives
// the rdma-core struct for code that speaks <infiniband/verbs.h>.
//
//   ONCHIP_TRY(auto ctx, onchip::Context::Open("sim"));    // or "simd:<socket>", "vfio:<PCI>"
//   ONCHIP_TRY(auto dm, ctx.AllocDm(4096));
//   ONCHIP_CHECK(dm.Write(0, bytes));
//   ONCHIP_TRY(auto pd, ctx.AllocPd());
//   ONCHIP_TRY(auto mr, ctx.RegDmMr(pd, dm, 0, 4096, IBV_ACCESS_ZERO_BASED | IBV_ACCESS_REMOTE_READ));
//
// Handles are move-only. Destroying one releases it and ignores errors; call Free() /
// Deregister() to see them (EBUSY for a DM or PD an MR still uses: it stays, and Close() of the
// context cleans it up). Handles may outlive their Context: after Close() they answer EIO.
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <string_view>

#include "driver/device.h"
#include "driver/dm.h"
#include "driver/mr.h"
#include "driver/open.h"
#include "driver/pd.h"

namespace onchip {

class DeviceMemory {
 public:
  DeviceMemory() = default;
  explicit DeviceMemory(driver::Dm* dm) : dm_(dm) {}
  DeviceMemory(DeviceMemory&& o) noexcept : dm_(std::exchange(o.dm_, nullptr)) {}
  DeviceMemory& operator=(DeviceMemory&& o) noexcept;
  ~DeviceMemory();

  // ibv_memcpy_to_dm / ibv_memcpy_from_dm with the error model (EFAULT, EINVAL, EOPNOTSUPP).
  Result<void> Write(uint64_t offset, std::span<const std::byte> bytes);
  Result<void> Read(uint64_t offset, std::span<std::byte> bytes) const;
  Result<void> Free();

  uint64_t length() const { return dm_->length; }
  uint64_t remote_va() const { return dm_->remote_va; }
  ibv_dm* verbs() const { return dm_ ? &dm_->ibv : nullptr; }
  driver::Dm* get() const { return dm_; }

 private:
  driver::Dm* dm_ = nullptr;
};

class ProtectionDomain {
 public:
  ProtectionDomain() = default;
  explicit ProtectionDomain(driver::Pd* pd) : pd_(pd) {}
  ProtectionDomain(ProtectionDomain&& o) noexcept : pd_(std::exchange(o.pd_, nullptr)) {}
  ProtectionDomain& operator=(ProtectionDomain&& o) noexcept;
  ~ProtectionDomain();
  Result<void> Free();
  ibv_pd* verbs() const { return pd_ ? &pd_->ibv : nullptr; }
  driver::Pd* get() const { return pd_; }

 private:
  driver::Pd* pd_ = nullptr;
};

class MemoryRegion {
 public:
  MemoryRegion() = default;
  explicit MemoryRegion(driver::Mr* mr) : mr_(mr) {}
  MemoryRegion(MemoryRegion&& o) noexcept : mr_(std::exchange(o.mr_, nullptr)) {}
  MemoryRegion& operator=(MemoryRegion&& o) noexcept;
  ~MemoryRegion();
  Result<void> Deregister();
  uint32_t lkey() const { return mr_->ibv.lkey; }
  uint32_t rkey() const { return mr_->ibv.rkey; }
  ibv_mr* verbs() const { return mr_ ? &mr_->ibv : nullptr; }
  driver::Mr* get() const { return mr_; }

 private:
  driver::Mr* mr_ = nullptr;
};

class Context {
 public:
  // Over what the locator names (driver/open.h: "sim", "simd:<socket>", "vfio:<PCI address>",
  // or Locator::Of(function) for a virtual PCI function that outlives the Context).
  static Result<Context> Open(const driver::Locator& locator, driver::DeviceOptions opts = {});
  static Result<Context> Open(std::string_view locator, driver::DeviceOptions opts = {});

  Context(Context&&) noexcept = default;
  Context& operator=(Context&& o) noexcept;
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;
  ~Context();

  // type: MLX5DV_DM_TYPE_* (MEMIC is ibv_alloc_dm's).
  Result<DeviceMemory> AllocDm(uint64_t length, uint32_t log_align_req = 0,
                               int type = MLX5DV_DM_TYPE_MEMIC);
  Result<ProtectionDomain> AllocPd();
  Result<MemoryRegion> RegDmMr(ProtectionDomain& pd, DeviceMemory& dm, uint64_t offset,
                               size_t length, unsigned int access);

  // Destroys every live object, tears the function down, and says what it did. The destructor
  // does the same and logs the report (ONCHIP_LOG=warn) if it had anything to clean.
  driver::TeardownReport Close();

  driver::Device& device() const { return *device_; }
  const std::shared_ptr<driver::Device>& shared_device() const { return device_; }
  // The device's embedded ibv_context: what driver/verbs/calls.h's calls take.
  ibv_context* verbs() const { return device_->verbs(); }

 private:
  explicit Context(std::shared_ptr<driver::Device> d) : device_(std::move(d)) {}
  std::shared_ptr<driver::Device> device_;
};

}  // namespace onchip
