// The data path under sustained mixed load on one software ConnectX: several threads, each with
// RC queue pairs and a UD pair of its own, run a fixed number of operations drawn at random
// (RDMA WRITE and READ, SEND with immediate, fetch-and-add, UD sends through an AH) on host and
// device memory, with type 2 window bind / use / invalidate churn and queue pairs driven to the
// error state and recovered (to RESET, then connected again).
//
// What it proves: every posted work request completes exactly once, with success or the error
// the scenario calls for (remote access after invalidation, flush after the error state); every
// byte that lands is the byte sent (compared in full, DM read back through ibv_memcpy_from_dm);
// atomics add up; the device and the driver hold nothing afterwards (the fixture's teardown).
// Tagged tsan: the same run under ThreadSanitizer finds no race.
//
// The short version runs in the normal tier; soak_long_test is the same test with more
// operations (ONCHIP_SOAK_OPS), run on demand (README).
#include <endian.h>
#include <gtest/gtest.h>
#include <infiniband/verbs.h>

#include <atomic>
#include <cstdio>
#include <chrono>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "driver/rings/data_path.h"
#include "tests/device/fixture.h"
#include "tools/testing/rc_connect.h"
#include "tools/sim/wire.h"

#ifndef ONCHIP_SOAK_OPS
#define ONCHIP_SOAK_OPS 300  // per thread
#endif

namespace onchip::testing {
namespace {

namespace rings = driver::rings;

constexpr int kThreads = 8;
constexpr int kPairs = 2;             // RC pairs per thread
constexpr uint32_t kSlot = 256;       // bytes per operation's region
constexpr uint32_t kSlots = 8;        // regions per buffer: at most this many operations in flight
constexpr uint32_t kBytes = kSlot * kSlots;
constexpr uint32_t kCounterOffset = kBytes - 8;  // the atomic counter: the last slot's last word
constexpr uint32_t kQkey = 0x11110000;
constexpr uint8_t kGidIndex = 2;      // RoCE v2, ::ffff:a.b.c.d
constexpr unsigned kAccess = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                             IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_MW_BIND;

// What one thread did, for the summary and the checks.
struct Tally {
  uint64_t posted = 0, completed = 0, errors_expected = 0, recoveries = 0, binds = 0, bytes = 0;
};

// What a posted work request must complete with.
struct Expect {
  ibv_wc_status status;
  ibv_wc_opcode opcode;
};

class SoakTest : public DriverTest {
 protected:
  sim::DeviceConfig Config() const override {
    sim::DeviceConfig c;
    c.memic_bar_size = 256 * 1024;
    c.max_memic_size = 256 * 1024;
    return c;
  }
};

// One thread's queues and memory. Everything it touches is its own: the threads share only the
// device, the context and the PD.
class Worker {
 public:
  Worker(ibv_context* ctx, ibv_pd* pd, const ibv_gid& gid, int index)
      : ctx_(ctx), pd_(pd), gid_(gid), rng_(0x50a4u + static_cast<unsigned>(index)) {}

