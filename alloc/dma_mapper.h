// alloc/dma_mapper.h: the seam through which a bus makes regions visible to a device.
//
// The provider calls Map() exactly once for every new backing region (never per buffer) and
// Unmap() once when it gives the region back. A buffer's IOVA is then the region's IOVA plus the
// buffer's offset in the region. The driver's bus implements this (VFIO_IOMMU_MAP_DMA, or the
// software ConnectX's IOMMU channel); tests use a recording fake.
//
//   class MyBus : public onchip::alloc::DmaMapper {
//     Result<uint64_t> Map(const Region& r) override { ... return iova; }
//     void Unmap(const Region& r, uint64_t iova) override { ... }
//   };
#pragma once

#include <cstdint>

#include "alloc/region.h"
#include "uapi/result.h"

namespace onchip::alloc {

class DmaMapper {
 public:
  virtual ~DmaMapper() = default;

  // Makes [r.addr, r.addr + r.length) reachable by the device; returns the IOVA of r.addr.
  // A failure fails the allocation that needed the region (the region is given back).
  virtual Result<uint64_t> Map(const Region& r) = 0;

  // Called once, before the region's memory is released. Cannot fail: a bus that cannot unmap
  // must quarantine the memory itself.
  virtual void Unmap(const Region& r, uint64_t iova) = 0;
};

}  // namespace onchip::alloc
