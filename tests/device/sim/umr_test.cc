// Memory-window bind and invalidate through the device's UMR logic (Firmware::PostUmr), with
// WQEs built as rdma-core's set_bind_wr and the kernel's LOCAL_INV build them; every refusal is
// checked for its error CQE syndrome and its check, and for leaving the window and its parent
// as they were. Device state is read back with QUERY_MKEY.
#include <vector>

#include "tests/device/sim/sim_fixture.h"
#include "tools/sim/umr.h"
#include "uapi/prm/cqe_syndrome.h"
#include "uapi/prm/memic.h"
#include "uapi/prm/mkey.h"
#include "uapi/prm/opcodes.h"
#include "uapi/prm/qp.h"
#include "uapi/prm/resources.h"
#include "uapi/prm/umr.h"
#include "uapi/prm/wqe.h"

namespace onchip::sim::testing {
namespace {

using prm::CommandStatus;
using In = prm::create_mkey_in;
constexpr auto mkc = In::memory_key_mkey_entry;
using QMkc = prm::mkc_bits<prm::query_mkey_out::memory_key_mkey_entry.bit_offset>;
using QKlm = prm::mlx5_klm_bits<prm::query_mkey_out::bsf0_klm0_pas_mtt0_1.bit_offset>;
using Ctrl = prm::mlx5_wqe_ctrl_seg;
using UmrCtrl = prm::mlx5_wqe_umr_ctrl_seg_bits<16 * 8>;
using Seg = prm::mlx5_mkey_seg_bits<64 * 8>;
using SegMkc = prm::mkc_bits<64 * 8>;
using Klm = prm::mlx5_klm_bits<128 * 8>;

constexpr uint32_t kQpn = 0x123;
constexpr uint32_t kOtherQpn = 0x456;
constexpr uint64_t kMrVa = 0x7f00'0000'0000;
constexpr uint32_t kMrPages = 4;
constexpr uint8_t kRw = prm::MLX5_PERM_LOCAL_WRITE | prm::MLX5_PERM_REMOTE_READ |
                        prm::MLX5_PERM_REMOTE_WRITE;

// A UMR WQE as rdma-core's set_bind_wr writes it: bind when length > 0, else invalidate.
struct Wqe {
  std::vector<std::byte> bytes;
  prm::Bits bits() { return prm::Bits(bytes); }
};

Wqe BindWqe(int type, uint32_t mw_key, uint32_t new_key, uint32_t mr_key, uint64_t addr,
            uint64_t length, uint8_t access, uint32_t qpn = kQpn) {
  Wqe w;
  w.bytes.assign(length ? 192 : 128, std::byte{0});
  uint8_t flags = prm::MLX5_WQE_UMR_CTRL_FLAG_TRNSLATION_OFFSET | prm::MLX5_WQE_UMR_CTRL_FLAG_INLINE;
  uint64_t mask = prm::MLX5_MKEY_MASK_FREE | prm::MLX5_MKEY_MASK_KEY;
  if (type == 2) mask |= prm::MLX5_MKEY_MASK_QPN;
  if (length) {
    if (type == 2) flags |= prm::MLX5_WQE_UMR_CTRL_FLAG_CHECK_FREE;
    mask |= prm::MLX5_MKEY_MASK_LEN | prm::MLX5_MKEY_MASK_START_ADDR | prm::MLX5_MKEY_MASK_LW |
            prm::MLX5_MKEY_MASK_RR | prm::MLX5_MKEY_MASK_RW | prm::MLX5_MKEY_MASK_A;
  } else if (type == 2) {
    flags |= prm::MLX5_WQE_UMR_CTRL_FLAG_CHECK_QPN;
  }
  const uint32_t bound_qpn = (type == 1 || !length) ? prm::MLX5_MKEY_NO_QPN : qpn;
  auto b = w.bits();
  b.set(Ctrl::opmod_idx_opcode, prm::MLX5_OPCODE_UMR)
      .set(Ctrl::qpn_ds, qpn << 8 | (length ? 12 : 8))
      .set(Ctrl::imm, mw_key)
      .set(UmrCtrl::flags, flags)
      .set(UmrCtrl::xlt_octowords, length ? 4 : 0)
      .set(UmrCtrl::mkey_mask, mask)
      .set(Seg::qpn_mkey7_0, bound_qpn << 8 | (new_key & 0xff));
  if (length) {
    b.set(Seg::flags, access).set(Seg::start_addr, addr).set(Seg::len, length)
        .set(Klm::bcount, length).set(Klm::key, mr_key).set(Klm::va, addr);
  } else {
    b.set(Seg::status, prm::MLX5_MKEY_STATUS_FREE);
  }
  EXPECT_TRUE(b.ok()) << b.refused();
  return w;
}

// The kernel's IB_WR_LOCAL_INV: INLINE, mkey_mask FREE, status FREE.
Wqe LocalInvWqe(uint32_t key, uint32_t qpn = kQpn) {
  Wqe w;
  w.bytes.assign(128, std::byte{0});
  w.bits().set(Ctrl::opmod_idx_opcode, prm::MLX5_OPCODE_UMR)
      .set(Ctrl::qpn_ds, qpn << 8 | 8)
      .set(Ctrl::imm, key)
      .set(UmrCtrl::flags, prm::MLX5_WQE_UMR_CTRL_FLAG_INLINE)
      .set(UmrCtrl::mkey_mask, prm::MLX5_MKEY_MASK_FREE)
      .set(Seg::status, prm::MLX5_MKEY_STATUS_FREE);
  return w;
}

constexpr uint32_t Key(uint32_t index, uint8_t variant) { return index << 8 | variant; }
uint32_t Inc(uint32_t rkey) { return (rkey & ~0xffu) | ((rkey + 1) & 0xff); }

class UmrTest : public SimTest {
 protected:
  void SetUp() override {
    SimTest::SetUp();
    BringUp();
    pd_ = AllocPd();
  }
  uint32_t AllocPd() {
    return static_cast<uint32_t>(
        Exec(prm::CommandIn<prm::alloc_pd_in>(prm::ALLOC_PD), 16).get(prm::alloc_pd_out::pd));
  }
  static uint32_t Index(const Reply& r) {
    return static_cast<uint32_t>(r.get(prm::create_mkey_out::mkey_index));
  }
  static prm::Message<In> Mkey(uint8_t mode, uint32_t pd, std::size_t octowords = 0) {
    auto in = prm::CommandIn<In>(prm::CREATE_MKEY, 0, 16 * octowords);
    in.set(mkc.access_mode_1_0, mode & 3)
        .set(mkc.access_mode_4_2, mode >> 2)
        .set(mkc.qpn, 0xffffff)
        .set(mkc.lr, 1)
        .set(mkc.pd, pd)
        .set(mkc.mkey_7_0, 0x5c);
    return in;
  }
  // An MR over kMrPages pages at kMrVa: onchip's convention, umr_en = IBV_ACCESS_MW_BIND.
  uint32_t Mr(uint32_t pd, bool mw_bind = true, bool local_write = true, uint64_t va = kMrVa,
              bool free = false) {
    const std::size_t octo = (kMrPages + 1) / 2;
    auto in = Mkey(prm::MKC_ACCESS_MODE_MTT, pd, octo);
    in.set(mkc.umr_en, mw_bind ? 1 : 0)
        .set(mkc.free, free ? 1 : 0)
        .set(mkc.lw, local_write ? 1 : 0)
        .set(mkc.rr, 1)
        .set(mkc.rw, local_write ? 1 : 0)
        .set(mkc.start_addr, va)
        .set(mkc.len, uint64_t{kMrPages} * 4096)
        .set(mkc.log_page_size, 12)
        .set(mkc.translations_octword_size, octo)
        .set(In::translations_octword_actual_size, octo);
    prm::Bits b(in.bytes().subspan(prm::size_bytes<In>));
    for (uint32_t i = 0; i < kMrPages; ++i)
      b.set(prm::Element<64>{i * 64, "mtt"}, 0x2'0000'0000 + i * 4096);
    auto r = Exec(in, 16);
    EXPECT_TRUE(Ok(r));
    return Key(Index(r), 0x5c);
  }
  // A window as mlx5_ib_alloc_mw creates it.
  uint32_t Mw(int type, uint32_t pd) {
    auto in = Mkey(prm::MKC_ACCESS_MODE_KLMS, pd);
    in.set(mkc.free, 1).set(mkc.umr_en, 1).set(mkc.translations_octword_size, 4)
        .set(mkc.en_rinval, type == 2 ? 1 : 0);
    auto r = Exec(in, 16);
    EXPECT_TRUE(Ok(r));
    return Key(Index(r), 0x5c);
  }
  Reply Destroy(uint32_t key) {
    auto in = prm::CommandIn<prm::destroy_mkey_in>(prm::DESTROY_MKEY);
    in.set(prm::destroy_mkey_in::mkey_index, key >> 8);
    return Exec(in, 16);
  }
  Reply Query(uint32_t key) {
    auto in = prm::CommandIn<prm::query_mkey_in>(prm::QUERY_MKEY);
    in.set(prm::query_mkey_in::mkey_index, key >> 8);
    return Exec(in, prm::size_bytes<prm::query_mkey_out>);
  }
  UmrResult Post(const Wqe& w, uint32_t qpn = kQpn, std::optional<uint32_t> pd = std::nullopt) {
    return sim_->firmware().PostUmr({.wqe = w.bytes, .qpn = qpn, .pd = pd.value_or(pd_)});
  }
  // The window's whole mkc and first KLM as QUERY_MKEY returns them.
  std::vector<std::byte> Snapshot(uint32_t key) {
    auto q = Query(key);
    EXPECT_TRUE(Ok(q));
    return q.out;
  }

