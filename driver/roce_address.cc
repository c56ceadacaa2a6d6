#include "driver/roce_address.h"

namespace onchip::driver {

uint16_t RoceUdpSport(uint32_t flow_label) {
  if (flow_label == 0) return kRoceUdpSportMin;
  uint32_t low = flow_label & 0x03fff;
  const uint32_t high = flow_label & 0xfc000;
  low ^= high >> 14;
  return static_cast<uint16_t>(low | kRoceUdpSportMin);
}

std::array<uint8_t, 6> MacOfGid(const ibv_gid& gid) {
  const uint8_t* g = gid.raw;
  // fe80::/10 with an EUI-64 interface id (ff:fe in its middle).
  if (g[0] != 0xfe || (g[1] & 0xc0) != 0x80 || g[11] != 0xff || g[12] != 0xfe) return {};
  return {static_cast<uint8_t>(g[8] ^ 2), g[9], g[10], g[13], g[14], g[15]};
}

uint8_t Mlx5RateCode(int static_rate) {
  switch (static_rate) {
    case IBV_RATE_2_5_GBPS: return 7;
    case IBV_RATE_10_GBPS: return 8;
    case IBV_RATE_30_GBPS: return 9;
    case IBV_RATE_5_GBPS: return 10;
    case IBV_RATE_20_GBPS: return 11;
    case IBV_RATE_40_GBPS: return 12;
    case IBV_RATE_60_GBPS: return 13;
    case IBV_RATE_80_GBPS: return 14;
    case IBV_RATE_120_GBPS: return 15;
    case IBV_RATE_14_GBPS: return 11;
    case IBV_RATE_56_GBPS: return 13;
    case IBV_RATE_112_GBPS: return 15;
    case IBV_RATE_25_GBPS: return 9;
    case IBV_RATE_100_GBPS: return 15;
    case IBV_RATE_28_GBPS: return 9;
    case IBV_RATE_50_GBPS: return 13;
    default: return 0;
  }
}

}  // namespace onchip::driver
