#include "driver/ah.h"

#include <cerrno>
#include <cstring>

#include "driver/port.h"
#include "driver/roce_address.h"
#include "uapi/prm/caps.h"

namespace onchip::driver {

namespace {
// mlx5_wqe_av.grh_gid_fl bit 30: a GRH goes out (InfiniBand; RoCE always sends one and leaves
// the bit clear, as libmlx5 does).
constexpr uint32_t kAvGrhPresent = 1u << 30;
}  // namespace

Result<Ah*> CreateAh(Pd* pd, const ibv_ah_attr& attr) {
  if (pd == nullptr) return Fail(EINVAL, "create_ah: null PD");
  Device& device = *pd->device;
  const uint32_t ports = device.caps().cur(prm::CAP_GENERAL).get(prm::cmd_hca_cap::num_ports);
  if (attr.port_num < 1 || attr.port_num > ports)
    return Fail(kPortOutOfRange, "create_ah: no such port");
  const bool ib = IsInfiniBand(device);
  if (!ib && !attr.is_global) return Fail(EINVAL, "create_ah: a RoCE address needs a GRH");
  if (attr.is_global && attr.grh.sgid_index >= GidTableSize(device))
    return Fail(EINVAL, "create_ah: sgid_index beyond the GID table");
  // The kernel's answer for an empty entry: rdma_create_user_ah -> rdma_fill_sgid_attr ->
  // rdma_get_gid_attr (drivers/infiniband/core/verbs.c, cache.c) gives ENODATA.
  if (attr.is_global && !device.gid_table().populated(attr.grh.sgid_index))
    return Fail(ENODATA, "create_ah: sgid_index names an empty GID entry");

  ONCHIP_TRY(auto op, device.registry().Begin("create_ah: device closed"));
  ParentPins pins;
  if (!pins.Take(pd->life)) return Fail(EBUSY, "create_ah: its PD is being freed");
  auto* ah = new Ah{};
  ah->device = pd->device;
  ah->pd = pd;
  ah->dp.verbs.context = pd->ibv.context;
  ah->dp.verbs.pd = &pd->ibv;
  prm::pod::mlx5_wqe_av& av = ah->dp.av;
  if (ib) {
    // InfiniBand: the DLID, the SL (4 bits) and the source path bits; with a GRH also the GID
    // part, flagged by the AV's GRH bit.
    av.stat_rate_sl = static_cast<uint8_t>(Mlx5RateCode(attr.static_rate) << 4 | (attr.sl & 0xf));
    av.fl_mlid = attr.src_path_bits & 0x7f;
    av.rlid = prm::Be16::FromHost(attr.dlid);
    if (attr.is_global) {
      av.tclass = attr.grh.traffic_class;
      av.hop_limit = attr.grh.hop_limit;
      av.grh_gid_fl = prm::Be32::FromHost(kAvGrhPresent | uint32_t{attr.grh.sgid_index} << 20 |
                                          (attr.grh.flow_label & 0xfffff));
      std::memcpy(av.rgid, attr.grh.dgid.raw, sizeof(av.rgid));
    }
  } else {
    av.stat_rate_sl = static_cast<uint8_t>(Mlx5RateCode(attr.static_rate) << 4 | (attr.sl & 7) << 1);
    av.udp_sport = prm::Be16::FromHost(RoceUdpSport(attr.grh.flow_label));
    const std::array<uint8_t, 6> mac = MacOfGid(attr.grh.dgid);
    std::memcpy(av.rmac, mac.data(), sizeof(av.rmac));
    av.tclass = attr.grh.traffic_class;
    av.hop_limit = attr.grh.hop_limit;
    av.grh_gid_fl = prm::Be32::FromHost(uint32_t{attr.grh.sgid_index} << 20 |
                                        (attr.grh.flow_label & 0xfffff));
    std::memcpy(av.rgid, attr.grh.dgid.raw, sizeof(av.rgid));
  }
  pins.Keep();
  device.registry().Publish<ObjectKind::kAh>(op, ah, ah->life);
  return ah;
}

Result<void> ReleaseAh(Ah& ah, Release) {
  ah.pd->life.Unpin();
  return {};
}

Result<void> DestroyAh(Ah* ah) {
  if (ah == nullptr) return Fail(EINVAL, "destroy_ah: null");
  return Destroy<ObjectKind::kAh>(ah->device->registry(), ah, ah->life, "destroy_ah: in use");
}

Result<void> KindTraits<ObjectKind::kAh>::ReleaseOnDevice(Ah& object, Release why) {
  return ReleaseAh(object, why);
}

}  // namespace onchip::driver