  // Creates and connects everything; false (with a gtest failure) when something is missing.
  bool Setup() {
    cq_ = v::create_cq(ctx_, 256, nullptr, 0);
    if (!cq_) return Failed("create_cq");
    for (int p = 0; p < kPairs; ++p)
      for (int side = 0; side < 2; ++side) {
        ibv_qp_init_attr a{};
        a.send_cq = a.recv_cq = cq_;
        a.qp_type = IBV_QPT_RC;
        a.cap.max_send_wr = a.cap.max_recv_wr = 2 * kSlots;
        a.cap.max_send_sge = a.cap.max_recv_sge = 1;
        rc_[p][side] = v::create_qp(pd_, &a);
        if (!rc_[p][side]) return Failed("create_qp RC");
      }
    for (int side = 0; side < 2; ++side) {
      ibv_qp_init_attr a{};
      a.send_cq = a.recv_cq = cq_;
      a.qp_type = IBV_QPT_UD;
      a.cap.max_send_wr = a.cap.max_recv_wr = kSlots;
      a.cap.max_send_sge = a.cap.max_recv_sge = 1;
      ud_[side] = v::create_qp(pd_, &a);
      if (!ud_[side]) return Failed("create_qp UD");
    }
    for (int i = 0; i < 2; ++i) {
      host_[i].assign(kBytes, std::byte{0});
      host_mr_[i] = v::reg_mr(pd_, host_[i].data(), kBytes, reinterpret_cast<uintptr_t>(host_[i].data()), kAccess);
      if (!host_mr_[i]) return Failed("reg_mr");
      ibv_alloc_dm_attr da{.length = kBytes, .log_align_req = 6, .comp_mask = 0};
      dm_[i] = v::alloc_dm(ctx_, &da);
      if (!dm_[i]) return Failed("alloc_dm");
      dm_mr_[i] = v::reg_dm_mr(pd_, dm_[i], 0, kBytes, (kAccess & ~IBV_ACCESS_MW_BIND) | IBV_ACCESS_ZERO_BASED);
      if (!dm_mr_[i]) return Failed("reg_dm_mr");
      std::vector<std::byte> zero(kBytes);
      if (ibv_memcpy_to_dm(dm_[i], 0, zero.data(), kBytes) != 0) return Failed("memcpy_to_dm");
    }
    ud_buf_.assign(kSlots * (40 + kSlot), std::byte{0});
    ud_mr_ = v::reg_mr(pd_, ud_buf_.data(), ud_buf_.size(), reinterpret_cast<uintptr_t>(ud_buf_.data()), kAccess);
    if (!ud_mr_) return Failed("reg_mr UD");
    mw_ = v::alloc_mw(pd_, IBV_MW_TYPE_2);
    if (!mw_) return Failed("alloc_mw");
    for (int p = 0; p < kPairs; ++p)
      if (!ConnectPair(p)) return false;
    if (!ConnectUd()) return false;
    ibv_ah_attr ah{};
    ah.is_global = 1;
    ah.port_num = 1;
    ah.grh.dgid = gid_;
    ah.grh.sgid_index = kGidIndex;
    ah.grh.hop_limit = 64;
    ah_ = v::create_ah(pd_, &ah);
    if (!ah_) return Failed("create_ah");
    return true;
  }

  void Run(int ops) {
    for (int done = 0; done < ops && !::testing::Test::HasFailure();) {
      const uint32_t pick = rng_() % 100;
      if (pick < 4) {
        WindowChurn(static_cast<int>(rng_() % kPairs));
        done += 4;
      } else if (pick < 7) {
        ErrorAndRecover(static_cast<int>(rng_() % kPairs));
        done += 3;
      } else if (pick < 17) {
        UdBatch();
        done += 1;
      } else {
        done += RcBatch(static_cast<int>(rng_() % kPairs));
      }
    }
  }

  void Teardown() {
    if (ah_) {
      EXPECT_EQ(v::destroy_ah(ah_), 0);
    }
    if (mw_) {
      EXPECT_EQ(v::dealloc_mw(mw_), 0);
    }
    for (auto& pair : rc_)
      for (ibv_qp* q : pair)
        if (q) {
          EXPECT_EQ(v::destroy_qp(q), 0);
        }
    for (ibv_qp* q : ud_)
      if (q) {
        EXPECT_EQ(v::destroy_qp(q), 0);
      }
    if (ud_mr_) {
      EXPECT_EQ(v::dereg_mr(ud_mr_), 0);
    }
    for (int i = 0; i < 2; ++i) {
      if (host_mr_[i]) {
        EXPECT_EQ(v::dereg_mr(host_mr_[i]), 0);
      }
      if (dm_mr_[i]) {
        EXPECT_EQ(v::dereg_mr(dm_mr_[i]), 0);
      }
      if (dm_[i]) {
        EXPECT_EQ(v::free_dm(dm_[i]), 0);
      }
    }
    if (cq_) {
      EXPECT_EQ(v::destroy_cq(cq_), 0);
    }
  }

  const Tally& tally() const { return tally_; }

