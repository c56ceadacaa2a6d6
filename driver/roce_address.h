// What a RoCE v2 address (an ibv_ah_attr with its GRH) turns into on the wire, shared by the
// QP's address path (qp.cc) and the address vector of an AH (ah.cc).
//   - UDP source port: ibv_flow_label_to_udp_sport (the flow label's 14 low bits folded with its
//     6 high ones, in the RoCE range 0xc000..0xffff); without a flow label the range's start.
//   - destination MAC: the modified EUI-64 interface id of a link-local GID; zero for other
//     GIDs, which this driver cannot resolve without the kernel's neighbour table (the software
//     ConnectX routes by GID).
//   - rate code: libmlx5's ib_to_mlx5_rate_table (0 = unlimited for IBV_RATE_MAX and rates the
//     table does not know).
#pragma once

#include <infiniband/verbs.h>

#include <array>
#include <cstdint>

namespace onchip::driver {

inline constexpr uint16_t kRoceUdpSportMin = 0xc000;

uint16_t RoceUdpSport(uint32_t flow_label);
std::array<uint8_t, 6> MacOfGid(const ibv_gid& gid);
uint8_t Mlx5RateCode(int static_rate);

}  // namespace onchip::driver
