// Keys on the data path: which lkey or rkey admits an access, and the bytes behind it.
//
// An access names a key, a virtual address, a length and the rights it needs. The key must be
// live, carry the current key byte, not be free, belong to the QP's PD and grant the rights
// (mkc lr/lw/rr/rw/a); the range must lie inside it. Memory windows are for remote access only
// and a type-2 window (en_rinval) admits only the QP it is bound to. Host MRs (MTT) address
// from mkc.start_addr; device-memory MRs (MEMIC, SW ICM) are registered zero-based by verbs, so
// their addresses are offsets from 0. A bound window reaches its parent's memory.
#include <atomic>
#include <bit>
#include <cstring>

#include "tools/sim/engine.h"
#include "uapi/prm/caps.h"
#include "uapi/prm/mkey.h"
#include "uapi/prm/opcodes.h"

namespace onchip::sim {

namespace {

using Bytes = std::span<const std::byte>;

bool InRange(uint64_t start, uint64_t size, uint64_t va, uint64_t len) {
  return va >= start && va - start <= size && len <= size - (va - start);
}

}  // namespace

std::optional<Engine::AdmittedKey> Engine::Admit(uint32_t key, uint64_t va, uint64_t len,
                                                 uint8_t rights, uint32_t pd, uint32_t qpn) const {
  const Mkey* found = ctx_.FindMkey(key >> 8);
  if (found == nullptr) return std::nullopt;
  const Mkey& m = *found;
  Bytes mkc(m.mkc);
  if (prm::Get(mkc, prm::mkc::mkey_7_0) != (key & 0xff) || prm::Get(mkc, prm::mkc::free))
    return std::nullopt;
  if (m.pd != pd) return std::nullopt;
  if ((rights & kLocalRead) && !prm::Get(mkc, prm::mkc::lr)) return std::nullopt;
  if ((rights & kLocalWrite) && !prm::Get(mkc, prm::mkc::lw)) return std::nullopt;
  if ((rights & kRemoteRead) && !prm::Get(mkc, prm::mkc::rr)) return std::nullopt;
  if ((rights & kRemoteWrite) && !prm::Get(mkc, prm::mkc::rw)) return std::nullopt;
  if ((rights & kRemoteAtomic) && !prm::Get(mkc, prm::mkc::a)) return std::nullopt;
  const uint64_t start = prm::Get(mkc, prm::mkc::start_addr);
  const uint64_t size = prm::Get(mkc, prm::mkc::len);
  if (m.window) {
    const bool remote = (rights & (kRemoteRead | kRemoteWrite | kRemoteAtomic)) != 0;
    if (!remote || (rights & (kLocalRead | kLocalWrite))) return std::nullopt;
    if (prm::Get(mkc, prm::mkc::en_rinval) && prm::Get(mkc, prm::mkc::qpn) != qpn)
      return std::nullopt;
    if (m.klm_targets.size() != 1 || !InRange(start, size, va, len)) return std::nullopt;
    // A bound window reaches its parent's memory.
    const Mkey* parent = ctx_.FindMkey(m.klm_targets[0]);
    if (parent == nullptr) return std::nullopt;
    return AdmittedKey{.key = key, .mkey = &m, .target = parent};
  }
  if (m.memic_start || m.sw_icm_id) {
    if (!InRange(0, size, va, len)) return std::nullopt;
    return AdmittedKey{.key = key, .mkey = &m, .target = &m, .start = start};
  }
  const uint32_t mode = static_cast<uint32_t>(prm::Get(mkc, prm::mkc::access_mode_1_0) |
                                              (prm::Get(mkc, prm::mkc::access_mode_4_2) << 2));
  if (mode != prm::MKC_ACCESS_MODE_MTT || !InRange(start, size, va, len)) return std::nullopt;
  return AdmittedKey{.key = key,
                     .mkey = &m,
                     .target = &m,
                     .start = start,
                     .log_page_size = static_cast<uint32_t>(prm::Get(mkc, prm::mkc::log_page_size))};
}

std::optional<std::span<std::byte>> Engine::DeviceBytes(const AdmittedKey& k, uint64_t va,
                                                        uint64_t len) {
  // Device memory is registered zero-based: Admit checked [va, va + len) against the key, so the
  // bytes are at va from its start. A window over it addresses from its own start and reaches
  // its parent's bytes through the firmware's checks.
  if (!k.mkey->window) return mkeys_.DeviceMemoryAt(*k.mkey, k.start, va, len);
  const uint64_t off = va - prm::Get(Bytes(k.mkey->mkc), prm::mkc::start_addr);
  return mkeys_.DeviceMemoryLocked(*k.mkey, k.key, off, len, true);
}

bool Engine::CopyFromKey(const AdmittedKey& k, uint64_t va, std::span<std::byte> out) {
  if (out.empty()) return true;
  if (k.in_device_memory()) {
    auto dm = DeviceBytes(k, va, out.size());
    if (!dm) return false;
    std::memcpy(out.data(), dm->data(), out.size());
    return true;
  }
  std::optional<Iommu::Access> own;
  const Iommu::Access& access = PassWindow(own);
  uint64_t done = 0;
  while (done < out.size()) {
    uint64_t page = 0;
    auto bus = KeyBusAddress(k, va + done, out.size() - done, &page);
    if (!bus) return false;
    const uint64_t n = std::min<uint64_t>(out.size() - done, page - ((va + done) & (page - 1)));
    if (!access.Read(*bus, out.subspan(done, n))) return false;
    done += n;
  }
  return true;
}

bool Engine::AppendFromKey(const AdmittedKey& k, uint64_t va, uint64_t len,
                           std::vector<std::byte>& out, Iommu::CachedTranslation* page_cache) {
  if (len == 0) return true;
  if (k.in_device_memory()) {
    auto dm = DeviceBytes(k, va, len);
    if (!dm) return false;
    out.insert(out.end(), dm->begin(), dm->end());
    return true;
  }
  std::optional<Iommu::Access> own;
  const Iommu::Access& access = PassWindow(own);
  // A range inside one page of pointer memory is one lookup and one copy (a small message).
  uint64_t first_page = 0;
  const auto first = KeyBusAddress(k, va, len, &first_page);
  if (!first) return false;
  if (len <= first_page - (va & (first_page - 1))) {
    // The whole page through the cache when it lies in one pointer mapping; the range alone
    // otherwise (the same bytes: mappings never overlap).
    const uint64_t in_page = *first & (first_page - 1);
    const std::byte* host = QueuePage(*first - in_page, first_page, page_cache);
    if (host != nullptr)
      host += in_page;
    else
      host = access.Translate(*first, len);
    if (host != nullptr) {
      out.insert(out.end(), host, host + len);
      return true;
    }
  }
  // Every page first: `out` grows only for a range wholly behind live mappings.
  auto each_page = [&](auto&& f) {
    for (uint64_t done = 0; done < len;) {
      uint64_t page = 0;
      auto bus = KeyBusAddress(k, va + done, len - done, &page);
      if (!bus) return false;
      const uint64_t n = std::min<uint64_t>(len - done, page - ((va + done) & (page - 1)));
      if (!f(*bus, n)) return false;
      done += n;
    }
    return true;
  };
  if (!each_page([&](uint64_t bus, uint64_t n) { return access.Mapped(bus, n); })) return false;
  const std::size_t at = out.size();
  out.reserve(at + len);
  if (each_page([&](uint64_t bus, uint64_t n) { return access.Append(bus, n, out); })) return true;
  out.resize(at);
  return false;
}

bool Engine::CopyToKey(const AdmittedKey& k, uint64_t va, std::span<const std::byte> in) {
  if (in.empty()) return true;
  if (k.in_device_memory()) {
    auto dm = DeviceBytes(k, va, in.size());
    if (!dm) return false;
    std::memcpy(dm->data(), in.data(), in.size());
    return true;
  }
  std::optional<Iommu::Access> own;
  const Iommu::Access& access = PassWindow(own);
  uint64_t done = 0;
  while (done < in.size()) {
    uint64_t page = 0;
    auto bus = KeyBusAddress(k, va + done, in.size() - done, &page);
    if (!bus) return false;
    const uint64_t n = std::min<uint64_t>(in.size() - done, page - ((va + done) & (page - 1)));
    if (!access.Write(*bus, in.subspan(done, n))) return false;
    done += n;
  }
  return true;
}

bool Engine::AtomicsBigEndian() const {
  return prm::Get(std::span<const std::byte>(ctx_.caps().Page(prm::CAP_ATOMIC, true)),
                  prm::atomic_caps::atomic_req_8B_endianness_mode) == 0;
}

std::optional<uint64_t> Engine::AtomicAtKey(const AdmittedKey& k, uint64_t va, bool compare_swap,
                                            uint64_t swap_add, uint64_t compare, bool big_endian) {
  if (va % 8 != 0) return std::nullopt;
  // Memory holds the word in `order`; the operands and the result are numbers.
  auto to_memory = [big_endian](uint64_t v) {
    return big_endian && std::endian::native == std::endian::little ? std::byteswap(v) : v;
  };
  // The word's next value from the one found in memory; a compare that does not match leaves it.
  auto next = [&](uint64_t in_memory) -> uint64_t {
    const uint64_t found = to_memory(in_memory);
    if (compare_swap) return found == compare ? to_memory(swap_add) : in_memory;
    return to_memory(found + swap_add);
  };
  std::optional<uint64_t> found;
  if (k.in_device_memory()) {
    auto dm = DeviceBytes(k, va, 8);
    if (!dm) return std::nullopt;
    found = Iommu::UpdateWord64(dm->data(), next);
  } else {
    auto bus = KeyBusAddress(k, va, 8, nullptr);
    if (!bus) return std::nullopt;
    found = Iommu::Access(iommu_).Update64(*bus, next);
  }
  if (!found) return std::nullopt;
  return to_memory(*found);  // the value found, whether or not a compare matched
}

bool Engine::RemoteInvalidate(uint32_t rkey, uint32_t pd, uint32_t qpn) {
  const Mkey* found = ctx_.FindMkey(rkey >> 8);
  if (found == nullptr) return false;
  const Mkey& m = *found;
  const Bytes mkc(m.mkc);
  // Only a type-2 window bound to this QP, in its PD, carrying this key byte, may be
  // invalidated by a remote peer.
  if (!m.window || !prm::Get(mkc, prm::mkc::en_rinval) || prm::Get(mkc, prm::mkc::free) ||
      prm::Get(mkc, prm::mkc::mkey_7_0) != (rkey & 0xff) || m.pd != pd ||
      prm::Get(mkc, prm::mkc::qpn) != qpn)
    return false;
  ctx_.RemoteInvalidate(rkey >> 8);
  return true;
}

}  // namespace onchip::sim
