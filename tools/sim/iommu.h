// The software ConnectX's IOMMU: the only way the device reaches host memory.
//
// The driver maps DMA regions (IOVA -> host memory); the device translates a bus address and a
// length to a host pointer only if the whole range lies inside one mapping. Anything else
// (unmapped, straddling two mappings, wrapping) yields nullptr and the caller fails the command;
// nothing outside the mappings is ever touched.
//
// Concurrency: mappings change while commands run. A device thread that touches host memory does
// so inside an Access (a shared lock); UnmapDma takes the lock exclusively, so when it returns no
// Access that could see the old mapping is alive ("the device stops using the memory before this
// returns"). An Access must not be held across a wait that needs the driver to progress.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <shared_mutex>
#include <span>

#include "uapi/cmdq/mailbox.h"
#include "uapi/result.h"
#include "uapi/vpci.h"

namespace onchip::sim {

class Iommu {
 public:
  // EINVAL: not 4 KiB aligned, zero length, null host, wrapping, or overlapping a mapping.
  Result<void> Map(const vpci::DmaRegion& region);
  // ENOENT: no mapping starts at iova with exactly that length.
  Result<void> Unmap(uint64_t iova, uint64_t length);

  std::size_t mapping_count() const;

  // A window of translations valid while it lives.
  class Access final : public cmdq::BlockAccess {
   public:
    explicit Access(const Iommu& iommu) : iommu_(iommu), lock_(iommu.mutex_) {}
    // Host pointer for [iova, iova + len) if one mapping covers it, else nullptr.
    std::byte* Translate(uint64_t iova, uint64_t len) const;
    std::byte* Block(uint64_t addr) override { return Translate(addr, cmdq::kBlockBytes); }

   private:
    const Iommu& iommu_;
    std::shared_lock<std::shared_mutex> lock_;
  };

  // Copies through a short-lived Access; false if the range is not wholly mapped.
  bool Read(uint64_t iova, std::span<std::byte> out) const;
  bool Write(uint64_t iova, std::span<const std::byte> in) const;
  // True if [iova, iova + len) lies inside one mapping.
  bool IsMapped(uint64_t iova, uint64_t len) const;

 private:
  struct Mapping {
    uint64_t length;
    std::byte* host;
  };
  std::byte* TranslateLocked(uint64_t iova, uint64_t len) const;

  mutable std::shared_mutex mutex_;
  std::map<uint64_t, Mapping> mappings_;  // by iova
};

}  // namespace onchip::sim
