// Test-side builders for the EQ and CQ commands: a fixture that brings the HCA up, allocates
// UARs, and writes CREATE_EQ / CREATE_CQ inputs whose queue pages lie in the command writer's
// DMA arena (mapped in the IOMMU), so each test changes one field and checks the one refusal.
#pragma once

#include <cstdint>

#include "tests/device/sim/sim_fixture.h"
#include "uapi/prm/cmd_layout.h"
#include "uapi/prm/cq.h"
#include "uapi/prm/eq.h"
#include "uapi/prm/opcodes.h"
#include "uapi/prm/resources.h"

namespace onchip::sim::testing {

class QueueTest : public SimTest {
 protected:
  // Queue pages and doorbell records: the top 2 MiB of the arena, which neither the cmdq, the
  // mailbox pool nor the pages given with MANAGE_PAGES reach.
  static constexpr uint64_t kQueueIova = CommandWriter::kArenaIova + (6 << 20);
  static constexpr uint64_t kDbrIova = CommandWriter::kArenaIova + (8 << 20) - 4096;
  // An IOVA no mapping covers.
  static constexpr uint64_t kUnmappedIova = uint64_t{0x7} << 36;

  void SetUp() override {
    SimTest::SetUp();
    BringUp();
    uar_ = AllocUar(0);
  }

  uint32_t AllocUar(uint16_t uid) {
    auto in = Cmd<prm::alloc_uar_in>(prm::ALLOC_UAR);
    in.set(prm::alloc_uar_in::uid, uid);
    auto r = Exec(in, 16);
    EXPECT_TRUE(Ok(r));
    return static_cast<uint32_t>(r.get(prm::alloc_uar_out::uar));
  }

  // CREATE_EQ of 2^log_size EQEs in `pages` pages of 4 KiB << log_page_size from kQueueIova.
  prm::Message<prm::create_eq_in> EqIn(uint32_t log_size = 7, uint32_t pages = 2,
                                       uint32_t log_page_size = 0, uint16_t uid = 0) {
    using In = prm::create_eq_in;
    auto in = Cmd<In>(prm::CREATE_EQ, 0, 8 * pages);
    in.set(In::uid, uid)
        .set(In::eq_context_entry.log_eq_size, log_size)
        .set(In::eq_context_entry.uar_page, uar_)
        .set(In::eq_context_entry.intr, 1)
        .set(In::eq_context_entry.log_page_size, log_page_size)
        .set(In::event_bitmask[0], 1);  // completion events
    for (uint32_t i = 0; i < pages; ++i)
      in.set(In::pas[i], kQueueIova + (uint64_t{i} << (12 + log_page_size)));
    return in;
  }
  Reply CreateEq(const prm::Message<prm::create_eq_in>& in) { return Exec(in, 16); }
  uint32_t NewEq() {
    auto r = CreateEq(EqIn());
    EXPECT_TRUE(Ok(r));
    return static_cast<uint32_t>(r.get(prm::create_eq_out::eq_number));
  }
  Reply DestroyEq(uint32_t eqn, uint16_t uid = 0) {
    auto in = Cmd<prm::destroy_eq_in>(prm::DESTROY_EQ);
    in.set(prm::destroy_eq_in::eq_number, eqn).set(prm::mbox_in::uid, uid);
    return Exec(in, 16);
  }
  Reply QueryEq(uint32_t eqn, std::size_t pas = 8) {
    auto in = Cmd<prm::query_eq_in>(prm::QUERY_EQ);
    in.set(prm::query_eq_in::eq_number, eqn);
    return Exec(in, prm::size_bytes<prm::query_eq_out> + 8 * pas);
  }

  // CREATE_CQ of 2^log_size 64-byte CQEs on `eqn` in `pages` 4 KiB pages from kQueueIova.
  prm::Message<prm::create_cq_in> CqIn(uint32_t eqn, uint32_t log_size = 7, uint32_t pages = 2,
                                       uint16_t uid = 0) {
    using In = prm::create_cq_in;
    auto in = Cmd<In>(prm::CREATE_CQ, 0, 8 * pages);
    in.set(In::uid, uid)
        .set(In::cq_context.log_cq_size, log_size)
        .set(In::cq_context.uar_page, uar_)
        .set(In::cq_context.c_eqn_or_apu_element, eqn)
        .set(In::cq_context.dbr_addr, kDbrIova);
    for (uint32_t i = 0; i < pages; ++i) in.set(In::pas[i], kQueueIova + uint64_t{i} * 4096);
    return in;
  }
  Reply CreateCq(const prm::Message<prm::create_cq_in>& in) { return Exec(in, 16); }
  uint32_t NewCq(uint32_t eqn) {
    auto r = CreateCq(CqIn(eqn));
    EXPECT_TRUE(Ok(r));
    return static_cast<uint32_t>(r.get(prm::create_cq_out::cqn));
  }
  Reply DestroyCq(uint32_t cqn, uint16_t uid = 0) {
    auto in = Cmd<prm::destroy_cq_in>(prm::DESTROY_CQ);
    in.set(prm::destroy_cq_in::cqn, cqn).set(prm::destroy_cq_in::uid, uid);
    return Exec(in, 16);
  }
  Reply QueryCq(uint32_t cqn, std::size_t pas = 8) {
    auto in = Cmd<prm::query_cq_in>(prm::QUERY_CQ);
    in.set(prm::query_cq_in::cqn, cqn);
    return Exec(in, prm::size_bytes<prm::query_cq_out> + 8 * pas);
  }

  uint32_t uar_ = 0;
};

}  // namespace onchip::sim::testing