 private:
  bool Failed(const char* what) {
    ADD_FAILURE() << what << ": " << std::strerror(errno);
    return false;
  }

  bool Modify(ibv_qp* q, ibv_qp_attr& a, int mask, const char* what) {
    const int rc = v::modify_qp(q, &a, mask);
    if (rc != 0) ADD_FAILURE() << what << ": " << std::strerror(rc);
    return rc == 0;
  }

  bool ConnectRc(ibv_qp* q, uint32_t dest) {
    const RcPath path{.dgid = gid_, .sgid_index = kGidIndex, .rd_atomic = 4,
                      .access = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC};
    const RcConnectResult r = testing::ConnectRc(q, dest, path);
    if (!r) ADD_FAILURE() << r.describe();
    return bool(r);
  }

  bool ConnectPair(int p) {
    return ConnectRc(rc_[p][0], rc_[p][1]->qp_num) && ConnectRc(rc_[p][1], rc_[p][0]->qp_num);
  }

  bool ConnectUd() {
    for (ibv_qp* q : ud_) {
      ibv_qp_attr a{};
      a.qp_state = IBV_QPS_INIT;
      a.port_num = 1;
      a.qkey = kQkey;
      if (!Modify(q, a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY, "UD to INIT")) return false;
      a = {};
      a.qp_state = IBV_QPS_RTR;
      if (!Modify(q, a, IBV_QP_STATE, "UD to RTR")) return false;
      a.qp_state = IBV_QPS_RTS;
      if (!Modify(q, a, IBV_QP_STATE | IBV_QP_SQ_PSN, "UD to RTS")) return false;
    }
    return true;
  }

  // Both QPs of the pair to RESET and connected again, as an application recovers a connection.
  bool Recover(int p) {
    for (ibv_qp* q : rc_[p]) {
      ibv_qp_attr a{};
      a.qp_state = IBV_QPS_RESET;
      if (!Modify(q, a, IBV_QP_STATE, "to RESET")) return false;
    }
    ++tally_.recoveries;
    return ConnectPair(p);
  }

  void Fill(std::byte* p, uint32_t n) {
    for (uint32_t i = 0; i < n; ++i) p[i] = static_cast<std::byte>(rng_());
  }

  bool PostSend(ibv_qp* q, ibv_send_wr& wr, Expect e) {
    wr.wr_id = next_id_++;
    wr.send_flags |= IBV_SEND_SIGNALED;
    ibv_send_wr* bad = nullptr;
    const int rc = rings::PostSend(q, &wr, &bad);
    if (rc != 0) {
      ADD_FAILURE() << "post_send: " << std::strerror(rc);
      return false;
    }
    outstanding_[wr.wr_id] = e;
    ++tally_.posted;
    return true;
  }

  bool PostRecv(ibv_qp* q, ibv_sge sge, Expect e) {
    ibv_recv_wr wr{};
    wr.wr_id = next_id_++;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    ibv_recv_wr* bad = nullptr;
    const int rc = rings::PostRecv(q, &wr, &bad);
    if (rc != 0) {
      ADD_FAILURE() << "post_recv: " << std::strerror(rc);
      return false;
    }
    outstanding_[wr.wr_id] = e;
    ++tally_.posted;
    return true;
  }

  // Polls until every outstanding work request completed, each exactly once and as expected.
  // Returns the completions for the caller's data checks.
  std::vector<ibv_wc> Drain() {
    std::vector<ibv_wc> got;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (!outstanding_.empty()) {
      if (std::chrono::steady_clock::now() > deadline) {
        ADD_FAILURE() << outstanding_.size() << " work request(s) never completed, first wr_id "
                      << outstanding_.begin()->first;
        outstanding_.clear();
        break;
      }
      ibv_wc wc[16];
      const int n = rings::PollCq(cq_, 16, wc);
      if (n < 0) {
        ADD_FAILURE() << "poll_cq: " << n;
        break;
      }
      for (int i = 0; i < n; ++i) {
        auto it = outstanding_.find(wc[i].wr_id);
        if (it == outstanding_.end()) {
          ADD_FAILURE() << "a completion for wr_id " << wc[i].wr_id
                        << ", which is not outstanding (unknown or completed twice)";
          continue;
        }
        EXPECT_EQ(wc[i].status, it->second.status)
            << "wr_id " << wc[i].wr_id << ": " << ibv_wc_status_str(wc[i].status)
            << " (vendor_err " << wc[i].vendor_err << ")";
        if (wc[i].status == IBV_WC_SUCCESS) {
          EXPECT_EQ(wc[i].opcode, it->second.opcode);
        }
        if (it->second.status != IBV_WC_SUCCESS) ++tally_.errors_expected;
        outstanding_.erase(it);
        ++tally_.completed;
        got.push_back(wc[i]);
      }
    }
    return got;
  }

