// Queue buffers: the pas[] page list every queue-creating command (EQ, CQ, later QP and SRQ)
// carries after its fixed layout.
//
// A queue of 2^log_queue_bytes bytes in pages of 2^log_page_bytes needs
// max(1, queue / page) pages, and the list must hold exactly that many: a driver that sends more
// or fewer computed the queue differently from the device. Each entry is a bus address (IOVA),
// aligned to the page size (so its low bits, which other lists use as flags, are zero here), and
// the bytes of the queue in that page (the whole page, or the whole queue when one page is larger
// than it) must be mapped in the IOMMU now, for the issuing context: the data engine later
// writes EQEs and CQEs there.
#include <algorithm>
#include <cstring>

#include "tools/sim/firmware.h"

namespace onchip::sim {


Outcome Firmware::ReadQueuePages(std::span<const std::byte> in, std::size_t pas_offset,
                                 uint32_t log_queue_bytes, uint32_t log_page_bytes,
                                 const PasSyndromes& syndromes,
                                 std::vector<uint64_t>* pas) const {
  if (log_queue_bytes >= 64) return Refuse(syndromes.count);
  return ReadBufferPages(in, pas_offset, uint64_t{1} << log_queue_bytes, log_page_bytes,
                         syndromes, pas);
}

Outcome Firmware::ReadBufferPages(std::span<const std::byte> in, std::size_t pas_offset,
                                  uint64_t buffer_bytes, uint32_t log_page_bytes,
                                  const PasSyndromes& syndromes,
                                  std::vector<uint64_t>* pas) const {
  const uint64_t page = uint64_t{1} << log_page_bytes;
  const uint64_t needed = std::max<uint64_t>(1, (buffer_bytes + page - 1) >> log_page_bytes);
  const std::size_t given = (in.size() - pas_offset) / 8;
  if ((in.size() - pas_offset) % 8 != 0 || given != needed)
    return Refuse(syndromes.count);
  // The pages must be mapped for the context that issues the command (uid in its header).
  const auto uid = static_cast<uint16_t>(prm::Get(in, prm::mbox_in::uid));
  std::vector<uint64_t> list(given);
  for (std::size_t i = 0; i < given; ++i) {
    const uint64_t e = prm::Get(in.subspan(pas_offset), prm::Element<64>{i * 64, "pas"});
    if (e % page != 0) return Refuse(syndromes.entry);
    // The bytes of the buffer this page holds: the whole page, or what is left of the buffer.
    const uint64_t used = std::min(page, buffer_bytes - i * page);
    if (!iommu_.IsMappedFor(uid, e, used)) return Refuse(syndromes.unmapped);
    list[i] = e;
  }
  *pas = std::move(list);
  return Outcome::Ok();
}

void Firmware::WriteQueuePages(std::span<std::byte> out, std::size_t pas_offset,
                               const std::vector<uint64_t>& pas) {
  if (out.size() <= pas_offset) return;
  const std::size_t n = std::min(pas.size(), (out.size() - pas_offset) / 8);
  prm::Bits b(out.subspan(pas_offset));
  for (std::size_t i = 0; i < n; ++i) b.set(prm::Element<64>{i * 64, "pas"}, pas[i]);
}

}  // namespace onchip::sim
