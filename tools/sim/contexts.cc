#include "tools/sim/contexts.h"

#include <algorithm>

namespace onchip::sim {

uint32_t EqCount(const DeviceConfig& config) {
  // eq_number is 8 bits wide; both advertised bounds apply.
  return std::min({uint32_t{1} << std::min<uint32_t>(config.log_max_eq, 8),
                   uint32_t{config.max_num_eqs}, uint32_t{256}});
}

uint32_t QpCount(const DeviceConfig& config) {
  // qpn is 24 bits wide.
  const uint32_t log = std::min<uint32_t>(config.log_max_qp, 24);
  return (uint32_t{1} << log) > kFirstQpn ? (uint32_t{1} << log) - kFirstQpn : 0;
}

Contexts::Contexts(const DeviceConfig& config, const BarLayout& layout)
    : caps(config, layout),
      uar_ids(config.first_uar_index, config.num_uars),
      pd_ids(1, (uint32_t{1} << config.log_max_pd) - 1),
      td_ids(1, (uint32_t{1} << config.log_max_transport_domain) - 1),
      xrcd_ids(1, (uint32_t{1} << config.log_max_xrcd) - 1),
      object_ids(1, 1u << 16),
      mkey_ids(1, (uint32_t{1} << config.log_max_mkey) - 1),
      eq_ids(0, EqCount(config)),
      cq_ids(0, uint32_t{1} << config.log_max_cq),
      qp_ids(kFirstQpn, QpCount(config)),
      srq_ids(0, uint32_t{1} << std::min<uint32_t>(config.log_max_srq, 24)),
      tis_ids(1, (uint32_t{1} << config.log_max_tis) - 1),
      tir_ids(1, (uint32_t{1} << config.log_max_tir) - 1) {}

}  // namespace onchip::sim