  // The bytes at [off, off + n) of side `i`'s host or device buffer. Device memory is copied in
  // whole 4-byte words (ibv_memcpy_*_dm refuse anything else, EINVAL), so a DM access covers the
  // enclosing words and a write keeps the bytes around the range.
  std::vector<std::byte> Read(int i, bool dm, uint32_t off, uint32_t n) {
    if (!dm) return {host_[i].begin() + off, host_[i].begin() + off + n};
    const uint32_t first = off & ~3u, last = (off + n + 3) & ~3u;
    std::vector<std::byte> words(last - first);
    EXPECT_EQ(ibv_memcpy_from_dm(words.data(), dm_[i], first, words.size()), 0);
    return {words.begin() + (off - first), words.begin() + (off - first) + n};
  }
  void Write(int i, bool dm, uint32_t off, const std::byte* p, uint32_t n) {
    if (!dm) {
      std::memcpy(host_[i].data() + off, p, n);
      return;
    }
    const uint32_t first = off & ~3u, last = (off + n + 3) & ~3u;
    std::vector<std::byte> words = Read(i, true, first, last - first);
    std::memcpy(words.data() + (off - first), p, n);
    EXPECT_EQ(ibv_memcpy_to_dm(dm_[i], first, words.data(), words.size()), 0);
  }
  ibv_sge Sge(int i, bool dm, uint32_t off, uint32_t n) {
    return dm ? ibv_sge{.addr = off, .length = n, .lkey = dm_mr_[i]->lkey}
              : ibv_sge{.addr = reinterpret_cast<uint64_t>(host_[i].data() + off), .length = n,
                        .lkey = host_mr_[i]->lkey};
  }
  uint64_t Addr(int i, bool dm, uint32_t off) {
    return dm ? off : reinterpret_cast<uint64_t>(host_[i].data() + off);
  }
  uint32_t Rkey(int i, bool dm) { return dm ? dm_mr_[i]->rkey : host_mr_[i]->rkey; }

