#include "driver/hca.h"

#include <cerrno>
#include <cstring>
#include <thread>

#include "driver/cmd/run.h"
#include "uapi/cmd_status.h"
#include "uapi/prm/hca.h"
#include "uapi/prm/init_seg_access.h"

namespace onchip::driver::hca {
namespace {

template <class In, class Out>
Result<void> Simple(cmd::Commander& c, uint16_t opcode, uint16_t op_mod = 0) {
  prm::Message<In> in;
  in.set(In::opcode, opcode).set(In::op_mod, op_mod);
  ONCHIP_TRY(auto out, cmd::Run<Out>(c, in));
  (void)out;
  return {};
}

}  // namespace

Result<void> WaitFirmwareReady(bus::Bus& bus, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (prm::init_seg::FirmwareInitializing(bus)) {
    if (std::chrono::steady_clock::now() > deadline)
      return Fail(ETIMEDOUT, "bring-up: firmware still initializing after the timeout");
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  return {};
}

uint64_t FirmwareVersion(const bus::Bus& bus) {
  const prm::init_seg::FwRevision rev = prm::init_seg::ReadFwRevision(bus);
  return uint64_t{rev.major} << 32 | uint64_t{rev.minor} << 16 | rev.subminor;
}

Result<void> EnableHca(cmd::Commander& c) {
  return Simple<prm::enable_hca_in, prm::enable_hca_out>(c, prm::ENABLE_HCA);
}

Result<void> DisableHca(cmd::Commander& c) {
  return Simple<prm::disable_hca_in, prm::disable_hca_out>(c, prm::DISABLE_HCA);
}

Result<void> SetIssi(cmd::Commander& c) {
  prm::Message<prm::query_issi_in> query;
  query.set(prm::query_issi_in::opcode, prm::QUERY_ISSI);
  ONCHIP_TRY(auto issi, cmd::Run<prm::query_issi_out>(c, query));
  if (!(issi.get(prm::query_issi_out::supported_issi_dw0) & (1u << 1)))
    return Fail(EOPNOTSUPP, "bring-up: device does not support ISSI 1");
  prm::Message<prm::set_issi_in> set;
  set.set(prm::set_issi_in::opcode, prm::SET_ISSI).set(prm::set_issi_in::current_issi, 1);
  ONCHIP_TRY(auto out, cmd::Run<prm::set_issi_out>(c, set));
  (void)out;
  return {};
}

Result<void> SetHostEndianness(cmd::Commander& c) {
  constexpr std::size_t kRegBytes = prm::size_bytes<prm::register_host_endianness>;
  prm::Message<prm::access_register_in> in(kRegBytes);
  in.set(prm::access_register_in::opcode, prm::ACCESS_REG)
      .set(prm::access_register_in::op_mod, prm::ACCESS_REG_WRITE)
      .set(prm::access_register_in::register_id, prm::REG_HOST_ENDIANNESS);
  // register_data is register_host_endianness, whose `he` stays 0 on a little-endian host.
  auto out = cmd::Run<prm::access_register_out>(c, in, kRegBytes);
  if (!out && out.error().from_firmware() &&
      out.error().firmware().status == static_cast<uint8_t>(prm::CommandStatus::BAD_OP_ERR))
    return {};
  if (!out) return std::unexpected(out.error());
  return {};
}

Result<void> SetCaps(cmd::Commander& c, Caps& caps) {
  ONCHIP_CHECK(caps.Query(c, prm::CAP_GENERAL, prm::HCA_CAP_OPMOD_GET_MAX));
  ONCHIP_CHECK(caps.Query(c, prm::CAP_GENERAL, prm::HCA_CAP_OPMOD_GET_CUR));
  {
    prm::Message<prm::set_hca_cap_in> in;
    in.set(prm::set_hca_cap_in::opcode, prm::SET_HCA_CAP)
        .set(prm::set_hca_cap_in::op_mod, prm::SetCapOpMod(prm::CAP_GENERAL));
    auto page = in.region(prm::set_hca_cap_in::capability);
    const auto cur = caps.cur(prm::CAP_GENERAL).bytes();
    std::memcpy(page.data(), cur.data(), page.size());
    prm::Bits(page).set(prm::cmd_hca_cap::cmdif_checksum, 0).set(prm::cmd_hca_cap::log_uar_page_sz, 0);
    ONCHIP_TRY(auto out, cmd::Run<prm::set_hca_cap_out>(c, in));
    (void)out;
  }
  if (caps.max(prm::CAP_GENERAL).get(prm::cmd_hca_cap::roce)) {
    ONCHIP_CHECK(caps.Query(c, prm::CAP_ROCE, prm::HCA_CAP_OPMOD_GET_MAX));
    ONCHIP_CHECK(caps.Query(c, prm::CAP_ROCE, prm::HCA_CAP_OPMOD_GET_CUR));
    if (caps.max(prm::CAP_ROCE).get(prm::roce_cap::sw_r_roce_src_udp_port) &&
        !caps.cur(prm::CAP_ROCE).get(prm::roce_cap::sw_r_roce_src_udp_port)) {
      prm::Message<prm::set_hca_cap_in> in;
      in.set(prm::set_hca_cap_in::opcode, prm::SET_HCA_CAP)
          .set(prm::set_hca_cap_in::op_mod, prm::SetCapOpMod(prm::CAP_ROCE));
      auto page = in.region(prm::set_hca_cap_in::capability);
      const auto cur = caps.cur(prm::CAP_ROCE).bytes();
      std::memcpy(page.data(), cur.data(), page.size());
      prm::Bits(page).set(prm::roce_cap::sw_r_roce_src_udp_port, 1);
      ONCHIP_TRY(auto out, cmd::Run<prm::set_hca_cap_out>(c, in));
      (void)out;
    }
  }
  // 8-byte atomics answered in host byte order when the device can (mlx5_core does the same);
  // without it the device reports no atomic capability to verbs.
  if (caps.max(prm::CAP_GENERAL).get(prm::cmd_hca_cap::atomic)) {
    ONCHIP_CHECK(caps.Query(c, prm::CAP_ATOMIC, prm::HCA_CAP_OPMOD_GET_MAX));
    ONCHIP_CHECK(caps.Query(c, prm::CAP_ATOMIC, prm::HCA_CAP_OPMOD_GET_CUR));
    if (caps.max(prm::CAP_ATOMIC).get(prm::atomic_caps::supported_atomic_req_8B_endianness_mode_1) &&
        !caps.cur(prm::CAP_ATOMIC).get(prm::atomic_caps::atomic_req_8B_endianness_mode)) {
      prm::Message<prm::set_hca_cap_in> in;
      in.set(prm::set_hca_cap_in::opcode, prm::SET_HCA_CAP)
          .set(prm::set_hca_cap_in::op_mod, prm::SetCapOpMod(prm::CAP_ATOMIC));
      auto page = in.region(prm::set_hca_cap_in::capability);
      const auto cur = caps.cur(prm::CAP_ATOMIC).bytes();
      std::memcpy(page.data(), cur.data(), page.size());
      prm::Bits(page).set(prm::atomic_caps::atomic_req_8B_endianness_mode, 1);
      ONCHIP_TRY(auto out, cmd::Run<prm::set_hca_cap_out>(c, in));
      (void)out;
    }
  }
  return {};
}

Result<void> InitHca(cmd::Commander& c) {
  return Simple<prm::init_hca_in, prm::init_hca_out>(c, prm::INIT_HCA);
}

Result<void> SetDriverVersion(cmd::Commander& c, const Caps& caps) {
  if (!caps.cur(prm::CAP_GENERAL).get(prm::cmd_hca_cap::driver_version)) return {};
  static constexpr char kVersion[] = "onchip,mlx5_core,0.1";
  prm::Message<prm::set_driver_version_in> in;
  in.set(prm::set_driver_version_in::opcode, prm::SET_DRIVER_VERSION);
  for (std::size_t i = 0; i + 1 < sizeof kVersion; ++i)
    in.set(prm::set_driver_version_in::driver_version[i], static_cast<uint8_t>(kVersion[i]));
  ONCHIP_TRY(auto out, cmd::Run<prm::set_driver_version_out>(c, in));
  (void)out;
  return {};
}

Result<void> QueryCaps(cmd::Commander& c, Caps& caps) {
  for (auto mode : {prm::HCA_CAP_OPMOD_GET_MAX, prm::HCA_CAP_OPMOD_GET_CUR})
    ONCHIP_CHECK(caps.Query(c, prm::CAP_GENERAL, mode));
  const prm::Bits general = caps.cur(prm::CAP_GENERAL);
  const struct {
    prm::CapType type;
    bool present;
  } types[] = {
      {prm::CAP_DEV_MEM, general.get(prm::cmd_hca_cap::device_memory) != 0},
      {prm::CAP_FLOW_TABLE, general.get(prm::cmd_hca_cap::nic_flow_table) != 0},
      {prm::CAP_ROCE, general.get(prm::cmd_hca_cap::roce) != 0},
      {prm::CAP_GENERAL_2, general.get(prm::cmd_hca_cap::hca_cap_2) != 0},
      {prm::CAP_ATOMIC, general.get(prm::cmd_hca_cap::atomic) != 0},
  };
  for (const auto& t : types) {
    if (!t.present) continue;
    for (auto mode : {prm::HCA_CAP_OPMOD_GET_MAX, prm::HCA_CAP_OPMOD_GET_CUR})
      ONCHIP_CHECK(caps.Query(c, t.type, mode));
  }
  return {};
}

Result<void> TeardownHca(cmd::Commander& c, const Caps& caps) {
  prm::Message<prm::teardown_hca_in> in;
  in.set(prm::teardown_hca_in::opcode, prm::TEARDOWN_HCA)
      .set(prm::teardown_hca_in::profile, prm::TEARDOWN_HCA_GRACEFUL_CLOSE);
  auto graceful = cmd::Run<prm::teardown_hca_out>(c, in);
  if (graceful) return {};
  // Objects the driver could not destroy keep a graceful close from succeeding; force close
  // releases them in the firmware (mlx5_cmd_force_teardown_hca). Tried whether or not the caps
  // advertise force_teardown: a device without it refuses the profile, and the graceful
  // failure is what the caller hears.
  (void)caps;
  in.set(prm::teardown_hca_in::profile, prm::TEARDOWN_HCA_FORCE_CLOSE);
  auto forced = cmd::Run<prm::teardown_hca_out>(c, in);
  if (!forced || forced->get(prm::teardown_hca_out::state) != 0)
    return std::unexpected(graceful.error());
  return {};
}

}  // namespace onchip::driver::hca
