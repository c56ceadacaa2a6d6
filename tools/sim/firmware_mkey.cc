// Memory keys: CREATE_MKEY, DESTROY_MKEY, QUERY_MKEY.
//
// An mkey is kept as the 64-byte mkc the driver sent plus its translation list, so QUERY_MKEY
// returns exactly what was created (free, umr_en, en_rinval, TPH fields, variant byte). The mkey
// value the driver uses is mkey_index << 8 | mkc.mkey_7_0. Access modes: PA (uid 0 only), MTT,
// KLMS (memory windows: free = 1, umr_en = 1), SW_ICM (inside one live SW ICM object), MEMIC
// (inside one live MEMIC allocation; start_addr is the BAR offset). An mkey holds its PD, its
// MEMIC allocation or SW ICM object, and the mkeys its KLMs name: those refuse to go (RES_BUSY)
// while it lives.
#include <algorithm>
#include <cstring>

#include "tools/sim/firmware.h"
#include "uapi/prm/caps.h"
#include "uapi/prm/endian.h"
#include "uapi/prm/mkey.h"
#include "uapi/prm/opcodes.h"
#include "uapi/prm/umr.h"
#include "uapi/prm/wqe.h"

namespace onchip::sim {

using Bytes = std::span<const std::byte>;
using Out = std::span<std::byte>;

namespace {

constexpr std::size_t kOctoword = 16;
constexpr uint32_t kMinLogPageSize = 12;
constexpr uint32_t kMaxLogPageSize = 39;


}  // namespace

// What the key reaches, by access mode: a PA key only for the kernel, an MTT list whose entries
// are page aligned and cover the range, KLM entries naming live keys, one MEMIC allocation or
// SW ICM object holding the range. Notes the MEMIC, SW ICM or KLM targets in `m`.
Outcome Firmware::CheckMkeyTarget(Bytes in, Bytes list, uint32_t mode, Mkey* m) const {
  using In = prm::create_mkey_in;
  constexpr auto mkc = In::memory_key_mkey_entry;
  const uint16_t uid = m->uid;
  const uint64_t start = prm::Get(in, mkc.start_addr);
  const uint64_t len = prm::Get(in, mkc.len);
  const bool free = prm::Get(in, mkc.free);
  const uint64_t octo_size = prm::Get(in, mkc.translations_octword_size);
  const uint64_t octo_actual = prm::Get(in, In::translations_octword_actual_size);
  switch (mode) {
    case prm::MKC_ACCESS_MODE_PA:
      if (uid != 0) return Refuse(Syndrome::MKEY_PA_NOT_PRIVILEGED);
      break;
    case prm::MKC_ACCESS_MODE_MTT: {
      const uint32_t log_ps = prm::Get(in, mkc.log_page_size);
      if (log_ps < kMinLogPageSize || log_ps > kMaxLogPageSize)
        return Refuse(Syndrome::MKEY_PAGE_SIZE);
      const uint64_t ps = uint64_t{1} << log_ps;
      // Entries needed to cover [start, start + len) (populated keys only; a free key's list
      // arrives later by UMR, but it must have room for it).
      const uint64_t first = start & ~(ps - 1);
      const uint64_t end = start + len;
      if (end < start) return Refuse(Syndrome::MKEY_LENGTH);
      const uint64_t npages = len == 0 ? 0 : (end - first + ps - 1) / ps;
      if (octo_size * 2 < npages) return Refuse(Syndrome::MKEY_TRANSLATIONS);
      if (!free && octo_actual * 2 < npages) return Refuse(Syndrome::MKEY_TRANSLATIONS);
      for (uint64_t i = 0; i < octo_actual * 2; ++i) {
        const uint64_t e = prm::Get(list, prm::Element<64>{i * 64, "mtt"});
        // Bits 1:0 are the entry's read/write permission bits.
        if ((e & ~uint64_t{3}) % ps != 0) return Refuse(Syndrome::MKEY_MTT_ENTRY);
        // A user context's key reaches only memory mapped for it, as the kernel builds a user
        // MR only over the caller's own pinned pages (drivers/infiniband/core/umem.c,
        // ib_umem_get): the part of this entry's page that [start, start + len) covers.
        if (uid != 0 && i < npages) {
          const uint64_t page_va = first + i * ps;
          const uint64_t from = std::max(start, page_va);
          const uint64_t to = std::min(end, page_va + ps);
          if (!iommu_.IsMappedFor(uid, (e & ~uint64_t{3}) + (from - page_va), to - from))
            return Refuse(Syndrome::MKEY_MTT_UNMAPPED);
        }
      }
      break;
    }
    case prm::MKC_ACCESS_MODE_KLMS:
      for (uint64_t i = 0; i < octo_actual; ++i) {
        const prm::Element<32> key{i * prm::mlx5_klm::size_bits + prm::mlx5_klm::key.bit_offset,
                                   prm::mlx5_klm::key.name};
        const uint32_t target = prm::Get(list, key) >> 8;
        auto t = mkeys_.find(target);
        if (t == mkeys_.end()) return Refuse(Syndrome::MKEY_KLM_ENTRY);
        m->klm_targets.push_back(target);
      }
      break;
    case prm::MKC_ACCESS_MODE_MEMIC: {
      auto it = memic_.upper_bound(start);
      // An empty range is a valid mkey (verbs allows zero-length MRs) as long as it starts
      // inside, or at the end of, an allocation.
      if (it == memic_.begin()) return Refuse(Syndrome::MKEY_MEMIC_RANGE);
      --it;
      if (start - it->first > it->second.size || len > it->second.size - (start - it->first) ||
          (len != 0 && start - it->first == it->second.size))
        return Refuse(Syndrome::MKEY_MEMIC_RANGE);
      m->memic_start = it->first;
      break;
    }
    case prm::MKC_ACCESS_MODE_SW_ICM: {
      auto hit = std::find_if(sw_icm_.begin(), sw_icm_.end(), [&](const auto& kv) {
        const uint64_t size = uint64_t{1} << kv.second.log_size;
        return start >= kv.second.start && start - kv.second.start <= size &&
               len <= size - (start - kv.second.start) &&
               (len == 0 || start - kv.second.start < size);
      });
      if (hit == sw_icm_.end()) return Refuse(Syndrome::MKEY_SW_ICM_RANGE);
      if (hit->second.uid != uid) return Refuse(Syndrome::NOT_OWNER);
      m->sw_icm_id = hit->first;
      break;
    }
  }

  return Outcome::Ok();
}

Outcome Firmware::CreateMkey(Bytes in, Out out) {
  using In = prm::create_mkey_in;
  constexpr auto mkc = In::memory_key_mkey_entry;
  if (Outcome s = CheckShape<In, prm::create_mkey_out>(in, out); !s.ok()) return s;
  if (!ReservedClear(in, mkc)) return Refuse(Syndrome::RESERVED_NOT_ZERO);
  if (prm::Get(in, In::op_mod) != 0) return Refuse(Syndrome::BAD_OP_MOD);
  const uint16_t uid = static_cast<uint16_t>(prm::Get(in, In::uid));

  // Features this device does not have.
  if (prm::Get(in, In::pg_access) || prm::Get(in, In::mkey_umem_valid) ||
      prm::Get(in, In::data_direct) || prm::Get(in, mkc.bsf_en) || prm::Get(in, mkc.sync_umr) ||
      prm::Get(in, mkc.expected_sigerr_count) || prm::Get(in, mkc.bsf_octword_size) ||
      prm::Get(in, mkc.crossing_target_vhca_id) || prm::Get(in, mkc.ma_translation_mode) ||
      prm::Get(in, mkc.small_fence_on_rdma_read_response))
    return Refuse(Syndrome::MKEY_UNSUPPORTED);

  const uint32_t mode =
      (prm::Get(in, mkc.access_mode_4_2) << 2) | prm::Get(in, mkc.access_mode_1_0);
  if (mode != prm::MKC_ACCESS_MODE_PA && mode != prm::MKC_ACCESS_MODE_MTT &&
      mode != prm::MKC_ACCESS_MODE_KLMS && mode != prm::MKC_ACCESS_MODE_SW_ICM &&
      mode != prm::MKC_ACCESS_MODE_MEMIC)
    return Refuse(Syndrome::MKEY_ACCESS_MODE);
  if (prm::Get(in, mkc.qpn) != prm::MLX5_MKEY_NO_QPN) return Refuse(Syndrome::MKEY_QPN);
  const bool free = prm::Get(in, mkc.free);
  if (free && !prm::Get(in, mkc.umr_en)) return Refuse(Syndrome::MKEY_FREE_WITHOUT_UMR);

  // TPH: only with mkey_pcie_tph; ph and the steering tag only when enabled.
  const uint32_t tph_en = prm::Get(in, mkc.pcie_tph_en);
  const uint32_t tph_ph = prm::Get(in, mkc.pcie_tph_ph);
  const uint32_t tph_st = prm::Get(in, mkc.pcie_tph_steering_tag_index);
  if ((tph_en || tph_ph || tph_st) && !config_.mkey_pcie_tph) return Refuse(Syndrome::MKEY_TPH);
  if (!tph_en && (tph_ph || tph_st)) return Refuse(Syndrome::MKEY_TPH);
  if (tph_st >= config_.pcie_tph_steering_tags) return Refuse(Syndrome::MKEY_TPH);

  // Length.
  const uint64_t len = prm::Get(in, mkc.len);
  const bool length64 = prm::Get(in, mkc.length64);
  if (length64 && (mode != prm::MKC_ACCESS_MODE_PA || len != 0))
    return Refuse(Syndrome::MKEY_LENGTH);
  if (config_.log_max_mrw_sz < 64 && len > (uint64_t{1} << config_.log_max_mrw_sz))
    return Refuse(Syndrome::MKEY_LENGTH);

  // Translations: the list follows the 272-byte header.
  const uint64_t octo_size = prm::Get(in, mkc.translations_octword_size);
  const uint64_t octo_actual = prm::Get(in, In::translations_octword_actual_size);
  const bool translated = mode == prm::MKC_ACCESS_MODE_MTT || mode == prm::MKC_ACCESS_MODE_KLMS;
  if (!translated && (octo_size != 0 || octo_actual != 0))
    return Refuse(Syndrome::MKEY_TRANSLATIONS);
  if (octo_actual > octo_size) return Refuse(Syndrome::MKEY_TRANSLATIONS);
  if (mode == prm::MKC_ACCESS_MODE_KLMS &&
      octo_size > (uint64_t{1} << config_.log_max_klm_list_size))
    return Refuse(Syndrome::MKEY_TRANSLATIONS);
  if (in.size() < prm::size_bytes<In> + octo_actual * kOctoword)
    return Refuse(Syndrome::INPUT_TOO_SHORT);
  Bytes list = in.subspan(prm::size_bytes<In>, octo_actual * kOctoword);

  Mkey m{};
  m.uid = uid;
  if (Outcome t = CheckMkeyTarget(in, list, mode, &m); !t.ok()) return t;

  // The PD: alive and owned by the same uid.
  const uint32_t pd = prm::Get(in, mkc.pd);
  auto pd_it = pds_.find(pd);
  if (pd_it == pds_.end()) return Refuse(Syndrome::MKEY_PD_UNKNOWN);
  if (pd_it->second.uid != uid) return Refuse(Syndrome::NOT_OWNER);

  auto idx = mkey_ids_.Allocate();
  if (!idx) return Refuse(Syndrome::MKEY_EXHAUSTED);

  m.pd = pd;
  std::memcpy(m.mkc.data(), in.data() + mkc.bit_offset / 8, m.mkc.size());
  m.translations.assign(list.begin(), list.end());
  // A window: binds and invalidations arrive by UMR (firmware_umr.cc).
  m.window = mode == prm::MKC_ACCESS_MODE_KLMS && free && prm::Get(in, mkc.umr_en);
  ++pd_it->second.mkeys;
  if (m.memic_start) ++memic_.at(*m.memic_start).mkeys;
  if (m.sw_icm_id) ++sw_icm_.at(*m.sw_icm_id).mkeys;
  for (uint32_t t : m.klm_targets) ++mkeys_.at(t).klm_refs;
  mkeys_.emplace(*idx, std::move(m));
  prm::Bits(out).set(prm::create_mkey_out::mkey_index, *idx);
  return Outcome::Ok();
}

void Firmware::ForgetMkey(uint32_t index) {
  auto it = mkeys_.find(index);
  Mkey& m = it->second;
  --pds_.at(m.pd).mkeys;
  if (m.memic_start) --memic_.at(*m.memic_start).mkeys;
  if (m.sw_icm_id) --sw_icm_.at(*m.sw_icm_id).mkeys;
  for (uint32_t t : m.klm_targets) --mkeys_.at(t).klm_refs;
  mkey_ids_.Free(index);
  mkeys_.erase(it);
}

Outcome Firmware::DestroyMkey(Bytes in, Out out) {
  using In = prm::destroy_mkey_in;
  if (Outcome s = CheckShape<In, prm::destroy_mkey_out>(in, out); !s.ok()) return s;
  if (prm::Get(in, In::op_mod) != 0) return Refuse(Syndrome::BAD_OP_MOD);
  auto it = mkeys_.find(prm::Get(in, In::mkey_index));
  if (it == mkeys_.end()) return Refuse(Syndrome::MKEY_UNKNOWN);
  if (it->second.uid != prm::Get(in, In::uid))
    return Refuse(Syndrome::NOT_OWNER);
  if (it->second.klm_refs != 0) return Refuse(Syndrome::MKEY_BUSY);
  ForgetMkey(it->first);
  return Outcome::Ok();
}

Outcome Firmware::QueryMkey(Bytes in, Out out) {
  using In = prm::query_mkey_in;
  using O = prm::query_mkey_out;
  uint16_t uid = 0;
  if (Outcome s = CheckShapeWithHeaderUid<In, O>(in, out, &uid); !s.ok()) return s;
  if (prm::Get(in, In::op_mod) != 0) return Refuse(Syndrome::BAD_OP_MOD);
  if (prm::Get(in, In::pg_access) != 0) return Refuse(Syndrome::MKEY_UNSUPPORTED);
  auto it = mkeys_.find(prm::Get(in, In::mkey_index));
  if (it == mkeys_.end()) return Refuse(Syndrome::MKEY_UNKNOWN);
  const Mkey& m = it->second;
  // uid 0 is the function's own (privileged) context and may look at any mkey.
  if (uid != 0 && m.uid != uid) return Refuse(Syndrome::NOT_OWNER);
  std::memcpy(out.data() + O::memory_key_mkey_entry.bit_offset / 8, m.mkc.data(), m.mkc.size());
  // The first two octowords of the translation list (bsf0_klm0_pas_mtt0_1, bsf1_klm1_pas_mtt2_3).
  const std::size_t n = std::min<std::size_t>(m.translations.size(), 2 * kOctoword);
  if (n) std::memcpy(out.data() + O::bsf0_klm0_pas_mtt0_1.bit_offset / 8, m.translations.data(), n);
  return Outcome::Ok();
}

std::optional<std::span<std::byte>> Firmware::MkeyDeviceMemory(uint32_t mkey, uint64_t offset,
                                                                uint64_t len) {
  std::lock_guard lock(mutex_);
  return DeviceMemoryLocked(mkey, offset, len, true);
}

std::optional<std::span<std::byte>> Firmware::DeviceMemoryLocked(uint32_t mkey, uint64_t offset,
                                                                  uint64_t len,
                                                                  bool through_window) {
  auto it = mkeys_.find(mkey >> 8);
  if (it == mkeys_.end()) return std::nullopt;
  return DeviceMemoryLocked(it->second, mkey, offset, len, through_window);
}

std::optional<std::span<std::byte>> Firmware::DeviceMemoryLocked(const Mkey& m, uint32_t mkey,
                                                                  uint64_t offset, uint64_t len,
                                                                  bool through_window) {
  Bytes mkc_bytes(m.mkc);
  if (prm::Get(mkc_bytes, prm::mkc::mkey_7_0) != (mkey & 0xff) || prm::Get(mkc_bytes, prm::mkc::free))
    return std::nullopt;
  const uint64_t start = prm::Get(mkc_bytes, prm::mkc::start_addr);
  const uint64_t size = prm::Get(mkc_bytes, prm::mkc::len);
  if (offset > size || len > size - offset) return std::nullopt;
  if (m.window) {
    // A bound window: its one KLM names the parent and the parent address of its start. The
    // parent is reached by index; its key byte is the one the KLM carried at bind time.
    if (!through_window || m.klm_targets.size() != 1) return std::nullopt;
    Bytes klm(m.translations);
    const uint32_t parent_key = prm::Get(klm, prm::mlx5_klm::key);
    const uint64_t address = prm::Get(klm, prm::mlx5_klm::va);
    Bytes pmkc(mkeys_.at(m.klm_targets[0]).mkc);
    const uint64_t pstart = prm::Get(pmkc, prm::mkc::start_addr);
    return DeviceMemoryLocked(parent_key, address - pstart + offset, len, false);
  }
  return DeviceMemoryAt(m, start, offset, len);
}

std::optional<std::span<std::byte>> Firmware::DeviceMemoryAt(const Mkey& m, uint64_t start,
                                                              uint64_t offset, uint64_t len) {
  if (m.memic_start)
    return memic_window_.subspan(start + offset - layout_.memic_start, len);
  if (m.sw_icm_id) {
    SwIcmObject& o = sw_icm_.at(*m.sw_icm_id);
    return std::span<std::byte>(o.backing).subspan(start + offset - o.start, len);
  }
  return std::nullopt;
}

std::optional<uint64_t> Firmware::MttTranslateLocked(uint32_t mkey, uint64_t va, uint64_t len,
                                                     uint64_t* page_bytes) const {
  auto it = mkeys_.find(mkey >> 8);
  if (it == mkeys_.end()) return std::nullopt;
  return MttTranslateLocked(it->second, mkey, va, len, page_bytes);
}

std::optional<uint64_t> Firmware::MttTranslateLocked(const Mkey& m, uint32_t mkey, uint64_t va,
                                                     uint64_t len, uint64_t* page_bytes) const {
  Bytes mkc_bytes(m.mkc);
  if (prm::Get(mkc_bytes, prm::mkc::mkey_7_0) != (mkey & 0xff) ||
      prm::Get(mkc_bytes, prm::mkc::free))
    return std::nullopt;
  const uint64_t start = prm::Get(mkc_bytes, prm::mkc::start_addr);
  const uint64_t size = prm::Get(mkc_bytes, prm::mkc::len);
  if (va < start || va - start > size || len > size - (va - start)) return std::nullopt;
  if (m.window) {
    // A bound window: its one KLM names the parent (by the key it carried at bind time) and the
    // parent address of the window's start; the parent's MTT translates.
    if (m.klm_targets.size() != 1) return std::nullopt;
    Bytes klm(m.translations);
    const uint32_t parent_key = prm::Get(klm, prm::Element<32>{32, "klm.key"});
    const uint64_t address = prm::Get(klm, prm::Element<64>{64, "klm.address"});
    if (mkeys_.at(m.klm_targets[0]).window) return std::nullopt;
    return MttTranslateLocked(parent_key, address + (va - start), len, page_bytes);
  }
  const uint32_t mode = static_cast<uint32_t>(prm::Get(mkc_bytes, prm::mkc::access_mode_1_0) |
                                              (prm::Get(mkc_bytes, prm::mkc::access_mode_4_2) << 2));
  if (mode != prm::MKC_ACCESS_MODE_MTT) return std::nullopt;
  return MttLookup(m, start, static_cast<uint32_t>(prm::Get(mkc_bytes, prm::mkc::log_page_size)),
                   va, page_bytes);
}

std::optional<uint64_t> Firmware::MttLookup(const Mkey& m, uint64_t start, uint32_t log_page_size,
                                            uint64_t va, uint64_t* page_bytes) {
  const uint64_t ps = uint64_t{1} << log_page_size;
  // Entry 0 covers the page that holds start_addr; the offset inside a page is kept.
  const uint64_t index = (va >> log_page_size) - (start >> log_page_size);
  if ((index + 1) * 8 > m.translations.size()) return std::nullopt;
  // An MTT entry is one big-endian 64-bit word (mlx5_mtt.ptag), inside the table by the check
  // above: read as the word it is, without the general accessor's second bounds check.
  prm::Be64 entry;
  std::memcpy(&entry, m.translations.data() + index * 8, sizeof entry);
  if (page_bytes != nullptr) *page_bytes = ps;
  return (entry.host() & ~uint64_t{3}) + (va & (ps - 1));
}

template <typename F>
bool Firmware::ForEachMttPiece(uint32_t mkey, uint64_t va, uint64_t len, F f) const {
  uint64_t done = 0;
  do {
    uint64_t ps = 0;
    auto bus = MttTranslateLocked(mkey, va + done, len - done, &ps);
    if (!bus) return false;
    const uint64_t piece = std::min(len - done, ps - ((va + done) & (ps - 1)));
    if (!f(*bus, done, piece)) return false;
    done += piece;
  } while (done < len);
  return true;
}

std::optional<uint64_t> Firmware::MkeyBusAddress(uint32_t mkey, uint64_t va) const {
  std::lock_guard lock(mutex_);
  return MttTranslateLocked(mkey, va, 1, nullptr);
}

bool Firmware::WriteMkeyHost(uint32_t mkey, uint64_t va, std::span<const std::byte> data) {
  std::lock_guard lock(mutex_);
  return ForEachMttPiece(mkey, va, data.size(), [&](uint64_t bus, uint64_t off, uint64_t n) {
    return iommu_.Write(bus, data.subspan(off, n));
  });
}

bool Firmware::ReadMkeyHost(uint32_t mkey, uint64_t va, std::span<std::byte> out) const {
  std::lock_guard lock(mutex_);
  return ForEachMttPiece(mkey, va, out.size(), [&](uint64_t bus, uint64_t off, uint64_t n) {
    return iommu_.Read(bus, out.subspan(off, n));
  });
}

std::optional<Firmware::TphHint> Firmware::MkeyTph(uint32_t mkey) const {
  std::lock_guard lock(mutex_);
  auto it = mkeys_.find(mkey >> 8);
  if (it == mkeys_.end()) return std::nullopt;
  Bytes mkc_bytes(it->second.mkc);
  if (prm::Get(mkc_bytes, prm::mkc::mkey_7_0) != (mkey & 0xff) ||
      !prm::Get(mkc_bytes, prm::mkc::pcie_tph_en))
    return std::nullopt;
  TphHint h;
  h.ph = static_cast<uint8_t>(prm::Get(mkc_bytes, prm::mkc::pcie_tph_ph));
  const uint16_t index = static_cast<uint16_t>(prm::Get(mkc_bytes, prm::mkc::pcie_tph_steering_tag_index));
  // CREATE_MKEY admits indices below the table size only; the table is read now, so a tag the
  // driver reprogrammed since the mkey was made is the one used.
  if (index != kNoSteeringTagIndex) h.steering_tag = steering_tags_.Tag(index);
  return h;
}

}  // namespace onchip::sim