  // Up to kSlots - 1 operations from side 0 to side 1 of pair p, each on its own slot (the last
  // slot holds the counter), then every completion and every byte checked.
  int RcBatch(int p) {
    struct Op {
      int kind;  // 0 write, 1 read, 2 send, 3 fetch-and-add
      bool local_dm, remote_dm;
      uint32_t slot, len;
      std::vector<std::byte> data;
    };
    std::vector<Op> ops(1 + rng_() % (kSlots - 1));
    bool counter_used = false;
    for (uint32_t s = 0; s < ops.size(); ++s) {
      Op& op = ops[s];
      op.kind = static_cast<int>(rng_() % 4);
      if (op.kind == 3 && counter_used) op.kind = 0;
      op.local_dm = rng_() % 3 == 0;
      op.remote_dm = rng_() % 2 == 0;
      op.slot = s;
      op.len = op.kind == 3 ? 8 : 1 + rng_() % kSlot;
      const uint32_t off = op.slot * kSlot;
      ibv_send_wr wr{};
      ibv_sge sge = Sge(0, op.local_dm, off, op.len);
      wr.sg_list = &sge;
      wr.num_sge = 1;
      op.data.resize(op.len);
      Fill(op.data.data(), op.len);
      switch (op.kind) {
        case 0:
          Write(0, op.local_dm, off, op.data.data(), op.len);
          wr.opcode = IBV_WR_RDMA_WRITE;
          wr.wr.rdma = {.remote_addr = Addr(1, op.remote_dm, off), .rkey = Rkey(1, op.remote_dm)};
          if (!PostSend(rc_[p][0], wr, {IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE})) return 1;
          break;
        case 1:
          Write(1, op.remote_dm, off, op.data.data(), op.len);
          wr.opcode = IBV_WR_RDMA_READ;
          wr.wr.rdma = {.remote_addr = Addr(1, op.remote_dm, off), .rkey = Rkey(1, op.remote_dm)};
          if (!PostSend(rc_[p][0], wr, {IBV_WC_SUCCESS, IBV_WC_RDMA_READ})) return 1;
          break;
        case 2: {
          Write(0, op.local_dm, off, op.data.data(), op.len);
          if (!PostRecv(rc_[p][1], Sge(1, op.remote_dm, off, kSlot), {IBV_WC_SUCCESS, IBV_WC_RECV}))
            return 1;
          wr.opcode = IBV_WR_SEND_WITH_IMM;
          wr.imm_data = htobe32(op.slot);
          if (!PostSend(rc_[p][0], wr, {IBV_WC_SUCCESS, IBV_WC_SEND})) return 1;
          break;
        }
        case 3: {
          counter_used = true;
          const bool dm = op.remote_dm;
          sge = Sge(0, op.local_dm, off, 8);
          wr.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
          const uint64_t add = 1 + rng_() % 1000;
          std::memcpy(op.data.data(), &add, 8);
          wr.wr.atomic = {.remote_addr = Addr(1, dm, kCounterOffset), .compare_add = add, .swap = 0,
                          .rkey = Rkey(1, dm)};
          if (!PostSend(rc_[p][0], wr, {IBV_WC_SUCCESS, IBV_WC_FETCH_ADD})) return 1;
          break;
        }
      }
    }
    const std::vector<ibv_wc> wcs = Drain();
    for (const ibv_wc& wc : wcs)
      if (wc.opcode == IBV_WC_RECV_RDMA_WITH_IMM || wc.opcode == IBV_WC_RECV) {
        EXPECT_TRUE(wc.wc_flags & IBV_WC_WITH_IMM);
        EXPECT_LT(be32toh(wc.imm_data), ops.size());
      }
    for (const Op& op : ops) {
      const uint32_t off = op.slot * kSlot;
      tally_.bytes += op.len;
      switch (op.kind) {
        case 0:
        case 2:
          EXPECT_EQ(Read(1, op.remote_dm, off, op.len), op.data) << "kind " << op.kind << " pair " << p;
          break;
        case 1:
          EXPECT_EQ(Read(0, op.local_dm, off, op.len), op.data) << "read pair " << p;
          break;
        case 3: {
          uint64_t add = 0, original = 0;
          std::memcpy(&add, op.data.data(), 8);
          const auto fetched = Read(0, op.local_dm, off, 8);
          std::memcpy(&original, fetched.data(), 8);
          uint64_t& expected = counter_[op.remote_dm ? 1 : 0];
          EXPECT_EQ(original, expected) << "fetch-and-add returned a stale or torn value";
          expected += add;
          const auto now = Read(1, op.remote_dm, kCounterOffset, 8);
          uint64_t value = 0;
          std::memcpy(&value, now.data(), 8);
          EXPECT_EQ(value, expected) << "the counter in " << (op.remote_dm ? "DM" : "host memory");
          break;
        }
      }
    }
    return static_cast<int>(ops.size());
  }

