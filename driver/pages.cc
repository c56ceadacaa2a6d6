#include "driver/pages.h"

#include <algorithm>
#include <cerrno>

#include "driver/cmd/run.h"
#include "uapi/prm/hca.h"

namespace onchip::driver {
namespace {

// Pages per TAKE: the answer (16 + 8 n bytes) stays within a few mailboxes, as the kernel does.
constexpr uint32_t kTakeBatch = 512;

}  // namespace

uint64_t PageSupply::held() const {
  std::lock_guard lock(mu_);
  return page_owner_.size();
}

Result<void> PageSupply::Satisfy(cmd::Commander& commander, prm::QueryPagesOpMod op_mod) {
  prm::Message<prm::query_pages_in> in;
  in.set(prm::query_pages_in::opcode, prm::QUERY_PAGES).set(prm::query_pages_in::op_mod, op_mod);
  ONCHIP_TRY(auto out, cmd::Run<prm::query_pages_out>(commander, in));
  // num_pages is a signed count; a negative one asks the driver to take pages back, which
  // boot and init never do.
  const auto num_pages = static_cast<int32_t>(out.get(prm::query_pages_out::num_pages));
  if (num_pages <= 0) return {};
  return Give(commander, static_cast<uint32_t>(num_pages));
}

Result<void> PageSupply::Give(cmd::Commander& commander, uint32_t count) {
  if (count == 0) return {};
  if (count > (1u << 20)) return Fail(EINVAL, "MANAGE_PAGES: firmware asked for over 4 GiB of pages");
  ONCHIP_TRY(bus::DmaMemory memory,
             bus::DmaMemory::Allocate(memory_, uint64_t{count} * prm::ADAPTER_PAGE_SIZE,
                                      prm::ADAPTER_PAGE_SIZE));
  prm::Message<prm::manage_pages_in> in(uint64_t{count} * 8);
  in.set(prm::manage_pages_in::opcode, prm::MANAGE_PAGES)
      .set(prm::manage_pages_in::op_mod, prm::PAGES_GIVE)
      .set(prm::manage_pages_in::input_num_entries, count);
  for (uint32_t i = 0; i < count; ++i)
    in.set(prm::manage_pages_in::pas[i], memory.iova() + uint64_t{i} * prm::ADAPTER_PAGE_SIZE);
  // Recorded before the command: a concurrent TAKE may already return these pages.
  std::unique_lock lock(mu_);
  auto lent = std::make_unique<Lent>(Lent{std::move(memory), count});
  Lent* raw = lent.get();
  for (uint32_t i = 0; i < count; ++i)
    page_owner_[raw->memory.iova() + uint64_t{i} * prm::ADAPTER_PAGE_SIZE] = raw;
  lent_.push_back(std::move(lent));
  lock.unlock();

  auto given = cmd::Run<prm::manage_pages_out>(commander, in);
  if (given) return {};
  // The firmware refused the GIVE, so it holds none of them: forget and free the buffer.
  lock.lock();
  for (uint32_t i = 0; i < count; ++i)
    page_owner_.erase(raw->memory.iova() + uint64_t{i} * prm::ADAPTER_PAGE_SIZE);
  std::erase_if(lent_, [&](const auto& l) { return l.get() == raw; });
  return std::unexpected(given.error());
}

Result<uint64_t> PageSupply::ReclaimAll(cmd::Commander& commander) {
  uint64_t reclaimed = 0;
  for (;;) {
    const uint64_t outstanding = held();
    if (outstanding == 0) return reclaimed;
    const uint32_t ask = static_cast<uint32_t>(std::min<uint64_t>(outstanding, kTakeBatch));
    prm::Message<prm::manage_pages_in> in;
    in.set(prm::manage_pages_in::opcode, prm::MANAGE_PAGES)
        .set(prm::manage_pages_in::op_mod, prm::PAGES_TAKE)
        .set(prm::manage_pages_in::input_num_entries, ask);
    ONCHIP_TRY(auto out, cmd::Run<prm::manage_pages_out>(commander, in, uint64_t{ask} * 8));
    const uint32_t got = out.get(prm::manage_pages_out::output_num_entries);
    if (got > ask) return Fail(EPROTO, "MANAGE_PAGES TAKE: firmware returned more pages than asked");
    if (got == 0) return reclaimed;  // the firmware keeps the rest
    std::lock_guard lock(mu_);
    for (uint32_t i = 0; i < got; ++i) {
      const uint64_t page = out.get(prm::manage_pages_out::pas[i]);
      auto it = page_owner_.find(page);
      if (it == page_owner_.end())
        return Fail(EPROTO, "MANAGE_PAGES TAKE: firmware returned a page it was never given");
      Lent* owner = it->second;
      page_owner_.erase(it);
      ++reclaimed;
      if (--owner->outstanding == 0)
        std::erase_if(lent_, [&](const auto& l) { return l.get() == owner; });
    }
  }
}

}  // namespace onchip::driver
