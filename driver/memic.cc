#include "driver/memic.h"

#include <cerrno>

#include "driver/cmd/run.h"
#include "uapi/prm/memic.h"

namespace onchip::driver {
namespace {

constexpr uint64_t kPage = 4096;
constexpr uint64_t kMemicBase = 64;  // MLX5_MEMIC_BASE_SIZE

}  // namespace

void MemicAllocator::Configure(const Caps& caps, uint64_t bar0_size) {
  std::lock_guard lock(mu_);
  const prm::Bits dm = caps.cur(prm::CAP_DEV_MEM);
  memic_ = caps.cur(prm::CAP_GENERAL).get(prm::cmd_hca_cap::device_memory) &&
           dm.get(prm::device_mem_cap::memic);
  bar_start_ = dm.get(prm::device_mem_cap::memic_bar_start_addr);
  bar_size_ = dm.get(prm::device_mem_cap::memic_bar_size);
  max_memic_size_ = dm.get(prm::device_mem_cap::max_memic_size);
  log_max_align_ = dm.get(prm::device_mem_cap::log_max_memic_addr_alignment);
  // A window the BAR cannot hold is no window: the CPU could not reach it.
  if (bar_start_ > bar0_size || bar_size_ > bar0_size - bar_start_ || bar_size_ < kPage) memic_ = false;
  used_.assign(memic_ ? bar_size_ / kPage : 0, false);
}

uint32_t MemicAllocator::pages_in_use() const {
  std::lock_guard lock(mu_);
  uint32_t n = 0;
  for (bool b : used_) n += b;
  return n;
}

Result<MemicAllocator::Allocation> MemicAllocator::Alloc(cmd::Commander& c, uint64_t length,
                                                         uint32_t log_align_req) {
  if (!memic_) return Fail(EOPNOTSUPP, "alloc_dm: device has no MEMIC");
  if (length == 0) return Fail(EINVAL, "alloc_dm: zero length");
  if (length > UINT32_MAX - kMemicBase) return Fail(EINVAL, "alloc_dm: length beyond memic_size");
  const uint64_t size = (length + kMemicBase - 1) & ~(kMemicBase - 1);
  const uint32_t mlx5_align = log_align_req < 6 ? 0 : log_align_req - 6;
  if (mlx5_align > log_max_align_)
    return Fail(EINVAL, "alloc_dm: alignment above log_max_memic_addr_alignment");
  const uint64_t num_pages = (size + kPage - 1) / kPage;
  const uint64_t total = used_.size();

  prm::Message<prm::alloc_memic_in> in;
  in.set(prm::alloc_memic_in::opcode, prm::ALLOC_MEMIC)
      .set(prm::alloc_memic_in::range_size, num_pages * kPage)
      .set(prm::alloc_memic_in::memic_size, size)
      .set(prm::alloc_memic_in::log_memic_addr_alignment, mlx5_align);

  uint64_t page = 0;
  while (page < total) {
    {
      // The first free run of num_pages pages at or after `page`, marked under the lock.
      std::lock_guard lock(mu_);
      uint64_t run = 0;
      for (; page < total && run < num_pages; ++page) run = used_[page] ? 0 : run + 1;
      if (run < num_pages) break;
      page -= num_pages;
      for (uint64_t i = 0; i < num_pages; ++i) used_[page + i] = true;
    }
    in.set(prm::alloc_memic_in::range_start_addr, bar_start_ + page * kPage);
    auto out = cmd::Run<prm::alloc_memic_out>(c, in);
    if (out) {
      const uint64_t addr = out->get(prm::alloc_memic_out::memic_start_addr);
      Allocation a{addr, size, static_cast<uint32_t>(page), static_cast<uint32_t>(num_pages)};
      if (addr >= bar_start_ && addr - bar_start_ <= bar_size_ && size <= bar_start_ + bar_size_ - addr)
        return a;
      // The firmware placed it where the CPU window does not reach: give it back.
      (void)Free(c, a);
      return Fail(EPROTO, "ALLOC_MEMIC: firmware returned an address outside the MEMIC window");
    }
    {
      std::lock_guard lock(mu_);
      for (uint64_t i = 0; i < num_pages; ++i) used_[page + i] = false;
    }
    if (out.error().errno_value() != EAGAIN) return std::unexpected(out.error());
    ++page;  // NOT_READY / NO_RES: try the next candidate
  }
  return Fail(ENOMEM, "alloc_dm: no free MEMIC range");
}

Result<void> MemicAllocator::Free(cmd::Commander& c, const Allocation& a) {
  prm::Message<prm::dealloc_memic_in> in;
  in.set(prm::dealloc_memic_in::opcode, prm::DEALLOC_MEMIC)
      .set(prm::dealloc_memic_in::memic_start_addr, a.bar_offset)
      .set(prm::dealloc_memic_in::memic_size, a.size);
  ONCHIP_TRY(auto out, cmd::Run<prm::dealloc_memic_out>(c, in));
  (void)out;
  std::lock_guard lock(mu_);
  for (uint32_t i = 0; i < a.num_pages; ++i) used_[a.first_page + i] = false;
  return {};
}

}  // namespace onchip::driver