  // UD sends through the AH into posted receives: the 40-byte GRH, then the payload.
  void UdBatch() {
    const uint32_t n = 1 + rng_() % 4;
    std::vector<std::vector<std::byte>> data(n);
    std::vector<std::byte> src(n * kSlot);
    ibv_mr* src_mr = host_mr_[0];
    for (uint32_t i = 0; i < n; ++i) {
      const uint32_t len = 1 + rng_() % kSlot;
      data[i].resize(len);
      Fill(data[i].data(), len);
      std::memcpy(host_[0].data() + i * kSlot, data[i].data(), len);
      ibv_sge rs{.addr = reinterpret_cast<uint64_t>(ud_buf_.data() + i * (40 + kSlot)),
                 .length = 40 + kSlot, .lkey = ud_mr_->lkey};
      if (!PostRecv(ud_[1], rs, {IBV_WC_SUCCESS, IBV_WC_RECV})) return;
      ibv_sge sge{.addr = reinterpret_cast<uint64_t>(host_[0].data() + i * kSlot), .length = len,
                  .lkey = src_mr->lkey};
      ibv_send_wr wr{};
      wr.sg_list = &sge;
      wr.num_sge = 1;
      wr.opcode = IBV_WR_SEND;
      wr.wr.ud = {.ah = ah_, .remote_qpn = ud_[1]->qp_num, .remote_qkey = kQkey};
      if (!PostSend(ud_[0], wr, {IBV_WC_SUCCESS, IBV_WC_SEND})) return;
    }
    for (const ibv_wc& wc : Drain())
      if (wc.opcode == IBV_WC_RECV && wc.status == IBV_WC_SUCCESS) {
        EXPECT_TRUE(wc.wc_flags & IBV_WC_GRH);
      }
    for (uint32_t i = 0; i < n; ++i) {
      std::vector<std::byte> got(ud_buf_.begin() + i * (40 + kSlot) + 40,
                                 ud_buf_.begin() + i * (40 + kSlot) + 40 + static_cast<long>(data[i].size()));
      EXPECT_EQ(got, data[i]) << "UD payload " << i;
      tally_.bytes += data[i].size();
    }
  }

  // Bind the window over side 1's host slot 0 (on side 1's QP, which owns the MR), write through
  // it from side 0, invalidate it, write again: a remote access error, the requester's QP in the
  // error state, and the pair recovered.
  void WindowChurn(int p) {
    ibv_qp* owner = rc_[p][1];
    ibv_qp* peer = rc_[p][0];
    const uint32_t rkey = ibv_inc_rkey(mw_->rkey);
    ibv_send_wr bind{};
    bind.opcode = IBV_WR_BIND_MW;
    bind.bind_mw.mw = mw_;
    bind.bind_mw.rkey = rkey;
    bind.bind_mw.bind_info = {.mr = host_mr_[1], .addr = reinterpret_cast<uint64_t>(host_[1].data()),
                              .length = kSlot, .mw_access_flags = IBV_ACCESS_REMOTE_WRITE};
    if (!PostSend(owner, bind, {IBV_WC_SUCCESS, IBV_WC_BIND_MW})) return;
    Drain();
    mw_->rkey = rkey;  // what ibv_bind_mw's callers see: the bound key
    ++tally_.binds;

    std::vector<std::byte> data(64);
    Fill(data.data(), 64);
    Write(0, false, 0, data.data(), 64);
    ibv_sge sge = Sge(0, false, 0, 64);
    ibv_send_wr w{};
    w.sg_list = &sge;
    w.num_sge = 1;
    w.opcode = IBV_WR_RDMA_WRITE;
    w.wr.rdma = {.remote_addr = reinterpret_cast<uint64_t>(host_[1].data()), .rkey = rkey};
    if (!PostSend(peer, w, {IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE})) return;
    Drain();
    EXPECT_EQ(Read(1, false, 0, 64), data) << "a write through the bound window";

    ibv_send_wr inv{};
    inv.opcode = IBV_WR_LOCAL_INV;
    inv.invalidate_rkey = rkey;
    if (!PostSend(owner, inv, {IBV_WC_SUCCESS, IBV_WC_LOCAL_INV})) return;
    Drain();

    const std::vector<std::byte> before = Read(1, false, 0, 64);
    Fill(data.data(), 64);
    Write(0, false, 0, data.data(), 64);
    if (!PostSend(peer, w, {IBV_WC_REM_ACCESS_ERR, IBV_WC_RDMA_WRITE})) return;
    Drain();
    EXPECT_EQ(Read(1, false, 0, 64), before) << "a write through an invalidated window landed";
    EXPECT_TRUE(Recover(p));
  }

