#include "driver/mr.h"

#include <cerrno>
#include <cstdint>

#include "alloc/mapping.h"
#include "driver/cmd/owner_channel.h"
#include "driver/cmd/run.h"
#include "driver/dmah.h"
#include "driver/mkey.h"
#include "uapi/prm/mkey.h"

namespace onchip::driver {
namespace {

// rdma-core's IBV_MR_TYPE_MR (driver.h, not installed).
constexpr int kMrTypeMr = 0;

// libibverbs' IBV_REREG_MR_FLAGS_SUPPORTED, the kernel's IB_MR_REREG_SUPPORTED.
constexpr int kReregMrFlags =
    IBV_REREG_MR_CHANGE_TRANSLATION | IBV_REREG_MR_CHANGE_PD | IBV_REREG_MR_CHANGE_ACCESS;

// rdma-core MLX5_DM_ALLOWED_ACCESS.
constexpr unsigned kDmAllowedAccess = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                                      IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC |
                                      IBV_ACCESS_ZERO_BASED | IBV_ACCESS_OPTIONAL_RANGE;
// The kernel's IB_ACCESS_SUPPORTED for user MRs (optional bits are accepted and ignored).
constexpr unsigned kHostAllowedAccess =
    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
    IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_MW_BIND | IBV_ACCESS_ZERO_BASED |
    IBV_ACCESS_ON_DEMAND | IBV_ACCESS_HUGETLB | IBV_ACCESS_OPTIONAL_RANGE;

// MTT entry sizes: 4 KiB always works; 2 MiB when the memory is on 2 MiB pages.
constexpr uint32_t kLogSmallPage = 12;
constexpr uint32_t kLogLargePage = 21;
constexpr uint64_t kLargePage = uint64_t{1} << kLogLargePage;

// The largest MTT page the memory allows: 2 MiB when the range is at least one such page, sits on
// 2 MiB kernel pages (hugetlb) and the mkey's addresses (iova) agree with the host addresses
// modulo 2 MiB (the bus maps at an IOVA with the host's 2 MiB phase, so device addresses then
// agree too); else 4 KiB. Smaller ranges skip the smaps walk: one large entry would save little
// and expose the rest of the hugepage to the device.
uint32_t LogMttPageSize(uintptr_t start, size_t length, uint64_t iova) {
  if (length < kLargePage || ((start ^ iova) & (kLargePage - 1)) != 0) return kLogSmallPage;
  auto page = alloc::KernelPageSize(reinterpret_cast<const void*>(start), length);
  return page && *page == kLargePage ? kLogLargePage : kLogSmallPage;
}

// ib_check_mr_access, which the kernel applies to host and device-memory MRs alike: remote write
// or atomic access needs local write.
constexpr bool RemoteWithoutLocalWrite(unsigned access) {
  return (access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) &&
         !(access & IBV_ACCESS_LOCAL_WRITE);
}

using C = prm::create_mkey_in;
constexpr auto kMkc = C::memory_key_mkey_entry;

// The fields every MR's mkey shares: access bits, PD, key variant, no QP.
void SetCommon(prm::Message<C>& in, uint32_t access_mode, unsigned access, uint32_t pdn,
               uint8_t variant, uint64_t start, uint64_t length) {
  SetAccessModeNoQp(in, access_mode);
  in.set(C::opcode, prm::CREATE_MKEY)
      .set(kMkc.a, (access & IBV_ACCESS_REMOTE_ATOMIC) ? 1 : 0)
      .set(kMkc.rw, (access & IBV_ACCESS_REMOTE_WRITE) ? 1 : 0)
      .set(kMkc.rr, (access & IBV_ACCESS_REMOTE_READ) ? 1 : 0)
      .set(kMkc.lw, (access & IBV_ACCESS_LOCAL_WRITE) ? 1 : 0)
      .set(kMkc.lr, 1)
      .set(kMkc.mkey_7_0, variant)
      .set(kMkc.pd, pdn)
      .set(kMkc.start_addr, start)
      .set(kMkc.len, length);
}

// A key CREATE_MKEY made: mkey = index << 8 | variant.
struct Key {
  uint32_t index = 0;
  uint8_t variant = 0;
  uint32_t value() const { return (index << 8) | variant; }
};

Result<Key> CreateKey(Device& device, prm::Message<C>& in, uint8_t variant) {
  ONCHIP_TRY(auto out, cmd::Run<prm::create_mkey_out>(device.commander(), in));
  return Key{out.get(prm::create_mkey_out::mkey_index), variant};
}

// Builds the Mr around a new key (the caller publishes it).
Mr* NewMr(Pd* pd, Key key, unsigned access) {
  auto* mr = new Mr{};
  mr->mr_type = kMrTypeMr;
  mr->access = static_cast<int>(access);
  mr->pd = pd;
  mr->mkey_index = key.index;
  mr->ibv.context = pd->ibv.context;
  mr->ibv.pd = &pd->ibv;
  mr->ibv.handle = key.index;
  mr->ibv.lkey = mr->ibv.rkey = key.value();
  return mr;
}

// ib_check_mr_access for host memory, as registration and re-registration both apply it.
Result<void> CheckHostAccess(unsigned access) {
  if (access & ~kHostAllowedAccess) return Fail(EINVAL, "unknown access flag");
  if (RemoteWithoutLocalWrite(access))
    return Fail(EINVAL, "remote write or atomic needs local write");
  if (access & IBV_ACCESS_ON_DEMAND) return Fail(EOPNOTSUPP, "no on-demand paging");
  return {};
}

// The pages under [start, start + length) mapped for the device as one IOVA range, in MTT pages
// of 1 << log_page bytes.
struct HostPages {
  bus::DmaMapping mapping;
  uint32_t log_page = 0;
};

Result<HostPages> MapHostRange(Device& device, uintptr_t start, size_t length, uint64_t iova) {
  const uint32_t log_page = LogMttPageSize(start, length, iova);
  const uint64_t page = uint64_t{1} << log_page;
  const uintptr_t first = start & ~(page - 1);
  const uint64_t span = ((start + length + page - 1) & ~(page - 1)) - first;
  ONCHIP_TRY(bus::DmaMapping mapping,
             device.bus().MapHost(reinterpret_cast<std::byte*>(first), span));
  return HostPages{std::move(mapping), log_page};
}

// CREATE_MKEY of an MTT key over `pages` addressed from `iova` (a ticket held by the caller).
Result<Key> CreateHostKey(Device& device, const bus::DmaMapping& mapping, uint32_t log_page,
                          uint32_t pdn, unsigned access, uint64_t iova, uint64_t length,
                          const Dmah* dmah) {
  const uint64_t page = uint64_t{1} << log_page;
  const uint64_t npages = mapping.length() / page;
  const uint8_t variant = device.NextMkeyVariant();
  const uint64_t octowords = (npages + 1) / 2;
  prm::Message<C> in(octowords * 16);
  SetCommon(in, prm::MKC_ACCESS_MODE_MTT, access, pdn, variant, iova, length);
  // As mlx5_ib: every host MR may be changed by a UMR (re-registration in place).
  in.set(kMkc.umr_en, 1)
      .set(kMkc.log_page_size, log_page)
      .set(kMkc.translations_octword_size, octowords)
      .set(C::translations_octword_actual_size, octowords);
  if (dmah != nullptr) {
    in.set(kMkc.pcie_tph_en, 1)
        .set(kMkc.pcie_tph_ph, dmah->ph)
        .set(kMkc.pcie_tph_steering_tag_index, dmah->st_index);
  }
  for (uint64_t i = 0; i < npages; ++i) {
    const prm::Element<64> mtt{C::klm_pas_mtt.bit_offset + i * 64, C::klm_pas_mtt.name};
    in.set(mtt, mapping.iova() + i * page);
  }
  return CreateKey(device, in, variant);
}

// A re-registration's PD change, once the device has it: the MR's pin moves to the new PD.
void MovePd(Mr& mr, Pd* new_pd, ParentPins& pins) {
  pins.Keep();
  mr.pd->life.Unpin();
  mr.pd = new_pd;
  mr.ibv.pd = &new_pd->ibv;
  mr.ibv.context = new_pd->ibv.context;
}

void Publish(Device& device, const Registry::Operation& op, Mr* mr) {
  device.registry().Publish<ObjectKind::kMr>(op, mr, mr->life);
}

}  // namespace

Result<Mr*> RegDmMr(Pd* pd, Dm* dm, uint64_t offset, size_t length, unsigned int access) {
  if (pd == nullptr || dm == nullptr) return Fail(EINVAL, "reg_dm_mr: null PD or DM");
  dm = &dm->owner();  // an imported DM registers its original's memory
  if (access & ~kDmAllowedAccess) return Fail(EINVAL, "reg_dm_mr: access flag not allowed on DM");
  if (!(access & IBV_ACCESS_ZERO_BASED)) return Fail(EINVAL, "reg_dm_mr: IBV_ACCESS_ZERO_BASED required");
  // The kernel checks DM MRs with the same access rule as host MRs, right after ZERO_BASED.
  if (RemoteWithoutLocalWrite(access))
    return Fail(EINVAL, "reg_dm_mr: remote write or atomic needs local write");
  if (offset > dm->length || length > dm->length || length > dm->length - offset)
    return Fail(EINVAL, "reg_dm_mr: range outside the device memory");
  const bool memic = dm->type == MLX5DV_DM_TYPE_MEMIC;
  if (!memic && (access & IBV_ACCESS_REMOTE_ATOMIC))
    return Fail(EINVAL, "reg_dm_mr: no atomics on SW ICM");
  if (pd->device != dm->device) return Fail(EINVAL, "reg_dm_mr: PD and DM on different devices");
  Device& device = *dm->device;

  ONCHIP_TRY(auto op, device.registry().Begin("reg_dm_mr: device closed"));
  ParentPins pins;
  if (!pins.Take(pd->life) || !pins.Take(dm->life))
    return Fail(EBUSY, "reg_dm_mr: its PD or DM is being freed");
  const uint8_t variant = device.NextMkeyVariant();
  const uint64_t start = (memic ? dm->memic.bar_offset : dm->icm.icm_address) + offset;
  prm::Message<C> in;
  SetCommon(in, memic ? prm::MKC_ACCESS_MODE_MEMIC : prm::MKC_ACCESS_MODE_SW_ICM, access,
            pd->protection().pdn, variant, start, length);
  ONCHIP_TRY(Key key, CreateKey(device, in, variant));
  Mr* mr = NewMr(pd, key, access);
  mr->device = dm->device;
  mr->dm = dm;
  mr->ibv.addr = nullptr;  // zero-based: work requests address the MR by offset
  mr->ibv.length = length;
  pins.Keep();
  Publish(device, op, mr);
  return mr;
}

Result<Mr*> RegMr(Pd* pd, void* addr, size_t length, uint64_t iova, unsigned int access,
                  Dmah* dmah) {
  if (pd == nullptr) return Fail(EINVAL, "reg_mr: null PD");
  ONCHIP_CHECK(CheckHostAccess(access));
  const auto start = reinterpret_cast<uintptr_t>(addr);
  if (length == 0 || start + length < start || iova + length < iova)
    return Fail(EINVAL, "reg_mr: empty or wrapping range");
  if ((start ^ iova) & (bus::kPageSize - 1))
    return Fail(EINVAL, "reg_mr: iova and addr differ inside their page");
  if (dmah != nullptr && dmah->device != pd->device)
    return Fail(EINVAL, "reg_mr: DMA handle of another device");
  Device& device = *pd->device;

  ONCHIP_TRY(HostPages pages, MapHostRange(device, start, length, iova));
  ONCHIP_TRY(auto op, device.registry().Begin("reg_mr: device closed"));
  ParentPins pins;
  if (!pins.Take(pd->life) || (dmah && !pins.Take(dmah->life)))
    return Fail(EBUSY, "reg_mr: its PD or DMA handle is being freed");
  ONCHIP_TRY(Key key, CreateHostKey(device, pages.mapping, pages.log_page, pd->protection().pdn,
                                    access, iova, length, dmah));
  Mr* mr = NewMr(pd, key, access);
  mr->device = pd->device;
  mr->dmah = dmah;
  mr->mapping = std::move(pages.mapping);
  mr->log_page_size = pages.log_page;
  mr->iova = iova;
  mr->ibv.addr = addr;
  mr->ibv.length = length;
  pins.Keep();
  Publish(device, op, mr);
  return mr;
}

Result<void> ReregMr(Mr* mr, int flags, Pd* pd, void* addr, size_t length, unsigned int access) {
  // The uverbs checks first, in the kernel's order, then the driver's.
  if (mr == nullptr) return Fail(EINVAL, "rereg_mr: null MR");
  if (flags == 0 || (flags & ~kReregMrFlags)) return Fail(EINVAL, "rereg_mr: no or unknown flags");
  if (mr->dm != nullptr) return Fail(EINVAL, "rereg_mr: a device-memory MR");
  if (mr->imported_from != nullptr)
    return Fail(EOPNOTSUPP, "rereg_mr: an imported MR (rereg the original)");
  const bool change_translation = flags & IBV_REREG_MR_CHANGE_TRANSLATION;
  const bool change_pd = flags & IBV_REREG_MR_CHANGE_PD;
  const bool change_access = flags & IBV_REREG_MR_CHANGE_ACCESS;
  if (change_access) {
    if (auto checked = CheckHostAccess(access); !checked)
      return Fail(checked.error().errno_value(), "rereg_mr: access refused");
  }
  if (change_pd && (pd == nullptr || pd->device != mr->device))
    return Fail(EINVAL, "rereg_mr: no PD of this device");
  const auto start = reinterpret_cast<uintptr_t>(addr);
  if (change_translation && (length == 0 || start + length < start))
    return Fail(EINVAL, "rereg_mr: empty or wrapping range");

  Pd* const new_pd = change_pd ? pd : mr->pd;
  const unsigned new_access = change_access ? access : static_cast<unsigned>(mr->access);
  // A new translation is addressed by its own address (the iova libibverbs passes is addr);
  // otherwise the MR keeps its pages and iova.
  const uint64_t new_iova = change_translation ? start : mr->iova;
  const uint64_t new_length = change_translation ? length : mr->ibv.length;
  Device& device = *mr->device;

  HostPages pages;
  if (change_translation) {
    ONCHIP_TRY(pages, MapHostRange(device, start, length, new_iova));
  }
  ONCHIP_TRY(auto op, device.registry().Begin("rereg_mr: device closed"));
  if (!mr->life.usable()) {
    if (mr->life.released()) return Fail(EIO, "rereg_mr: device closed");
    return Fail(EBUSY, "rereg_mr: being deregistered");
  }
  ParentPins pins;
  if (change_pd && !pins.Take(new_pd->life))
    return Fail(EBUSY, "rereg_mr: the new PD is being freed");

  // Access and PD alone change in place, as mlx5_ib does with a UMR: the keys stay, so a peer
  // holding the rkey keeps reaching the MR (on an attached function the owner runs the UMR). A
  // zero-based switch moves start_addr, which a UMR here does not do; that, a new translation,
  // or no way to run a UMR (EOPNOTSUPP) re-creates the key below.
  const bool same_base = ((new_access ^ static_cast<unsigned>(mr->access)) & IBV_ACCESS_ZERO_BASED) == 0;
  if (!change_translation && same_base) {
    cmd::MkeyUpdate update;
    if (change_pd) update.pdn = new_pd->protection().pdn;
    if (change_access) update.access = new_access;
    auto updated = device.UpdateMkeyInPlace(mr->ibv.lkey, update);
    if (updated) {
      if (change_pd) MovePd(*mr, new_pd, pins);
      mr->access = static_cast<int>(new_access);
      return {};
    }
    if (updated.error().errno_value() != EOPNOTSUPP) return std::unexpected(updated.error());
  }
  const bus::DmaMapping& mapping = change_translation ? pages.mapping : mr->mapping;
  const uint32_t log_page = change_translation ? pages.log_page : mr->log_page_size;
  // The new key first: any failure up to its creation leaves the MR as it was.
  ONCHIP_TRY(Key key, CreateHostKey(device, mapping, log_page, new_pd->protection().pdn,
                                    new_access, new_iova, new_length, mr->dmah));
  DeviceObject new_key = MkeyOnDevice(device.commander(), key.index);
  // The device refusing to let the old key go (a window is bound to it) gives the new one back
  // instead and leaves the MR as it was. A refused cleanup would leak only the spare key.
  if (auto destroyed = DestroyMkey(device.commander(), mr->mkey_index); !destroyed)
    return Fail(destroyed.error().errno_value(), "rereg_mr: the old key is still in use");
  new_key.Commit();
  // The old key is gone: the MR is the new registration from here on.
  if (change_pd) MovePd(*mr, new_pd, pins);
  if (change_translation) {
    // Nothing names the old pages any more (see ReleaseMrOnDevice for why this cannot matter).
    (void)mr->mapping.Reset();
    mr->mapping = std::move(pages.mapping);
    mr->log_page_size = pages.log_page;
    mr->iova = new_iova;
    mr->ibv.addr = addr;
    mr->ibv.length = length;
  }
  mr->access = static_cast<int>(new_access);
  mr->mkey_index = key.index;
  mr->ibv.lkey = mr->ibv.rkey = key.value();
  return {};
}

Result<void> ReleaseMrOnDevice(Mr& mr, Release why) {
  // A failed DESTROY_MKEY (a window still bound to it) leaves the MR registered, pins and pages,
  // unless the whole function is going down.
  auto destroyed = DestroyMkey(mr.device->commander(), mr.mkey_index);
  if (!destroyed && why == Release::kDestroy) return destroyed;
  if (mr.dm) mr.dm->life.Unpin();
  if (mr.dmah) mr.dmah->life.Unpin();
  mr.pd->life.Unpin();
  // The key is gone, so nothing on the device names the pages any more. Unmapping a range this
  // MR mapped itself fails only if the bus already dropped it; the MR is released either way.
  (void)mr.mapping.Reset();
  return destroyed;
}

Result<void> DeregMr(Mr* mr) {
  if (mr == nullptr) return Fail(EINVAL, "dereg_mr: null");
  if (mr->free_face != nullptr) return mr->free_face(mr);  // this context's face only
  return Destroy<ObjectKind::kMr>(mr->device->registry(), mr, mr->life, "dereg_mr: still in use");
}

Result<void> KindTraits<ObjectKind::kMr>::ReleaseOnDevice(Mr& object, Release why) {
  return ReleaseMrOnDevice(object, why);
}

}  // namespace onchip::driver
