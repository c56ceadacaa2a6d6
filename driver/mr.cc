#include "driver/mr.h"

#include <cerrno>
#include <cstdint>

#include "alloc/mapping.h"
#include "driver/cmd/run.h"
#include "driver/dmah.h"
#include "driver/mkey.h"
#include "uapi/prm/mkey.h"

namespace onchip::driver {
namespace {

// rdma-core's IBV_MR_TYPE_MR (driver.h, not installed).
constexpr int kMrTypeMr = 0;

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

// Runs CREATE_MKEY and builds the Mr around the new key (registry lock held by the caller).
Result<Mr*> Create(Device& device, prm::Message<C>& in, uint8_t variant, Pd* pd, unsigned access) {
  ONCHIP_TRY(auto out, cmd::Run<prm::create_mkey_out>(device.commander(), in));
  auto* mr = new Mr{};
  mr->mr_type = kMrTypeMr;
  mr->access = static_cast<int>(access);
  mr->pd = pd;
  mr->mkey_index = out.get(prm::create_mkey_out::mkey_index);
  mr->ibv.context = pd->ibv.context;
  mr->ibv.pd = &pd->ibv;
  mr->ibv.handle = mr->mkey_index;
  mr->ibv.lkey = mr->ibv.rkey = (mr->mkey_index << 8) | variant;
  return mr;
}

void Publish(Device& device, const Registry::Operation& op, Mr* mr) {
  device.registry().Publish(op, ObjectKind::kMr, mr, mr->life, [](void* p) {
    return ReleaseMrOnDevice(*static_cast<Mr*>(p));
  });
}

}  // namespace

Result<Mr*> RegDmMr(Pd* pd, Dm* dm, uint64_t offset, size_t length, unsigned int access) {
  if (pd == nullptr || dm == nullptr) return Fail(EINVAL, "reg_dm_mr: null PD or DM");
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
  ONCHIP_TRY(Mr* mr, Create(device, in, variant, pd, access));
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
  if (access & ~kHostAllowedAccess) return Fail(EINVAL, "reg_mr: unknown access flag");
  if (RemoteWithoutLocalWrite(access))
    return Fail(EINVAL, "reg_mr: remote write or atomic needs local write");
  if (access & IBV_ACCESS_ON_DEMAND) return Fail(EOPNOTSUPP, "reg_mr: no on-demand paging");
  const auto start = reinterpret_cast<uintptr_t>(addr);
  if (length == 0 || start + length < start || iova + length < iova)
    return Fail(EINVAL, "reg_mr: empty or wrapping range");
  if ((start ^ iova) & (bus::kPageSize - 1))
    return Fail(EINVAL, "reg_mr: iova and addr differ inside their page");
  if (dmah != nullptr && dmah->device != pd->device)
    return Fail(EINVAL, "reg_mr: DMA handle of another device");
  Device& device = *pd->device;

  // The pages under the range, mapped for the device as one IOVA range.
  const uint32_t log_page = LogMttPageSize(start, length, iova);
  const uint64_t page = uint64_t{1} << log_page;
  const uintptr_t first = start & ~(page - 1);
  const uint64_t span = ((start + length + page - 1) & ~(page - 1)) - first;
  const uint64_t npages = span / page;
  ONCHIP_TRY(bus::DmaMapping mapping,
             device.bus().MapHost(reinterpret_cast<std::byte*>(first), span));

  ONCHIP_TRY(auto op, device.registry().Begin("reg_mr: device closed"));
  ParentPins pins;
  if (!pins.Take(pd->life) || (dmah && !pins.Take(dmah->life)))
    return Fail(EBUSY, "reg_mr: its PD or DMA handle is being freed");
  const uint8_t variant = device.NextMkeyVariant();
  const uint64_t octowords = (npages + 1) / 2;
  prm::Message<C> in(octowords * 16);
  SetCommon(in, prm::MKC_ACCESS_MODE_MTT, access, pd->protection().pdn, variant, iova, length);
  in.set(kMkc.umr_en, (access & IBV_ACCESS_MW_BIND) ? 1 : 0)
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
  ONCHIP_TRY(Mr* mr, Create(device, in, variant, pd, access));
  mr->device = pd->device;
  mr->dmah = dmah;
  mr->mapping = std::move(mapping);
  mr->ibv.addr = addr;
  mr->ibv.length = length;
  pins.Keep();
  Publish(device, op, mr);
  return mr;
}

Result<void> ReleaseMrOnDevice(Mr& mr) {
  // A failed DESTROY_MKEY (a window still bound to it) leaves the MR registered, pins and pages.
  ONCHIP_CHECK(DestroyMkey(mr.device->commander(), mr.mkey_index));
  if (mr.dm) mr.dm->life.Unpin();
  if (mr.dmah) mr.dmah->life.Unpin();
  mr.pd->life.Unpin();
  // The key is gone, so nothing on the device names the pages any more. Unmapping a range this
  // MR mapped itself fails only if the bus already dropped it; the MR is released either way.
  (void)mr.mapping.Reset();
  return {};
}

Result<void> DeregMr(Mr* mr) {
  if (mr == nullptr) return Fail(EINVAL, "dereg_mr: null");
  return Destroy(mr->device->registry(), ObjectKind::kMr, mr, mr->life,
                 "dereg_mr: still in use", ReleaseMrOnDevice);
}

}  // namespace onchip::driver