  uint32_t pd_ = 0;
};

::testing::AssertionResult Refused(const UmrResult& r, prm::CqeSyndrome s, UmrCheck c) {
  if (r.syndrome == s && r.check == c) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "got syndrome 0x" << std::hex << int(r.syndrome) << " "
                                       << UmrCheckName(r.check) << ", want 0x" << int(s) << " "
                                       << UmrCheckName(c);
}
::testing::AssertionResult BindErr(const UmrResult& r, UmrCheck c) {
  return Refused(r, prm::MLX5_CQE_SYNDROME_MW_BIND_ERR, c);
}
::testing::AssertionResult QpOpErr(const UmrResult& r, UmrCheck c) {
  return Refused(r, prm::MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR, c);
}

TEST_F(UmrTest, Type1BindIsReadBackAndZeroLengthRebindUnbinds) {
  const uint32_t mr = Mr(pd_);
  const uint32_t mw = Mw(1, pd_);
  const uint32_t k1 = Inc(mw);
  auto r = Post(BindWqe(1, mw, k1, mr, kMrVa + 4096, 8192,
                        prm::MLX5_PERM_REMOTE_READ | prm::MLX5_PERM_REMOTE_WRITE));
  ASSERT_TRUE(r.ok()) << UmrCheckName(r.check);
  auto q = Query(k1);
  ASSERT_TRUE(Ok(q));
  // The window reaches its parent's pages through the parent's MTT; only inside the window.
  EXPECT_EQ(sim_->firmware().MkeyBusAddress(k1, kMrVa + 4096 + 10), 0x2'0000'0000u + 4096 + 10);
  EXPECT_EQ(sim_->firmware().MkeyBusAddress(k1, kMrVa + 4096 + 8192 - 1), 0x2'0000'0000u + 3 * 4096 - 1);
  EXPECT_FALSE(sim_->firmware().MkeyBusAddress(k1, kMrVa + 4096 + 8192));
  EXPECT_FALSE(sim_->firmware().MkeyBusAddress(k1, kMrVa));
  EXPECT_EQ(q.get(QMkc::free), 0u);
  EXPECT_EQ(q.get(QMkc::mkey_7_0), k1 & 0xff);
  EXPECT_EQ(q.get(QMkc::qpn), 0xffffffu);
  EXPECT_EQ(q.get(QMkc::start_addr), kMrVa + 4096);
  EXPECT_EQ(q.get(QMkc::len), 8192u);
  EXPECT_EQ(q.get(QMkc::rr), 1u);
  EXPECT_EQ(q.get(QMkc::rw), 1u);
  EXPECT_EQ(q.get(QMkc::a), 0u);
  EXPECT_EQ(q.get(QMkc::lw), 0u);
  EXPECT_EQ(q.get(QMkc::pd), pd_);
  EXPECT_EQ(q.get(QMkc::en_rinval), 0u);
  EXPECT_EQ(q.get(QKlm::bcount), 8192u);
  EXPECT_EQ(q.get(QKlm::key), mr);
  EXPECT_EQ(q.get(QKlm::va), kMrVa + 4096);
  // The old key no longer names the window.
  EXPECT_TRUE(BindErr(Post(BindWqe(1, mw, Inc(k1), mr, kMrVa, 4096, kRw)), UmrCheck::MW_KEY));
  // The parent cannot go while the window names it.
  EXPECT_TRUE(Refused(Destroy(mr), CommandStatus::RES_BUSY, Syndrome::MKEY_BUSY));

  const uint32_t k2 = Inc(k1);
  ASSERT_TRUE(Post(BindWqe(1, k1, k2, mr, kMrVa, 0, 0)).ok());
  q = Query(k2);
  EXPECT_EQ(q.get(QMkc::free), 1u);
  EXPECT_EQ(q.get(QMkc::mkey_7_0), k2 & 0xff);
  EXPECT_EQ(q.get(QKlm::key), 0u);
  ASSERT_TRUE(Ok(Destroy(mr)));
  ASSERT_TRUE(Ok(Destroy(mw)));
  EXPECT_EQ(sim_->counters().mkeys, 0u);
}

TEST_F(UmrTest, Type1RebindMovesTheParentReference) {
  const uint32_t a = Mr(pd_);
  const uint32_t b = Mr(pd_);
  const uint32_t mw = Mw(1, pd_);
  const uint32_t k1 = Inc(mw), k2 = Inc(k1);
  ASSERT_TRUE(Post(BindWqe(1, mw, k1, a, kMrVa, 4096, kRw)).ok());
  ASSERT_TRUE(Post(BindWqe(1, k1, k2, b, kMrVa + 8192, 4096, kRw)).ok());
  EXPECT_EQ(Query(k2).get(QKlm::key), b);
  ASSERT_TRUE(Ok(Destroy(a)));
  EXPECT_TRUE(Refused(Destroy(b), CommandStatus::RES_BUSY, Syndrome::MKEY_BUSY));
  // Destroying a bound window drops its parent reference.
  ASSERT_TRUE(Ok(Destroy(mw)));
  ASSERT_TRUE(Ok(Destroy(b)));
  EXPECT_EQ(sim_->counters().mkeys, 0u);
}

TEST_F(UmrTest, Type2BindsToTheQpAndMustBeInvalidatedBeforeRebinding) {
  const uint32_t mr = Mr(pd_);
  const uint32_t mw = Mw(2, pd_);
  const uint32_t k1 = Inc(mw);
  ASSERT_TRUE(Post(BindWqe(2, mw, k1, mr, kMrVa, 4096, kRw)).ok());
  auto q = Query(k1);
  EXPECT_EQ(q.get(QMkc::free), 0u);
  EXPECT_EQ(q.get(QMkc::qpn), kQpn);
  EXPECT_EQ(q.get(QMkc::en_rinval), 1u);
  const auto bound = Snapshot(k1);

  // CHECK_FREE: bound, so no rebind.
  EXPECT_TRUE(BindErr(Post(BindWqe(2, k1, Inc(k1), mr, kMrVa, 4096, kRw)), UmrCheck::MW_NOT_FREE));
  // CHECK_QPN: only the QP it is bound to invalidates it.
  EXPECT_TRUE(BindErr(Post(BindWqe(2, k1, k1, 0, 0, 0, 0, kOtherQpn), kOtherQpn),
                      UmrCheck::MW_QPN));
  EXPECT_EQ(Snapshot(k1), bound);
  ASSERT_TRUE(Post(BindWqe(2, k1, k1, 0, 0, 0, 0)).ok());
  q = Query(k1);
  EXPECT_EQ(q.get(QMkc::free), 1u);
  EXPECT_EQ(q.get(QMkc::qpn), 0xffffffu);
  ASSERT_TRUE(Ok(Destroy(mr)) ) << "invalidation released the parent";
  // Invalidating a free window again is harmless.
  EXPECT_TRUE(Post(BindWqe(2, k1, k1, 0, 0, 0, 0)).ok());

  // Rebind after invalidation, from another QP: the window follows that QP.
  const uint32_t mr2 = Mr(pd_);
  const uint32_t k2 = Inc(k1);
  ASSERT_TRUE(Post(BindWqe(2, k1, k2, mr2, kMrVa, 4096, kRw, kOtherQpn), kOtherQpn).ok());
  EXPECT_EQ(Query(k2).get(QMkc::qpn), kOtherQpn);
  // The kernel's LOCAL_INV (no CHECK_QPN) frees it too.
  ASSERT_TRUE(Post(LocalInvWqe(k2)).ok());
  EXPECT_EQ(Query(k2).get(QMkc::free), 1u);
  ASSERT_TRUE(Ok(Destroy(mr2)));
  ASSERT_TRUE(Ok(Destroy(mw)));
  EXPECT_EQ(sim_->counters().mkeys, 0u);
}

TEST_F(UmrTest, TheWindowMustBeAWindowOfTheQpsPdWithTheCurrentKey) {
  const uint32_t mr = Mr(pd_);
  const uint32_t mw1 = Mw(1, pd_);
  const uint32_t mw2 = Mw(2, pd_);
  const auto before1 = Snapshot(mw1);
  const auto before2 = Snapshot(mw2);
  EXPECT_TRUE(BindErr(Post(BindWqe(1, Key(999, 0x5c), 1, mr, kMrVa, 4096, kRw)),
                      UmrCheck::MW_UNKNOWN));
  EXPECT_TRUE(BindErr(Post(BindWqe(1, mw1 ^ 1, 1, mr, kMrVa, 4096, kRw)), UmrCheck::MW_KEY));
  EXPECT_TRUE(BindErr(Post(BindWqe(1, mr, 1, mr, kMrVa, 4096, kRw)), UmrCheck::NOT_WINDOW));
  const uint32_t other_pd = AllocPd();
  EXPECT_TRUE(BindErr(Post(BindWqe(1, mw1, 1, mr, kMrVa, 4096, kRw), kQpn, other_pd),
                      UmrCheck::MW_PD));
  // Type 1 belongs to no QP; type 2 to the posting QP.
  auto t1_qp = BindWqe(1, mw1, 1, mr, kMrVa, 4096, kRw);
  auto b = t1_qp.bits();
  b.set(UmrCtrl::mkey_mask, prm::Get(std::span<const std::byte>(t1_qp.bytes), UmrCtrl::mkey_mask) |
                                prm::MLX5_MKEY_MASK_QPN)
      .set(Seg::qpn_mkey7_0, kQpn << 8 | 1);
  EXPECT_TRUE(BindErr(Post(t1_qp), UmrCheck::MW_QPN));
  auto t2_other = BindWqe(2, mw2, 1, mr, kMrVa, 4096, kRw);
  t2_other.bits().set(Seg::qpn_mkey7_0, kOtherQpn << 8 | 1);
  EXPECT_TRUE(BindErr(Post(t2_other), UmrCheck::MW_QPN));
  auto t2_noqp = BindWqe(1, mw2, 1, mr, kMrVa, 4096, kRw);  // type-1 WQE on a type-2 window
  EXPECT_TRUE(BindErr(Post(t2_noqp), UmrCheck::MW_QPN));
  // The 0x40 check ("fail if free") on a free window.
  auto not_free = BindWqe(1, mw1, 1, mr, kMrVa, 4096, kRw);
  not_free.bits().set(UmrCtrl::flags, prm::MLX5_WQE_UMR_CTRL_FLAG_INLINE | prm::MLX5_UMR_CHECK_FREE);
  EXPECT_TRUE(BindErr(Post(not_free), UmrCheck::MW_FREE));
  // Windows are never zero-based on the device, and one KLM carries at most 2 GiB.
  auto zero_based = BindWqe(1, mw1, 1, mr, kMrVa, 4096, kRw);
  zero_based.bits().set(Seg::start_addr, 0);
  EXPECT_TRUE(BindErr(Post(zero_based), UmrCheck::MW_ZERO_BASED));
  auto huge = BindWqe(1, mw1, 1, mr, kMrVa, (uint64_t{1} << 31) + 4096, kRw);
  EXPECT_TRUE(BindErr(Post(huge), UmrCheck::MW_LENGTH));
  auto mismatch = BindWqe(1, mw1, 1, mr, kMrVa, 4096, kRw);
  mismatch.bits().set(Klm::bcount, 8192);
  EXPECT_TRUE(BindErr(Post(mismatch), UmrCheck::MW_LENGTH));

  EXPECT_EQ(Snapshot(mw1), before1);
  EXPECT_EQ(Snapshot(mw2), before2);
  ASSERT_TRUE(Ok(Destroy(mr)));
  ASSERT_TRUE(Ok(Destroy(mw1)));
  ASSERT_TRUE(Ok(Destroy(mw2)));
  EXPECT_EQ(sim_->counters().mkeys, 0u);
}

TEST_F(UmrTest, ExactlyTwoGibIsAllowed) {
  // A parent big enough: an MTT mkey created free (its list arrives later) is not bindable, so
  // use a PA mkey over everything (uid 0), which allows binding.
  auto pa = Mkey(prm::MKC_ACCESS_MODE_PA, pd_);
  pa.set(mkc.length64, 1).set(mkc.umr_en, 1).set(mkc.lw, 1);
  const uint32_t parent = Key(Index(Exec(pa, 16)), 0x5c);
  const uint32_t mw = Mw(1, pd_);
  ASSERT_TRUE(Post(BindWqe(1, mw, Inc(mw), parent, kMrVa, uint64_t{1} << 31, kRw)).ok());
  EXPECT_EQ(Query(Inc(mw)).get(QMkc::len), uint64_t{1} << 31);
  ASSERT_TRUE(Ok(Destroy(mw)));
  ASSERT_TRUE(Ok(Destroy(parent)));
}

TEST_F(UmrTest, TheParentMustAllowTheBind) {
  const uint32_t mw = Mw(1, pd_);
  const auto before = Snapshot(mw);
  const uint32_t mr = Mr(pd_);
  auto bind = [&](uint32_t parent, uint64_t addr, uint64_t len, uint8_t access = kRw) {
    return Post(BindWqe(1, mw, Inc(mw), parent, addr, len, access));
  };
  // An invalid lkey is a local protection error.
  EXPECT_TRUE(Refused(bind(Key(999, 0x5c), kMrVa, 4096), prm::MLX5_CQE_SYNDROME_LOCAL_PROT_ERR,
                      UmrCheck::PARENT_UNKNOWN));
  EXPECT_TRUE(Refused(bind(mr ^ 1, kMrVa, 4096), prm::MLX5_CQE_SYNDROME_LOCAL_PROT_ERR,
                      UmrCheck::PARENT_UNKNOWN));
  const uint32_t unpopulated = Mr(pd_, true, true, kMrVa, /*free=*/true);
  EXPECT_TRUE(Refused(bind(unpopulated, kMrVa, 4096), prm::MLX5_CQE_SYNDROME_LOCAL_PROT_ERR,
                      UmrCheck::PARENT_UNKNOWN));
  // A window is no parent: a free one is no valid key at all, a bound one is refused as such.
  const uint32_t other_window = Mw(1, pd_);
  EXPECT_TRUE(Refused(bind(other_window, kMrVa, 4096), prm::MLX5_CQE_SYNDROME_LOCAL_PROT_ERR,
                      UmrCheck::PARENT_UNKNOWN));
  ASSERT_TRUE(Post(BindWqe(1, other_window, other_window, mr, kMrVa, 4096, kRw)).ok());
  EXPECT_TRUE(BindErr(bind(other_window, kMrVa, 4096), UmrCheck::PARENT_IS_WINDOW));
  const uint32_t foreign = Mr(AllocPd());
  EXPECT_TRUE(BindErr(bind(foreign, kMrVa, 4096), UmrCheck::PARENT_PD));
  const uint32_t no_mw_bind = Mr(pd_, /*mw_bind=*/false);
  EXPECT_TRUE(BindErr(bind(no_mw_bind, kMrVa, 4096), UmrCheck::PARENT_NO_BIND));
  const uint32_t zero_based = Mr(pd_, true, true, /*va=*/0);
  EXPECT_TRUE(BindErr(bind(zero_based, 0, 4096), UmrCheck::PARENT_ZERO_BASED));
  // Inside [start, start + len): before it, across its end, past it.
  EXPECT_TRUE(BindErr(bind(mr, kMrVa - 4096, 4096), UmrCheck::PARENT_RANGE));
  EXPECT_TRUE(BindErr(bind(mr, kMrVa + 3 * 4096, 8192), UmrCheck::PARENT_RANGE));
  EXPECT_TRUE(BindErr(bind(mr, kMrVa + 4 * 4096, 1), UmrCheck::PARENT_RANGE));
  // Remote write or atomic needs the parent's local write; remote read does not.
  const uint32_t read_only = Mr(pd_, true, /*local_write=*/false);
  EXPECT_TRUE(BindErr(bind(read_only, kMrVa, 4096, prm::MLX5_PERM_REMOTE_WRITE),
                      UmrCheck::PARENT_ACCESS));
  EXPECT_TRUE(BindErr(bind(read_only, kMrVa, 4096, prm::MLX5_PERM_ATOMIC),
                      UmrCheck::PARENT_ACCESS));
  EXPECT_EQ(Snapshot(mw), before);
  EXPECT_TRUE(bind(mr, kMrVa + 3 * 4096, 4096).ok());  // the last page is inside
  ASSERT_TRUE(Post(BindWqe(1, Inc(mw), mw, 0, 0, 0, 0)).ok());  // unbind, key back to mw
  ASSERT_TRUE(bind(read_only, kMrVa, 4096, prm::MLX5_PERM_REMOTE_READ).ok());
  EXPECT_EQ(Query(Inc(mw)).get(QKlm::key), read_only);
  ASSERT_TRUE(Ok(Destroy(mw)));
  for (uint32_t k : {other_window, mr, unpopulated, foreign, no_mw_bind, zero_based, read_only})
    ASSERT_TRUE(Ok(Destroy(k)));
  EXPECT_EQ(sim_->counters().mkeys, 0u);
}

TEST_F(UmrTest, MalformedWqesAreLocalQpOperationErrors) {
  const uint32_t mr = Mr(pd_);
  const uint32_t mw = Mw(2, pd_);
  const auto before = Snapshot(mw);
  auto good = [&] { return BindWqe(2, mw, Inc(mw), mr, kMrVa, 4096, kRw); };
  Wqe w = good();
  w.bytes.resize(100);
  EXPECT_TRUE(QpOpErr(Post(w), UmrCheck::WQE_TOO_SHORT));
  w = good();
  w.bytes.resize(160);  // ds says 12 octowords
  EXPECT_TRUE(QpOpErr(Post(w), UmrCheck::WQE_TOO_SHORT));
  w = good();
  w.bits().set(Ctrl::opmod_idx_opcode, 0x0a);  // RDMA_WRITE
  EXPECT_TRUE(QpOpErr(Post(w), UmrCheck::NOT_UMR));
  EXPECT_TRUE(QpOpErr(Post(good(), kOtherQpn), UmrCheck::WQE_QPN));
  w = good();
  w.bits().set(Ctrl::qpn_ds, kQpn << 8 | 8);
  EXPECT_TRUE(QpOpErr(Post(w), UmrCheck::WQE_DS));
  w = good();
  w.bytes[17] = std::byte{1};  // UMR control reserved byte
  EXPECT_TRUE(QpOpErr(Post(w), UmrCheck::RESERVED));
  w = good();
  w.bits().set(UmrCtrl::flags, prm::MLX5_WQE_UMR_CTRL_FLAG_INLINE | 0x01);
  EXPECT_TRUE(QpOpErr(Post(w), UmrCheck::UMR_FLAGS));
  w = good();
  w.bits().set(UmrCtrl::flags, prm::MLX5_WQE_UMR_CTRL_FLAG_CHECK_FREE);  // KLMs not inline
  EXPECT_TRUE(QpOpErr(Post(w), UmrCheck::UMR_FLAGS));
  w = good();
  w.bits().set(UmrCtrl::xlt_offset, 1);
  EXPECT_TRUE(QpOpErr(Post(w), UmrCheck::XLT));
  w = good();
  w.bits().set(UmrCtrl::xlt_octowords, 2).set(Ctrl::qpn_ds, kQpn << 8 | 10);
  EXPECT_TRUE(QpOpErr(Post(w), UmrCheck::XLT));
  w = good();
  w.bytes[150] = std::byte{1};  // a second KLM
  EXPECT_TRUE(QpOpErr(Post(w), UmrCheck::XLT));
  w = good();
  w.bits().set(UmrCtrl::mkey_mask, prm::MLX5_MKEY_MASK_FREE | prm::MLX5_MKEY_MASK_PD);
  EXPECT_TRUE(QpOpErr(Post(w), UmrCheck::MKEY_MASK));
  w = good();
  w.bits().set(UmrCtrl::mkey_mask, prm::MLX5_MKEY_MASK_LEN | prm::MLX5_MKEY_MASK_START_ADDR);
  EXPECT_TRUE(QpOpErr(Post(w), UmrCheck::MKEY_MASK));
  w = good();
  w.bits().set(UmrCtrl::mkey_mask, prm::MLX5_MKEY_MASK_FREE | prm::MLX5_MKEY_MASK_LEN);
  EXPECT_TRUE(QpOpErr(Post(w), UmrCheck::MKEY_MASK));  // a bind without START_ADDR
  // An invalidation carrying KLMs.
  w = good();
  w.bits().set(Seg::status, prm::MLX5_MKEY_STATUS_FREE);
  EXPECT_TRUE(QpOpErr(Post(w), UmrCheck::XLT));
  EXPECT_EQ(Snapshot(mw), before);
  ASSERT_TRUE(Post(good()).ok());
  ASSERT_TRUE(Ok(Destroy(mw)));
  ASSERT_TRUE(Ok(Destroy(mr)));
  EXPECT_EQ(sim_->counters().mkeys, 0u);
}

TEST_F(UmrTest, ABoundWindowReachesItsParentsMemory) {
  auto a = prm::CommandIn<prm::alloc_memic_in>(prm::ALLOC_MEMIC);
  a.set(prm::alloc_memic_in::memic_size, 8192)
      .set(prm::alloc_memic_in::range_start_addr, sim_->layout().memic_start)
      .set(prm::alloc_memic_in::range_size, sim_->layout().memic_size);
  const uint64_t off = Exec(a, 16).get(prm::alloc_memic_out::memic_start_addr);
  auto m = Mkey(prm::MKC_ACCESS_MODE_MEMIC, pd_);
  m.set(mkc.start_addr, off).set(mkc.len, 8192).set(mkc.umr_en, 1).set(mkc.lw, 1);
  const uint32_t parent = Key(Index(Exec(m, 16)), 0x5c);
  const uint32_t mw = Mw(1, pd_);
  const uint32_t k = Inc(mw);
  EXPECT_FALSE(sim_->firmware().MkeyDeviceMemory(mw, 0, 1));  // free: reaches nothing
  ASSERT_TRUE(Post(BindWqe(1, mw, k, parent, off + 4096, 100, kRw)).ok());
  // The CPU stores through BAR0; the window's byte 7 is the parent's byte 4096 + 7.
  w_->bar()[off + 4096 + 7] = std::byte{0x3c};
  auto bytes = sim_->firmware().MkeyDeviceMemory(k, 7, 1);
  ASSERT_TRUE(bytes);
  EXPECT_EQ((*bytes)[0], std::byte{0x3c});
  EXPECT_FALSE(sim_->firmware().MkeyDeviceMemory(k, 100, 1));  // past the window
  EXPECT_FALSE(sim_->firmware().MkeyDeviceMemory(mw, 7, 1));   // the old key
  ASSERT_TRUE(Post(BindWqe(1, k, k, 0, 0, 0, 0)).ok());
  EXPECT_FALSE(sim_->firmware().MkeyDeviceMemory(k, 7, 1));  // invalidated
  ASSERT_TRUE(Ok(Destroy(mw)));
  ASSERT_TRUE(Ok(Destroy(parent)));
  auto d = prm::CommandIn<prm::dealloc_memic_in>(prm::DEALLOC_MEMIC);
  d.set(prm::dealloc_memic_in::memic_start_addr, off).set(prm::dealloc_memic_in::memic_size, 8192);
  ASSERT_TRUE(Ok(Exec(d, 16)));
}

// What the kernel's REG_UMR QP posts to change an MR in place (re-registration of access or PD).
Wqe MrUmrWqe(uint32_t mr_key, uint64_t mask, uint8_t access, uint32_t pd, uint32_t qpn = kQpn) {
  Wqe w;
  w.bytes.assign(128, std::byte{0});
  auto b = w.bits();
  b.set(Ctrl::opmod_idx_opcode, prm::MLX5_OPCODE_UMR)
      .set(Ctrl::qpn_ds, qpn << 8 | 8)
      .set(Ctrl::imm, mr_key)
      .set(UmrCtrl::flags, prm::MLX5_WQE_UMR_CTRL_FLAG_INLINE | prm::MLX5_UMR_CHECK_FREE)
      .set(UmrCtrl::mkey_mask, mask)
      .set(Seg::flags, access)
      .set(SegMkc::pd, pd);
  EXPECT_TRUE(b.ok()) << b.refused();
  return w;
}

constexpr uint64_t kAccessMask = prm::MLX5_MKEY_MASK_LR | prm::MLX5_MKEY_MASK_LW |
                                 prm::MLX5_MKEY_MASK_RR | prm::MLX5_MKEY_MASK_RW |
                                 prm::MLX5_MKEY_MASK_A;

TEST_F(UmrTest, ARegUmrQpChangesAnMrsAccessAndPdInPlace) {
  const uint32_t mr = Mr(pd_);
  const uint32_t other = AllocPd();
  auto reg = [&](const Wqe& w) {
    return sim_->firmware().PostUmr({.wqe = w.bytes, .qpn = kQpn, .pd = pd_, .reg_umr = true});
  };
  const uint8_t atomic = prm::MLX5_PERM_LOCAL_WRITE | prm::MLX5_PERM_ATOMIC | prm::MLX5_PERM_LOCAL_READ;
  auto r = reg(MrUmrWqe(mr, kAccessMask | prm::MLX5_MKEY_MASK_PD, atomic, other));
  ASSERT_TRUE(r.ok()) << UmrCheckName(r.check);
  auto q = Query(mr);  // the same key
  ASSERT_TRUE(Ok(q));
  EXPECT_EQ(q.get(QMkc::a), 1u);
  EXPECT_EQ(q.get(QMkc::rr), 0u);
  EXPECT_EQ(q.get(QMkc::rw), 0u);
  EXPECT_EQ(q.get(QMkc::lw), 1u);
  EXPECT_EQ(q.get(QMkc::pd), other);
  EXPECT_EQ(q.get(QMkc::start_addr), kMrVa);  // the translation stays
  // The MR moved its hold to the new PD: the old one may go, the new one is busy.
  auto dealloc = [&](uint32_t pd) {
    auto in = prm::CommandIn<prm::dealloc_pd_in>(prm::DEALLOC_PD);
    in.set(prm::dealloc_pd_in::pd, pd);
    return Exec(in, 16);
  };
  EXPECT_FALSE(Ok(dealloc(other)));
  ASSERT_TRUE(Ok(Destroy(mr)));
  EXPECT_TRUE(Ok(dealloc(other)));
}

TEST_F(UmrTest, ARegUmrQpRefusesWhatItCannotChange) {
  const uint32_t mr = Mr(pd_);
  const uint32_t no_umr = Mr(pd_, /*mw_bind=*/false);
  const uint32_t mw = Mw(1, pd_);
  auto reg = [&](const Wqe& w) {
    return sim_->firmware().PostUmr({.wqe = w.bytes, .qpn = kQpn, .pd = pd_, .reg_umr = true});
  };
  const auto before = Snapshot(mr);
  auto prot = [](const UmrResult& r, UmrCheck c) {
    return Refused(r, prm::MLX5_CQE_SYNDROME_LOCAL_PROT_ERR, c);
  };
  EXPECT_TRUE(prot(reg(MrUmrWqe(Inc(mr), kAccessMask, kRw, 0)), UmrCheck::MR_UNKNOWN));
  EXPECT_TRUE(prot(reg(MrUmrWqe(no_umr, kAccessMask, kRw, 0)), UmrCheck::MR_NO_UMR));
  EXPECT_TRUE(prot(reg(MrUmrWqe(mw, kAccessMask, kRw, 0)), UmrCheck::MR_IS_WINDOW));
  EXPECT_TRUE(prot(reg(MrUmrWqe(mr, prm::MLX5_MKEY_MASK_PD, 0, 0xabcd)), UmrCheck::MR_PD));
  // A translation, a length or the key cannot change this way; nor can a window's mask be used.
  EXPECT_TRUE(QpOpErr(reg(MrUmrWqe(mr, prm::MLX5_MKEY_MASK_LEN, 0, 0)), UmrCheck::MKEY_MASK));
  EXPECT_TRUE(QpOpErr(reg(MrUmrWqe(mr, prm::MLX5_MKEY_MASK_KEY, 0, 0)), UmrCheck::MKEY_MASK));
  EXPECT_TRUE(QpOpErr(reg(MrUmrWqe(mr, 0, 0, 0)), UmrCheck::MKEY_MASK));
  EXPECT_TRUE(QpOpErr(reg(MrUmrWqe(mr, kAccessMask, kRw, 0, kOtherQpn)), UmrCheck::WQE_QPN));
  EXPECT_EQ(Snapshot(mr), before);
  // An ordinary QP's UMR has a window's shape or none: this one is refused before any key.
  EXPECT_TRUE(QpOpErr(Post(MrUmrWqe(mr, kAccessMask, kRw, 0)), UmrCheck::MKEY_MASK));
}

// Only the function's owner (uid 0, the kernel) may have a REG_UMR QP.
TEST_F(UmrTest, OnlyUidZeroCreatesARegUmrQp) {
  auto in = prm::CommandIn<prm::create_qp_in>(prm::CREATE_QP);
  in.set(prm::create_qp_in::uid, 7).set(prm::create_qp_in::qpc.st, prm::QP_ST_REG_UMR)
      .set(prm::create_qp_in::qpc.rq_type, prm::ZERO_LEN_RQ);
  auto r = Exec(in, prm::size_bytes<prm::create_qp_out>);
  EXPECT_EQ(r.status, static_cast<uint8_t>(CommandStatus::BAD_PARAM_ERR));
  EXPECT_EQ(r.syndrome, static_cast<uint32_t>(Syndrome::QP_REG_UMR_USER));
}

}  // namespace
}  // namespace onchip::sim::testing
