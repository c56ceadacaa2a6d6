#include "tools/sim/fuzz/direct_bring_up.h"

#include <cerrno>
#include <span>
#include <vector>

#include "uapi/prm/hca.h"
#include "uapi/prm/opcodes.h"
#include "uapi/prm/resources.h"

namespace onchip::sim::fuzz {

Result<DirectHca> BringUpDirect(Firmware& firmware, uint64_t pages_iova, uint32_t pages) {
  std::vector<std::byte> out(16);
  auto run = [&](const auto& in) {
    return firmware.Execute(in.bytes(), out).ok();
  };
  if (!run(prm::CommandIn<prm::enable_hca_in>(prm::ENABLE_HCA)))
    return Fail(EIO, "direct bring-up: ENABLE_HCA refused");
  auto issi = prm::CommandIn<prm::set_issi_in>(prm::SET_ISSI);
  issi.set(prm::set_issi_in::current_issi, 1);
  if (!run(issi)) return Fail(EIO, "direct bring-up: SET_ISSI refused");
  auto give = prm::CommandIn<prm::manage_pages_in>(prm::MANAGE_PAGES, prm::PAGES_GIVE, 8 * pages);
  give.set(prm::manage_pages_in::input_num_entries, pages);
  for (uint32_t i = 0; i < pages; ++i)
    give.set(prm::manage_pages_in::pas[i], pages_iova + uint64_t{i} * 4096);
  if (!run(give)) return Fail(EIO, "direct bring-up: MANAGE_PAGES refused");
  if (!run(prm::CommandIn<prm::init_hca_in>(prm::INIT_HCA)))
    return Fail(EIO, "direct bring-up: INIT_HCA refused");
  DirectHca hca;
  if (!run(prm::CommandIn<prm::alloc_uar_in>(prm::ALLOC_UAR)))
    return Fail(EIO, "direct bring-up: ALLOC_UAR refused");
  hca.uar = static_cast<uint32_t>(prm::Get(std::span<const std::byte>(out), prm::alloc_uar_out::uar));
  if (!run(prm::CommandIn<prm::alloc_pd_in>(prm::ALLOC_PD)))
    return Fail(EIO, "direct bring-up: ALLOC_PD refused");
  hca.pd = static_cast<uint32_t>(prm::Get(std::span<const std::byte>(out), prm::alloc_pd_out::pd));
  return hca;
}

}  // namespace onchip::sim::fuzz
