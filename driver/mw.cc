#include "driver/mw.h"

#include <cerrno>

#include "driver/cmd/run.h"
#include "driver/mkey.h"
#include "uapi/prm/caps.h"
#include "uapi/prm/mkey.h"

namespace onchip::driver {
namespace {

// mlx5_ib_alloc_mw: roundup(max(num_klms, 1), 4) KLM entries, one octoword each.
constexpr uint32_t kWindowKlmOctowords = 4;

}  // namespace

Result<Mw*> AllocMw(Pd* pd, int type) {
  if (pd == nullptr) return Fail(EINVAL, "alloc_mw: null PD");
  Device& device = *pd->device;
  if (!device.caps().cur(prm::CAP_GENERAL).get(prm::cmd_hca_cap::imaicl))
    return Fail(EOPNOTSUPP, "alloc_mw: the device has no memory windows (imaicl)");
  if (type != IBV_MW_TYPE_1 && type != IBV_MW_TYPE_2)
    return Fail(EINVAL, "alloc_mw: type must be IBV_MW_TYPE_1 or IBV_MW_TYPE_2");

  ONCHIP_TRY(auto op, device.registry().Begin("alloc_mw: device closed"));
  ParentPins pins;
  if (!pins.Take(pd->life)) return Fail(EBUSY, "alloc_mw: its PD is being freed");
  const uint8_t variant = device.NextMkeyVariant();
  using C = prm::create_mkey_in;
  constexpr auto mkc = C::memory_key_mkey_entry;
  prm::Message<C> in;
  SetAccessModeNoQp(in, prm::MKC_ACCESS_MODE_KLMS);
  in.set(C::opcode, prm::CREATE_MKEY)
      .set(mkc.free, 1)
      .set(mkc.umr_en, 1)
      .set(mkc.lr, 1)
      .set(mkc.en_rinval, type == IBV_MW_TYPE_2 ? 1 : 0)
      .set(mkc.mkey_7_0, variant)
      .set(mkc.pd, pd->protection().pdn)
      .set(mkc.translations_octword_size, kWindowKlmOctowords);
  ONCHIP_TRY(auto out, cmd::Run<prm::create_mkey_out>(device.commander(), in));

  auto* mw = new Mw{};
  mw->device = pd->device;
  mw->pd = pd;
  mw->mkey_index = out.get(prm::create_mkey_out::mkey_index);
  mw->ibv.context = pd->ibv.context;
  mw->ibv.pd = &pd->ibv;
  mw->ibv.rkey = (mw->mkey_index << 8) | variant;
  mw->ibv.handle = mw->mkey_index;
  mw->ibv.type = static_cast<ibv_mw_type>(type);
  pins.Keep();
  device.registry().Publish<ObjectKind::kMw>(op, mw, mw->life);
  return mw;
}

Result<void> ReleaseMwOnDevice(Mw& mw, Release why) {
  auto destroyed = DestroyMkey(mw.device->commander(), mw.mkey_index);
  if (!destroyed && why == Release::kDestroy) return destroyed;
  mw.pd->life.Unpin();
  return destroyed;
}

Result<void> DeallocMw(Mw* mw) {
  if (mw == nullptr) return Fail(EINVAL, "dealloc_mw: null");
  return Destroy<ObjectKind::kMw>(mw->device->registry(), mw, mw->life, "dealloc_mw: in use");
}

Result<void> KindTraits<ObjectKind::kMw>::ReleaseOnDevice(Mw& object, Release why) {
  return ReleaseMwOnDevice(object, why);
}

}  // namespace onchip::driver
