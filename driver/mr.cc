#include "driver/mr.h"

#include <cerrno>

#include "driver/cmd/run.h"
#include "uapi/prm/mkey.h"

namespace onchip::driver {
namespace {

// rdma-core MLX5_DM_ALLOWED_ACCESS.
constexpr unsigned kDmAllowedAccess = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                                      IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC |
                                      IBV_ACCESS_ZERO_BASED | IBV_ACCESS_OPTIONAL_RANGE;

}  // namespace

Result<Mr*> RegDmMr(Pd* pd, Dm* dm, uint64_t offset, size_t length, unsigned int access) {
  if (pd == nullptr || dm == nullptr) return Fail(EINVAL, "reg_dm_mr: null PD or DM");
  if (access & ~kDmAllowedAccess) return Fail(EINVAL, "reg_dm_mr: access flag not allowed on DM");
  if (!(access & IBV_ACCESS_ZERO_BASED)) return Fail(EINVAL, "reg_dm_mr: IBV_ACCESS_ZERO_BASED required");
  if (offset > dm->length || length > dm->length || length > dm->length - offset)
    return Fail(EINVAL, "reg_dm_mr: range outside the device memory");
  const bool memic = dm->type == MLX5DV_DM_TYPE_MEMIC;
  if (!memic && (access & IBV_ACCESS_REMOTE_ATOMIC))
    return Fail(EINVAL, "reg_dm_mr: no atomics on SW ICM");
  if (pd->device != dm->device) return Fail(EINVAL, "reg_dm_mr: PD and DM on different devices");
  Device& device = *dm->device;

  auto lock = device.Locked();
  if (device.closed() || !pd->live || !dm->live) return Fail(EIO, "reg_dm_mr: device closed");
  const uint8_t variant = device.NextMkeyVariant();
  const uint64_t start = (memic ? dm->memic.bar_offset : dm->icm.icm_address) + offset;
  using C = prm::create_mkey_in;
  prm::Message<C> in;
  in.set(C::opcode, prm::CREATE_MKEY)
      .set(C::memory_key_mkey_entry.access_mode_1_0,
           (memic ? prm::MKC_ACCESS_MODE_MEMIC : prm::MKC_ACCESS_MODE_SW_ICM) & 0x3)
      .set(C::memory_key_mkey_entry.access_mode_4_2,
           (memic ? prm::MKC_ACCESS_MODE_MEMIC : prm::MKC_ACCESS_MODE_SW_ICM) >> 2)
      .set(C::memory_key_mkey_entry.a, (access & IBV_ACCESS_REMOTE_ATOMIC) ? 1 : 0)
      .set(C::memory_key_mkey_entry.rw, (access & IBV_ACCESS_REMOTE_WRITE) ? 1 : 0)
      .set(C::memory_key_mkey_entry.rr, (access & IBV_ACCESS_REMOTE_READ) ? 1 : 0)
      .set(C::memory_key_mkey_entry.lw, (access & IBV_ACCESS_LOCAL_WRITE) ? 1 : 0)
      .set(C::memory_key_mkey_entry.lr, 1)
      .set(C::memory_key_mkey_entry.qpn, 0xffffff)
      .set(C::memory_key_mkey_entry.mkey_7_0, variant)
      .set(C::memory_key_mkey_entry.pd, pd->pdn)
      .set(C::memory_key_mkey_entry.start_addr, start)
      .set(C::memory_key_mkey_entry.len, length);
  ONCHIP_TRY(auto out, cmd::Run<prm::create_mkey_out>(device.commander(), in));

  auto* mr = new Mr{};
  mr->device = dm->device;
  mr->dm = dm;
  mr->pd = pd;
  mr->mkey_index = out.get(prm::create_mkey_out::mkey_index);
  mr->ibv.context = device.verbs();
  mr->ibv.pd = &pd->ibv;
  mr->ibv.addr = nullptr;  // zero-based: work requests address the MR by offset
  mr->ibv.length = length;
  mr->ibv.handle = mr->mkey_index;
  mr->ibv.lkey = mr->ibv.rkey = (mr->mkey_index << 8) | variant;
  dm->usecnt.fetch_add(1);
  pd->usecnt.fetch_add(1);
  device.AddLocked(mr);
  return mr;
}

Result<void> ReleaseMrOnDevice(Mr& mr) {
  mr.live = false;
  mr.dm->usecnt.fetch_sub(1);
  mr.pd->usecnt.fetch_sub(1);
  prm::Message<prm::destroy_mkey_in> in;
  in.set(prm::destroy_mkey_in::opcode, prm::DESTROY_MKEY)
      .set(prm::destroy_mkey_in::mkey_index, mr.mkey_index);
  ONCHIP_TRY(auto out, cmd::Run<prm::destroy_mkey_out>(mr.device->commander(), in));
  (void)out;
  return {};
}

Result<void> DeregMr(Mr* mr) {
  if (mr == nullptr) return Fail(EINVAL, "dereg_mr: null");
  {
    auto lock = mr->device->Locked();
    if (mr->live) {
      if (auto r = ReleaseMrOnDevice(*mr); !r) {
        mr->live = true;  // the mkey still exists: keep the MR and its pins
        mr->dm->usecnt.fetch_add(1);
        mr->pd->usecnt.fetch_add(1);
        return r;
      }
      mr->device->RemoveLocked(mr);
    }
  }
  delete mr;
  return {};
}

}  // namespace onchip::driver
