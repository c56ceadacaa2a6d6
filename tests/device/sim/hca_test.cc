// HCA life cycle: ENABLE/DISABLE_HCA, ISSI, pages, capabilities, ACCESS_REG, INIT/TEARDOWN_HCA,
// SET_DRIVER_VERSION, NOP, QUERY_VPORT_STATE, and the state machine around them.
#include "tests/device/sim/sim_fixture.h"
#include "uapi/prm/caps.h"
#include "uapi/prm/hca.h"
#include "uapi/prm/opcodes.h"
#include "uapi/prm/resources.h"

namespace onchip::sim::testing {
namespace {

using prm::CommandStatus;

class HcaTest : public SimTest {};

TEST_F(HcaTest, BringUpReachesInitializedAndHoldsThePagesItAskedFor) {
  BringUp();
  EXPECT_EQ(sim_->firmware().state(), HcaState::kInitialized);
  const DeviceConfig c;
  EXPECT_EQ(sim_->counters().pages_held, c.boot_pages + c.init_pages);
  const auto q =
      Exec(prm::CommandIn<prm::query_pages_in>(prm::QUERY_PAGES, prm::REGULAR_PAGES), 16);
  ASSERT_TRUE(Ok(q));
  EXPECT_EQ(q.get(prm::query_pages_out::num_pages), 0u);
}

TEST_F(HcaTest, EverythingButEnableHcaIsRefusedBeforeEnableHca) {
  EXPECT_TRUE(Refused(Exec(prm::CommandIn<prm::query_issi_in>(prm::QUERY_ISSI), 112),
                      CommandStatus::BAD_SYS_STATE_ERR, Syndrome::WRONG_STATE));
  EXPECT_TRUE(Refused(Exec(prm::CommandIn<prm::nop_in>(prm::NOP), 16),
                      CommandStatus::BAD_SYS_STATE_ERR, Syndrome::WRONG_STATE));
  ASSERT_TRUE(Ok(Exec(prm::CommandIn<prm::enable_hca_in>(prm::ENABLE_HCA), 16)));
  EXPECT_TRUE(Refused(Exec(prm::CommandIn<prm::enable_hca_in>(prm::ENABLE_HCA), 16),
                      CommandStatus::BAD_SYS_STATE_ERR, Syndrome::WRONG_STATE));
}

TEST_F(HcaTest, AllocPdBeforeInitHcaIsBadSysState) {
  ASSERT_TRUE(Ok(Exec(prm::CommandIn<prm::enable_hca_in>(prm::ENABLE_HCA), 16)));
  EXPECT_TRUE(Refused(Exec(prm::CommandIn<prm::alloc_pd_in>(prm::ALLOC_PD), 16),
                      CommandStatus::BAD_SYS_STATE_ERR, Syndrome::WRONG_STATE));
  EXPECT_EQ(sim_->counters().pds, 0u);
}

TEST_F(HcaTest, EnableHcaChecksFunctionAndReservedBits) {
  auto in = prm::CommandIn<prm::enable_hca_in>(prm::ENABLE_HCA);
  in.set(prm::enable_hca_in::function_id, 1);
  EXPECT_TRUE(Refused(Exec(in, 16), CommandStatus::BAD_PARAM_ERR, Syndrome::BAD_FUNCTION));
  auto uid = prm::CommandIn<prm::enable_hca_in>(prm::ENABLE_HCA);
  uid.bytes()[2] = std::byte{1};  // enable_hca_in has no uid: reserved
  EXPECT_TRUE(Refused(Exec(uid, 16), CommandStatus::BAD_PARAM_ERR, Syndrome::RESERVED_NOT_ZERO));
  auto op = prm::CommandIn<prm::enable_hca_in>(prm::ENABLE_HCA, 3);
  EXPECT_TRUE(Refused(Exec(op, 16), CommandStatus::BAD_PARAM_ERR, Syndrome::BAD_OP_MOD));
  EXPECT_EQ(sim_->firmware().state(), HcaState::kDisabled);
}

TEST_F(HcaTest, IssiQueryAndSet) {
  ASSERT_TRUE(Ok(Exec(prm::CommandIn<prm::enable_hca_in>(prm::ENABLE_HCA), 16)));
  auto q = Exec(prm::CommandIn<prm::query_issi_in>(prm::QUERY_ISSI), 112);
  ASSERT_TRUE(Ok(q));
  EXPECT_EQ(q.get(prm::query_issi_out::current_issi), 0u);
  EXPECT_EQ(q.get(prm::query_issi_out::supported_issi_dw0), 0x3u);
  auto set = prm::CommandIn<prm::set_issi_in>(prm::SET_ISSI);
  set.set(prm::set_issi_in::current_issi, 2);
  EXPECT_TRUE(Refused(Exec(set, 16), CommandStatus::BAD_PARAM_ERR, Syndrome::ISSI_UNSUPPORTED));
  set.set(prm::set_issi_in::current_issi, 1);
  ASSERT_TRUE(Ok(Exec(set, 16)));
  q = Exec(prm::CommandIn<prm::query_issi_in>(prm::QUERY_ISSI), 112);
  EXPECT_EQ(q.get(prm::query_issi_out::current_issi), 1u);
  // A short output is refused, not truncated.
  EXPECT_TRUE(Refused(Exec(prm::CommandIn<prm::query_issi_in>(prm::QUERY_ISSI), 16),
                      CommandStatus::BAD_OUTP_LEN_ERR, Syndrome::OUTPUT_TOO_SHORT));
}

TEST_F(HcaTest, PagesBootInitRegularGiveAndTake) {
  const DeviceConfig c;
  ASSERT_TRUE(Ok(Exec(prm::CommandIn<prm::enable_hca_in>(prm::ENABLE_HCA), 16)));
  auto boot = Exec(prm::CommandIn<prm::query_pages_in>(prm::QUERY_PAGES, prm::BOOT_PAGES), 16);
  EXPECT_EQ(boot.get(prm::query_pages_out::num_pages), c.boot_pages);
  ASSERT_TRUE(Ok(*w_->GivePages(c.boot_pages)));
  boot = Exec(prm::CommandIn<prm::query_pages_in>(prm::QUERY_PAGES, prm::BOOT_PAGES), 16);
  EXPECT_EQ(boot.get(prm::query_pages_out::num_pages), 0u);
  // Enabled, the firmware needs just its boot pages.
  EXPECT_EQ(Exec(prm::CommandIn<prm::query_pages_in>(prm::QUERY_PAGES, prm::REGULAR_PAGES), 16)
                .get(prm::query_pages_out::num_pages),
            0u);
  auto init = Exec(prm::CommandIn<prm::query_pages_in>(prm::QUERY_PAGES, prm::INIT_PAGES), 16);
  EXPECT_EQ(init.get(prm::query_pages_out::num_pages), c.init_pages);
  // INIT_HCA without the init pages.
  EXPECT_TRUE(Refused(Exec(prm::CommandIn<prm::init_hca_in>(prm::INIT_HCA), 16),
                      CommandStatus::BAD_SYS_STATE_ERR, Syndrome::PAGES_MISSING));
  ASSERT_TRUE(Ok(*w_->GivePages(c.init_pages)));
  ASSERT_TRUE(Ok(Exec(prm::CommandIn<prm::init_hca_in>(prm::INIT_HCA), 16)));

  // While initialized the firmware keeps what it needs: TAKE returns only a surplus.
  ASSERT_TRUE(Ok(*w_->GivePages(3)));
  auto regular =
      Exec(prm::CommandIn<prm::query_pages_in>(prm::QUERY_PAGES, prm::REGULAR_PAGES), 16);
  EXPECT_EQ(static_cast<int32_t>(regular.get(prm::query_pages_out::num_pages)), -3);
  auto take = prm::CommandIn<prm::manage_pages_in>(prm::MANAGE_PAGES, prm::PAGES_TAKE);
  take.set(prm::manage_pages_in::input_num_entries, 10);
  auto t = Exec(take, 16 + 8 * 10);
  ASSERT_TRUE(Ok(t));
  EXPECT_EQ(t.get(prm::manage_pages_out::output_num_entries), 3u);
  for (int i = 0; i < 3; ++i) {
    const uint64_t pa = t.get(prm::manage_pages_out::pas[i]);
    EXPECT_GE(pa, CommandWriter::kArenaIova + CommandWriter::kPagePoolOffset);
    EXPECT_EQ(pa % 4096, 0u);
  }
  EXPECT_EQ(sim_->counters().pages_held, c.boot_pages + c.init_pages);

  // After TEARDOWN_HCA every page can be reclaimed.
  ASSERT_TRUE(Ok(Exec(prm::CommandIn<prm::teardown_hca_in>(prm::TEARDOWN_HCA), 16)));
  take.set(prm::manage_pages_in::input_num_entries, 200);
  t = Exec(take, 16 + 8 * 200);
  ASSERT_TRUE(Ok(t));
  EXPECT_EQ(t.get(prm::manage_pages_out::output_num_entries), c.boot_pages + c.init_pages);
  EXPECT_EQ(sim_->counters().pages_held, 0u);
  ASSERT_TRUE(Ok(Exec(prm::CommandIn<prm::disable_hca_in>(prm::DISABLE_HCA), 16)));
  EXPECT_EQ(sim_->firmware().state(), HcaState::kDisabled);
}

TEST_F(HcaTest, ManagePagesRefusesBadPages) {
  ASSERT_TRUE(Ok(Exec(prm::CommandIn<prm::enable_hca_in>(prm::ENABLE_HCA), 16)));
  auto give = [&](std::initializer_list<uint64_t> pas) {
    auto in =
        prm::CommandIn<prm::manage_pages_in>(prm::MANAGE_PAGES, prm::PAGES_GIVE, 8 * pas.size());
    in.set(prm::manage_pages_in::input_num_entries, pas.size());
    std::size_t i = 0;
    for (uint64_t pa : pas) in.set(prm::manage_pages_in::pas[i++], pa);
    return Exec(in, 16);
  };
  const uint64_t page = CommandWriter::kArenaIova + CommandWriter::kPagePoolOffset;
  EXPECT_TRUE(Refused(give({page + 8}), CommandStatus::BAD_PARAM_ERR, Syndrome::PAGE_UNALIGNED));
  EXPECT_TRUE(Refused(give({0x7000'0000'0000}), CommandStatus::BAD_PARAM_ERR,
                      Syndrome::PAGE_UNMAPPED));
  EXPECT_TRUE(Refused(give({page, page}), CommandStatus::BAD_PARAM_ERR, Syndrome::PAGE_DUPLICATE));
  ASSERT_TRUE(Ok(give({page})));
  EXPECT_TRUE(Refused(give({page}), CommandStatus::BAD_PARAM_ERR, Syndrome::PAGE_DUPLICATE));
  EXPECT_EQ(sim_->counters().pages_held, 1u);
  // input_num_entries beyond the message.
  auto lie = prm::CommandIn<prm::manage_pages_in>(prm::MANAGE_PAGES, prm::PAGES_GIVE, 8);
  lie.set(prm::manage_pages_in::input_num_entries, 5);
  lie.set(prm::manage_pages_in::pas[0], page + 4096);
  EXPECT_TRUE(Refused(Exec(lie, 16), CommandStatus::BAD_INP_LEN_ERR, Syndrome::INPUT_TOO_SHORT));
  // TAKE whose output cannot hold the pages asked for.
  auto take = prm::CommandIn<prm::manage_pages_in>(prm::MANAGE_PAGES, prm::PAGES_TAKE);
  take.set(prm::manage_pages_in::input_num_entries, 4);
  EXPECT_TRUE(
      Refused(Exec(take, 16), CommandStatus::BAD_OUTP_LEN_ERR, Syndrome::OUTPUT_TOO_SHORT));
  EXPECT_TRUE(Refused(Exec(prm::CommandIn<prm::manage_pages_in>(prm::MANAGE_PAGES, 7), 16),
                      CommandStatus::BAD_PARAM_ERR, Syndrome::BAD_OP_MOD));
  EXPECT_EQ(sim_->counters().pages_held, 1u);
}

TEST_F(HcaTest, QueryHcaCapMaxAndCurForEveryType) {
  ASSERT_TRUE(Ok(Exec(prm::CommandIn<prm::enable_hca_in>(prm::ENABLE_HCA), 16)));
  const DeviceConfig c;
  auto query = [&](prm::CapType t, prm::CapMode m) {
    return Exec(prm::CommandIn<prm::query_hca_cap_in>(prm::QUERY_HCA_CAP, prm::QueryCapOpMod(t, m)),
                4112);
  };
  using Gen = prm::cmd_hca_cap_bits<prm::query_hca_cap_out::capability.bit_offset>;
  using Mem = prm::device_mem_cap_bits<prm::query_hca_cap_out::capability.bit_offset>;
  using Roce = prm::roce_cap_bits<prm::query_hca_cap_out::capability.bit_offset>;
  using Ft = prm::flow_table_nic_cap_bits<prm::query_hca_cap_out::capability.bit_offset>;
  using Rx = prm::flow_table_prop_layout_bits<Ft::flow_table_properties_nic_receive.bit_offset>;
  using Tx = prm::flow_table_prop_layout_bits<Ft::flow_table_properties_nic_transmit.bit_offset>;

  auto gmax = query(prm::CAP_GENERAL, prm::HCA_CAP_OPMOD_GET_MAX);
  ASSERT_TRUE(Ok(gmax));
  EXPECT_EQ(gmax.get(Gen::log_max_pd), c.log_max_pd);
  EXPECT_EQ(gmax.get(Gen::log_max_mkey), c.log_max_mkey);
  EXPECT_EQ(gmax.get(Gen::uar_4k), 1u);
  EXPECT_EQ(gmax.get(Gen::bf), 1u);
  EXPECT_EQ(gmax.get(Gen::log_bf_reg_size), c.log_bf_reg_size);
  EXPECT_EQ(gmax.get(Gen::mkey_pcie_tph), 1u);
  EXPECT_EQ(gmax.get(Gen::device_memory), 1u);
  EXPECT_EQ(gmax.get(Gen::imaicl), 1u);
  EXPECT_EQ(gmax.get(Gen::general_obj_types), uint64_t{1} << 8);
  EXPECT_EQ(gmax.get(Gen::device_frequency_khz), 1000000u);  // the internal timer counts ns
  auto gcur = query(prm::CAP_GENERAL, prm::HCA_CAP_OPMOD_GET_CUR);
  EXPECT_EQ(gcur.get(Gen::uar_4k), 0u);  // off until SET_HCA_CAP

  auto mem = query(prm::CAP_DEV_MEM, prm::HCA_CAP_OPMOD_GET_CUR);
  ASSERT_TRUE(Ok(mem));
  EXPECT_EQ(mem.get(Mem::memic), 1u);
  EXPECT_EQ(mem.get(Mem::memic_bar_start_addr), sim_->layout().memic_start);
  EXPECT_EQ(mem.get(Mem::memic_bar_size), c.memic_bar_size);
  EXPECT_EQ(mem.get(Mem::max_memic_size), c.max_memic_size);
  EXPECT_EQ(mem.get(Mem::log_max_memic_addr_alignment), c.log_max_memic_addr_alignment);
  EXPECT_EQ(mem.get(Mem::memic_operations), 0u);
  EXPECT_EQ(mem.get(Mem::log_sw_icm_alloc_granularity), c.log_sw_icm_alloc_granularity);
  EXPECT_NE(mem.get(Mem::steering_sw_icm_start_address), 0u);
  EXPECT_EQ(mem.get(Mem::log_steering_sw_icm_size), c.log_steering_sw_icm_size);
  EXPECT_NE(mem.get(Mem::header_modify_sw_icm_start_address), 0u);
  EXPECT_NE(mem.get(Mem::header_modify_pattern_sw_icm_start_address), 0u);
  EXPECT_NE(mem.get(Mem::indirect_encap_sw_icm_start_address), 0u);
  EXPECT_EQ(mem.get(Mem::log_indirect_encap_sw_icm_size), c.log_indirect_encap_sw_icm_size);

  auto ft = query(prm::CAP_FLOW_TABLE, prm::HCA_CAP_OPMOD_GET_CUR);
  ASSERT_TRUE(Ok(ft));
  EXPECT_EQ(ft.get(Rx::sw_owner), 1u);
  EXPECT_EQ(ft.get(Rx::sw_owner_v2), 1u);
  EXPECT_EQ(ft.get(Tx::sw_owner), 1u);
  EXPECT_EQ(ft.get(Tx::sw_owner_v2), 1u);

  auto roce = query(prm::CAP_ROCE, prm::HCA_CAP_OPMOD_GET_MAX);
  ASSERT_TRUE(Ok(roce));
  EXPECT_EQ(roce.get(Roce::r_roce_dest_udp_port), 4791u);
  ASSERT_TRUE(Ok(query(prm::CAP_GENERAL_2, prm::HCA_CAP_OPMOD_GET_CUR)));

  EXPECT_TRUE(Refused(query(prm::CAP_ODP, prm::HCA_CAP_OPMOD_GET_CUR),
                      CommandStatus::BAD_PARAM_ERR, Syndrome::CAP_TYPE_UNSUPPORTED));
  EXPECT_TRUE(Refused(Exec(prm::CommandIn<prm::query_hca_cap_in>(prm::QUERY_HCA_CAP, 1), 16),
                      CommandStatus::BAD_OUTP_LEN_ERR, Syndrome::OUTPUT_TOO_SHORT));
  auto other = prm::CommandIn<prm::query_hca_cap_in>(prm::QUERY_HCA_CAP, 1);
  other.set(prm::query_hca_cap_in::other_function, 1);
  EXPECT_TRUE(Refused(Exec(other, 4112), CommandStatus::BAD_PARAM_ERR,
                      Syndrome::CAP_OTHER_FUNCTION));
}

// What the QP and SRQ commands accept is what the capabilities say: limits from DeviceConfig,
// RC/UC/UD and XRC (with 2^log_max_xrcd domains), 8-byte compare-and-swap and fetch-and-add whose byte order the driver
// may set to host order.
TEST_F(HcaTest, QueueAndAtomicCapabilities) {
  ASSERT_TRUE(Ok(Exec(prm::CommandIn<prm::enable_hca_in>(prm::ENABLE_HCA), 16)));
  const DeviceConfig c;
  using Gen = prm::cmd_hca_cap_bits<prm::query_hca_cap_out::capability.bit_offset>;
  using Atomic = prm::atomic_caps_bits<prm::query_hca_cap_out::capability.bit_offset>;
  using Roce = prm::roce_cap_bits<prm::query_hca_cap_out::capability.bit_offset>;
  auto query = [&](prm::CapType t, prm::CapMode m) {
    return Exec(prm::CommandIn<prm::query_hca_cap_in>(prm::QUERY_HCA_CAP, prm::QueryCapOpMod(t, m)),
                4112);
  };
  auto gen = query(prm::CAP_GENERAL, prm::HCA_CAP_OPMOD_GET_CUR);
  ASSERT_TRUE(Ok(gen));
  EXPECT_EQ(gen.get(Gen::log_max_qp), c.log_max_qp);
  EXPECT_EQ(gen.get(Gen::log_max_qp_sz), c.log_max_qp_sz);
  EXPECT_EQ(gen.get(Gen::log_max_srq), c.log_max_srq);
  EXPECT_EQ(gen.get(Gen::log_max_srq_sz), c.log_max_srq_sz);
  EXPECT_EQ(gen.get(Gen::max_wqe_sz_sq), c.max_wqe_sz_sq);
  EXPECT_EQ(gen.get(Gen::max_wqe_sz_rq), c.max_wqe_sz_rq);
  EXPECT_EQ(gen.get(Gen::log_max_msg), c.log_max_msg);
  EXPECT_EQ(gen.get(Gen::log_max_ra_req_qp), c.log_max_ra_req_qp);
  EXPECT_EQ(gen.get(Gen::log_max_ra_res_qp), c.log_max_ra_res_qp);
  EXPECT_EQ(gen.get(Gen::num_ports), c.num_ports);
  EXPECT_EQ(gen.get(Gen::rc), 1u);
  EXPECT_EQ(gen.get(Gen::uc), 1u);
  EXPECT_EQ(gen.get(Gen::ud), 1u);
  EXPECT_EQ(gen.get(Gen::xrc), 1u);
  EXPECT_EQ(gen.get(Gen::log_max_xrcd), c.log_max_xrcd);
  EXPECT_EQ(gen.get(Gen::atomic), 1u);
  EXPECT_EQ(query(prm::CAP_ROCE, prm::HCA_CAP_OPMOD_GET_CUR).get(Roce::roce_address_table_size),
            c.roce_address_table_size);

  auto amax = query(prm::CAP_ATOMIC, prm::HCA_CAP_OPMOD_GET_MAX);
  ASSERT_TRUE(Ok(amax));
  EXPECT_EQ(amax.get(Atomic::atomic_operations),
            uint32_t{prm::ATOMIC_OPS_CMP_SWAP | prm::ATOMIC_OPS_FETCH_ADD});
  EXPECT_EQ(amax.get(Atomic::atomic_size_qp), uint32_t{prm::ATOMIC_SIZE_QP_8BYTES});
  EXPECT_EQ(amax.get(Atomic::supported_atomic_req_8B_endianness_mode_1), 1u);
  auto acur = query(prm::CAP_ATOMIC, prm::HCA_CAP_OPMOD_GET_CUR);
  EXPECT_EQ(acur.get(Atomic::atomic_req_8B_endianness_mode), 0u);  // until the driver sets it
  using SetAtomic = prm::atomic_caps_bits<prm::set_hca_cap_in::capability.bit_offset>;
  auto set =
      prm::CommandIn<prm::set_hca_cap_in>(prm::SET_HCA_CAP, prm::SetCapOpMod(prm::CAP_ATOMIC));
  std::copy(acur.out.begin() + 16, acur.out.end(), set.bytes().begin() + 16);
  set.set(SetAtomic::atomic_req_8B_endianness_mode, 1);
  set.set(SetAtomic::atomic_size_qp, 0xffff);  // not writable: ignored
  ASSERT_TRUE(Ok(Exec(set, 16)));
  acur = query(prm::CAP_ATOMIC, prm::HCA_CAP_OPMOD_GET_CUR);
  EXPECT_EQ(acur.get(Atomic::atomic_req_8B_endianness_mode), 1u);
  EXPECT_EQ(acur.get(Atomic::atomic_size_qp), uint32_t{prm::ATOMIC_SIZE_QP_8BYTES});
  set.set(SetAtomic::atomic_req_8B_endianness_mode, 2);  // above MAX
  EXPECT_TRUE(Refused(Exec(set, 16), CommandStatus::BAD_PARAM_ERR, Syndrome::CAP_ABOVE_MAX));
}

TEST_F(HcaTest, DeviceWithoutMemicOrSwIcmSaysSo) {
  DeviceConfig c;
  c.memic = false;
  c.sw_icm = false;
  auto d = Device::Create(c);
  ASSERT_TRUE(d);
  CommandWriter w(**d);
  ASSERT_TRUE(w.Run(prm::CommandIn<prm::enable_hca_in>(prm::ENABLE_HCA).bytes(), 16)->ok());
  using Mem = prm::device_mem_cap_bits<prm::query_hca_cap_out::capability.bit_offset>;
  using Gen = prm::cmd_hca_cap_bits<prm::query_hca_cap_out::capability.bit_offset>;
  auto mem = w.Run(prm::CommandIn<prm::query_hca_cap_in>(prm::QUERY_HCA_CAP, 0x1f).bytes(), 4112);
  ASSERT_TRUE(mem && mem->ok());
  EXPECT_EQ(mem->get(Mem::memic), 0u);
  EXPECT_EQ(mem->get(Mem::steering_sw_icm_start_address), 0u);
  auto gen = w.Run(prm::CommandIn<prm::query_hca_cap_in>(prm::QUERY_HCA_CAP, 1).bytes(), 4112);
  EXPECT_EQ(gen->get(Gen::device_memory), 0u);
  EXPECT_EQ(gen->get(Gen::general_obj_types), 0u);
  EXPECT_EQ((*d)->bar0().size, (*d)->layout().msix_end);  // UARs, then the MSI-X (ST) table
}

TEST_F(HcaTest, SetHcaCapChangesWritableFieldsOnly) {
  ASSERT_TRUE(Ok(Exec(prm::CommandIn<prm::enable_hca_in>(prm::ENABLE_HCA), 16)));
  using Set = prm::cmd_hca_cap_bits<prm::set_hca_cap_in::capability.bit_offset>;
  using Gen = prm::cmd_hca_cap_bits<prm::query_hca_cap_out::capability.bit_offset>;
  auto cur = Exec(prm::CommandIn<prm::query_hca_cap_in>(prm::QUERY_HCA_CAP, 1), 4112);
  auto set =
      prm::CommandIn<prm::set_hca_cap_in>(prm::SET_HCA_CAP, prm::SetCapOpMod(prm::CAP_GENERAL));
  std::copy(cur.out.begin() + 16, cur.out.end(), set.bytes().begin() + 16);
  set.set(Set::uar_4k, 1);
  set.set(Set::log_max_pd, 3);  // not writable: ignored
  ASSERT_TRUE(Ok(Exec(set, 16)));
  auto after = Exec(prm::CommandIn<prm::query_hca_cap_in>(prm::QUERY_HCA_CAP, 1), 4112);
  EXPECT_EQ(after.get(Gen::uar_4k), 1u);
  EXPECT_EQ(after.get(Gen::log_max_pd), DeviceConfig{}.log_max_pd);

  set.set(Set::cmdif_checksum, 1);  // MAX is 0: not supported
  EXPECT_TRUE(Refused(Exec(set, 16), CommandStatus::BAD_PARAM_ERR, Syndrome::CAP_ABOVE_MAX));
  auto devmem =
      prm::CommandIn<prm::set_hca_cap_in>(prm::SET_HCA_CAP, prm::SetCapOpMod(prm::CAP_DEV_MEM));
  EXPECT_TRUE(Refused(Exec(devmem, 16), CommandStatus::BAD_PARAM_ERR, Syndrome::CAP_NOT_SETTABLE));
  auto odd = prm::CommandIn<prm::set_hca_cap_in>(prm::SET_HCA_CAP, 1);
  EXPECT_TRUE(Refused(Exec(odd, 16), CommandStatus::BAD_PARAM_ERR, Syndrome::BAD_OP_MOD));
  // Too short an input: the capability page is part of the layout.
  EXPECT_TRUE(Refused(Exec(prm::CommandIn<prm::query_hca_cap_in>(prm::SET_HCA_CAP), 16),
                      CommandStatus::BAD_INP_LEN_ERR, Syndrome::INPUT_TOO_SHORT));
  // After INIT_HCA capabilities are fixed.
  ASSERT_TRUE(Ok(*w_->GivePages(DeviceConfig{}.boot_pages + DeviceConfig{}.init_pages)));
  ASSERT_TRUE(Ok(Exec(prm::CommandIn<prm::init_hca_in>(prm::INIT_HCA), 16)));
  set.set(Set::cmdif_checksum, 0);
  EXPECT_TRUE(Refused(Exec(set, 16), CommandStatus::BAD_SYS_STATE_ERR, Syndrome::WRONG_STATE));
}

TEST_F(HcaTest, AccessRegHostEndianness) {
  ASSERT_TRUE(Ok(Exec(prm::CommandIn<prm::enable_hca_in>(prm::ENABLE_HCA), 16)));
  using RegIn = prm::register_host_endianness_bits<prm::access_register_in::register_data.bit_offset>;
  using RegOut =
      prm::register_host_endianness_bits<prm::access_register_out::register_data.bit_offset>;
  auto wr = prm::CommandIn<prm::access_register_in>(prm::ACCESS_REG, prm::ACCESS_REG_WRITE, 16);
  wr.set(prm::access_register_in::register_id, prm::REG_HOST_ENDIANNESS);
  prm::Bits(wr.bytes()).set(RegIn::he, 1);
  ASSERT_TRUE(Ok(Exec(wr, 32)));
  auto rd = prm::CommandIn<prm::access_register_in>(prm::ACCESS_REG, prm::ACCESS_REG_READ, 16);
  rd.set(prm::access_register_in::register_id, prm::REG_HOST_ENDIANNESS);
  auto r = Exec(rd, 32);
  ASSERT_TRUE(Ok(r));
  EXPECT_EQ(r.get(RegOut::he), 1u);
  EXPECT_EQ(sim_->firmware().host_endianness(), 1u);
  auto other = prm::CommandIn<prm::access_register_in>(prm::ACCESS_REG, prm::ACCESS_REG_READ, 16);
  other.set(prm::access_register_in::register_id, 0x5001);
  EXPECT_TRUE(Refused(Exec(other, 32), CommandStatus::BAD_PARAM_ERR,
                      Syndrome::REGISTER_UNSUPPORTED));
  auto arg = prm::CommandIn<prm::access_register_in>(prm::ACCESS_REG, prm::ACCESS_REG_READ, 16);
  arg.set(prm::access_register_in::register_id, prm::REG_HOST_ENDIANNESS)
      .set(prm::access_register_in::argument, 1);
  EXPECT_TRUE(Refused(Exec(arg, 32), CommandStatus::BAD_PARAM_ERR, Syndrome::REGISTER_ARGUMENT));
  wr.bytes()[16 + 3] = std::byte{1};  // a reserved bit of the register
  EXPECT_TRUE(Refused(Exec(wr, 32), CommandStatus::BAD_PARAM_ERR, Syndrome::RESERVED_NOT_ZERO));
  auto short_in = prm::CommandIn<prm::access_register_in>(prm::ACCESS_REG, prm::ACCESS_REG_WRITE);
  short_in.set(prm::access_register_in::register_id, prm::REG_HOST_ENDIANNESS);
  EXPECT_TRUE(
      Refused(Exec(short_in, 32), CommandStatus::BAD_INP_LEN_ERR, Syndrome::INPUT_TOO_SHORT));
}

TEST_F(HcaTest, TeardownGracefulRefusesLiveObjectsForceFreesThem) {
  BringUp();
  ASSERT_TRUE(Ok(Exec(prm::CommandIn<prm::alloc_pd_in>(prm::ALLOC_PD), 16)));
  ASSERT_TRUE(Ok(Exec(prm::CommandIn<prm::alloc_uar_in>(prm::ALLOC_UAR), 16)));
  EXPECT_TRUE(Refused(Exec(prm::CommandIn<prm::teardown_hca_in>(prm::TEARDOWN_HCA), 16),
                      CommandStatus::RES_BUSY, Syndrome::TEARDOWN_BUSY));
  auto fast = prm::CommandIn<prm::teardown_hca_in>(prm::TEARDOWN_HCA);
  fast.set(prm::teardown_hca_in::profile, prm::TEARDOWN_HCA_PREPARE_FAST_TEARDOWN);
  EXPECT_TRUE(Refused(Exec(fast, 16), CommandStatus::BAD_PARAM_ERR, Syndrome::TEARDOWN_PROFILE));
  auto force = prm::CommandIn<prm::teardown_hca_in>(prm::TEARDOWN_HCA);
  force.set(prm::teardown_hca_in::profile, prm::TEARDOWN_HCA_FORCE_CLOSE);
  auto r = Exec(force, 16);
  ASSERT_TRUE(Ok(r));
  EXPECT_EQ(r.get(prm::teardown_hca_out::state), 0u);
  const auto c = sim_->counters();
  EXPECT_EQ(c.pds, 0u);
  EXPECT_EQ(c.uars, 0u);
  EXPECT_EQ(sim_->firmware().state(), HcaState::kEnabled);
  // And the HCA can come up again.
  ASSERT_TRUE(Ok(Exec(prm::CommandIn<prm::init_hca_in>(prm::INIT_HCA), 16)));
}

TEST_F(HcaTest, SetDriverVersionAndNop) {
  BringUp();
  auto v = prm::CommandIn<prm::set_driver_version_in>(prm::SET_DRIVER_VERSION);
  const char name[] = "onchip,sim-test,1.0";
  for (std::size_t i = 0; i < sizeof name - 1; ++i)
    v.set(prm::set_driver_version_in::driver_version[i], static_cast<uint8_t>(name[i]));
  ASSERT_TRUE(Ok(Exec(v, 16)));
  EXPECT_EQ(sim_->firmware().driver_version(), name);
  v.set(prm::set_driver_version_in::reserved_2, 1);
  EXPECT_TRUE(Refused(Exec(v, 16), CommandStatus::BAD_PARAM_ERR, Syndrome::RESERVED_NOT_ZERO));
  ASSERT_TRUE(Ok(Exec(prm::CommandIn<prm::nop_in>(prm::NOP), 16)));
  EXPECT_TRUE(Refused(Exec(prm::CommandIn<prm::nop_in>(prm::NOP, 1), 16),
                      CommandStatus::BAD_PARAM_ERR, Syndrome::BAD_OP_MOD));
}

TEST_F(HcaTest, UnknownOpcodeIsBadOp) {
  BringUp();
  auto r = Exec(prm::CommandIn<prm::nop_in>(0x7ff), 16);
  EXPECT_TRUE(Refused(r, CommandStatus::BAD_OP_ERR, Syndrome::BAD_OPCODE));
  EXPECT_TRUE(Refused(Exec(prm::CommandIn<prm::nop_in>(prm::QUERY_SPECIAL_CONTEXTS), 16),
                      CommandStatus::BAD_OP_ERR, Syndrome::BAD_OPCODE));
}

TEST_F(HcaTest, DisableHcaOnlyAfterTeardown) {
  BringUp();
  EXPECT_TRUE(Refused(Exec(prm::CommandIn<prm::disable_hca_in>(prm::DISABLE_HCA), 16),
                      CommandStatus::BAD_SYS_STATE_ERR, Syndrome::WRONG_STATE));
  ASSERT_TRUE(Ok(Exec(prm::CommandIn<prm::teardown_hca_in>(prm::TEARDOWN_HCA), 16)));
  ASSERT_TRUE(Ok(Exec(prm::CommandIn<prm::disable_hca_in>(prm::DISABLE_HCA), 16)));
  EXPECT_TRUE(Refused(Exec(prm::CommandIn<prm::nop_in>(prm::NOP), 16),
                      CommandStatus::BAD_SYS_STATE_ERR, Syndrome::WRONG_STATE));
}

// The NIC vport's state is the port's link: up from the start, down and up again as the link
// goes; only this function's own vport (op_mod 0) or the uplink (op_mod 2) can be asked for.
TEST_F(HcaTest, QueryVportStateFollowsTheLink) {
  auto state = [&] {
    const auto out = Exec(prm::CommandIn<prm::query_vport_state_in>(prm::QUERY_VPORT_STATE), 16);
    EXPECT_TRUE(Ok(out));
    return out.get(prm::query_vport_state_out::state);
  };
  EXPECT_TRUE(Refused(Exec(prm::CommandIn<prm::query_vport_state_in>(prm::QUERY_VPORT_STATE), 16),
                      CommandStatus::BAD_SYS_STATE_ERR, Syndrome::WRONG_STATE));
  BringUp();
  EXPECT_EQ(state(), 1u);
  const auto uplink =
      Exec(prm::CommandIn<prm::query_vport_state_in>(prm::QUERY_VPORT_STATE, 2), 16);
  ASSERT_TRUE(Ok(uplink));
  EXPECT_EQ(uplink.get(prm::query_vport_state_out::admin_state), 1u);
  sim_->SetLinkUp(false);
  EXPECT_EQ(state(), 0u);
  sim_->SetLinkUp(true);
  EXPECT_EQ(state(), 1u);
  EXPECT_TRUE(
      Refused(Exec(prm::CommandIn<prm::query_vport_state_in>(prm::QUERY_VPORT_STATE, 1), 16),
              CommandStatus::BAD_PARAM_ERR, Syndrome::BAD_OP_MOD));
  auto other = prm::CommandIn<prm::query_vport_state_in>(prm::QUERY_VPORT_STATE);
  other.set(prm::query_vport_state_in::other_vport, 1).set(prm::query_vport_state_in::vport_number, 1);
  EXPECT_TRUE(Refused(Exec(other, 16), CommandStatus::BAD_PARAM_ERR, Syndrome::CAP_OTHER_FUNCTION));
}

}  // namespace
}  // namespace onchip::sim::testing