  // The requester to ERR with work outstanding: everything posted after completes flushed.
  void ErrorAndRecover(int p) {
    ibv_qp* q = rc_[p][0];
    ibv_qp_attr a{};
    a.qp_state = IBV_QPS_ERR;
    if (!Modify(q, a, IBV_QP_STATE, "to ERR")) return;
    const int n = 1 + static_cast<int>(rng_() % 3);
    for (int i = 0; i < n; ++i) {
      ibv_sge sge = Sge(0, false, 0, 8);
      ibv_send_wr wr{};
      wr.sg_list = &sge;
      wr.num_sge = 1;
      wr.opcode = IBV_WR_RDMA_WRITE;
      wr.wr.rdma = {.remote_addr = Addr(1, false, 0), .rkey = Rkey(1, false)};
      if (!PostSend(q, wr, {IBV_WC_WR_FLUSH_ERR, IBV_WC_RDMA_WRITE})) return;
    }
    Drain();
    EXPECT_TRUE(Recover(p));
  }

  ibv_context* ctx_;
  ibv_pd* pd_;
  ibv_gid gid_;
  std::minstd_rand rng_;
  ibv_cq* cq_ = nullptr;
  ibv_qp* rc_[kPairs][2] = {};
  ibv_qp* ud_[2] = {};
  ibv_ah* ah_ = nullptr;
  ibv_mw* mw_ = nullptr;
  std::vector<std::byte> host_[2];
  ibv_mr* host_mr_[2] = {};
  ibv_dm* dm_[2] = {};
  ibv_mr* dm_mr_[2] = {};
  std::vector<std::byte> ud_buf_;
  ibv_mr* ud_mr_ = nullptr;
  uint64_t counter_[2] = {};  // the counters' values: host [0], DM [1]
  uint64_t next_id_ = 1;
  std::map<uint64_t, Expect> outstanding_;
  Tally tally_;
};

TEST_F(SoakTest, EveryWorkRequestCompletesOnceAndEveryByteLands) {
  ibv_pd* pd = v::alloc_pd(verbs_);
  ASSERT_NE(pd, nullptr);
  ibv_gid gid{};
  std::memcpy(gid.raw, sim::DeviceGids(sim_->config())[kGidIndex].data(), 16);
  std::vector<std::unique_ptr<Worker>> workers;
  for (int t = 0; t < kThreads; ++t) workers.push_back(std::make_unique<Worker>(verbs_, pd, gid, t));
  bool ready = true;
  for (auto& w : workers) ready = ready && w->Setup();
  const auto start = std::chrono::steady_clock::now();
  if (ready) {
    std::vector<std::thread> threads;
    for (auto& w : workers) threads.emplace_back([&w] { w->Run(ONCHIP_SOAK_OPS); });
    for (auto& t : threads) t.join();
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  Tally sum;
  for (auto& w : workers) {
    sum.posted += w->tally().posted;
    sum.completed += w->tally().completed;
    sum.errors_expected += w->tally().errors_expected;
    sum.recoveries += w->tally().recoveries;
    sum.binds += w->tally().binds;
    sum.bytes += w->tally().bytes;
    w->Teardown();
  }
  EXPECT_EQ(v::dealloc_pd(pd), 0);
  EXPECT_EQ(sum.completed, sum.posted);
  std::printf("soak: %d threads, %.1f s: %llu work requests posted, %llu completed (%llu with the "
              "expected error), %llu window binds, %llu QP recoveries, %llu payload bytes checked\n",
              kThreads, seconds, static_cast<unsigned long long>(sum.posted),
              static_cast<unsigned long long>(sum.completed),
              static_cast<unsigned long long>(sum.errors_expected),
              static_cast<unsigned long long>(sum.binds), static_cast<unsigned long long>(sum.recoveries),
              static_cast<unsigned long long>(sum.bytes));
  // The fixture's teardown then proves the device and the driver hold nothing.
}

}  // namespace
}  // namespace onchip::testing
