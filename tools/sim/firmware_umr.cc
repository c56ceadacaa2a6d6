// UMR work requests on memory windows: bind (the window gets one KLM into a parent mkey) and
// invalidate (the window becomes free); and on MRs, from a REG_UMR QP only: a new access or PD
// in place (PostMrUmrLocked, at the end). The send-queue engine calls Firmware::PostUmr with the
// WQE bytes; rdma-core's set_bind_wr (providers/mlx5/qp.c) and the kernel's LOCAL_INV are the
// writers this follows.
//
// The WQE: ctrl (opcode MLX5_OPCODE_UMR, qpn_ds = qpn << 8 | ds, imm = the window's current key)
// + UMR control (flags, xlt_octowords, mkey_mask) + mkey segment (the mkc fields to write, as
// selected by mkey_mask) + for a bind an inline block of 4 KLM octowords, the first the binding
// {byte_count, parent key, address}, the rest zero. ds is 8, or 12 with the KLM block.
//
// A bind is a UMR that leaves the window not free with a non-zero length; anything else (the
// mkey segment's free bit, or a zero length: rdma-core's type-1 zero-length rebind) unbinds.
// Checks, in order, each with the error CQE syndrome the QP would report:
//   the WQE's shape                                        LOCAL_QP_OP_ERR
//   the window (exists, key byte, is a window, QP's PD, CHECK_FREE / 0x40 state, QP binding,
//   start_addr = KLM address, len = KLM byte_count <= 2 GiB) MW_BIND_ERR
//   the parent key (exists, key byte, not free)            LOCAL_PROT_ERR
//   the parent's rights (not indirect, window's PD, umr_en, not zero-based, range inside it,
//   local write when the window grants remote write or atomic) MW_BIND_ERR
//
// Device-side conventions this model fixes (documented in tools/sim/README.md):
//   - a parent allows binding when its mkc.umr_en is 1 (onchip sets it on every host MR, as
//     mlx5_ib does, so that re-registration can run in place);
//   - a zero-based parent (registered with IBV_ACCESS_ZERO_BASED: mkc.start_addr 0, the kernel's
//     iova) cannot be bound, and a window is never zero-based: its start_addr must equal the KLM
//     address (rdma-core refuses both in the library; the device refuses them too);
//   - CHECK_FREE is what makes type 2 windows unbindable until invalidated: the device applies the
//     flags it is given to any window, and type 2 additionally must be bound to the posting QP;
//     CHECK_QPN compares the posting QP with the QP a bound window is bound to (a free window has
//     none, so invalidating it again succeeds).
#include <algorithm>
#include <cstring>
#include <map>

#include "tools/sim/firmware.h"
#include "uapi/prm/mkey.h"
#include "uapi/prm/opcodes.h"
#include "uapi/prm/umr.h"
#include "uapi/prm/wqe.h"

namespace onchip::sim {
namespace {

using Bytes = std::span<const std::byte>;

constexpr std::size_t kHeadBytes = prm::UmrWqe::kHeadBytes;
constexpr uint32_t kHeadDs = prm::UmrWqe::kHeadDs;
constexpr uint32_t kBindXltOctowords = prm::UmrWqe::kBindXltOctowords;

using Ctrl = prm::UmrWqe::ctrl;
using UmrCtrl = prm::UmrWqe::umr_ctrl;
using MkeySeg = prm::UmrWqe::mkey_seg;
// The mkey segment is an mkc on the wire; its fields read as mkc fields.
using SegMkc = prm::UmrWqe::mkey_seg_mkc;
using Klm = prm::UmrWqe::klm;

constexpr uint8_t kKnownFlags =
    prm::MLX5_WQE_UMR_CTRL_FLAG_CHECK_QPN | prm::MLX5_WQE_UMR_CTRL_FLAG_TRNSLATION_OFFSET |
    prm::MLX5_WQE_UMR_CTRL_FLAG_CHECK_FREE | prm::MLX5_UMR_CHECK_FREE |
    prm::MLX5_WQE_UMR_CTRL_FLAG_INLINE;
// The mkc fields a UMR may change on a window; the PD, type (en_rinval), access mode and
// translation size stay what CREATE_MKEY made them.
constexpr uint64_t kWindowMask = prm::MLX5_MKEY_MASK_LEN | prm::MLX5_MKEY_MASK_START_ADDR |
                                 prm::MLX5_MKEY_MASK_KEY | prm::MLX5_MKEY_MASK_QPN |
                                 prm::MLX5_MKEY_MASK_LR | prm::MLX5_MKEY_MASK_LW |
                                 prm::MLX5_MKEY_MASK_RR | prm::MLX5_MKEY_MASK_RW |
                                 prm::MLX5_MKEY_MASK_A | prm::MLX5_MKEY_MASK_FREE;

UmrResult Fail(prm::CqeSyndrome s, UmrCheck c) { return {s, c}; }
UmrResult BadWqe(UmrCheck c) { return Fail(prm::MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR, c); }
UmrResult BadBind(UmrCheck c) { return Fail(prm::MLX5_CQE_SYNDROME_MW_BIND_ERR, c); }

// What every UMR WQE must be before anything else is read: long enough for its head, a UMR, of
// the posting QP, with the reserved bits of its UMR control and mkey segments clear.
UmrResult CheckHead(Bytes w, uint32_t qpn) {
  if (w.size() < kHeadBytes) return BadWqe(UmrCheck::WQE_TOO_SHORT);
  if (prm::OpcodeOf(prm::Get(w, Ctrl::opmod_idx_opcode)) != prm::MLX5_OPCODE_UMR)
    return BadWqe(UmrCheck::NOT_UMR);
  if (prm::QpnOf(prm::Get(w, Ctrl::qpn_ds)) != qpn) return BadWqe(UmrCheck::WQE_QPN);
  if (!ReservedClear(w, UmrCtrl{}) || !ReservedClear(w, MkeySeg{}))
    return BadWqe(UmrCheck::RESERVED);
  return {};
}

// What a window UMR WQE asks for, read by CheckBindShape.
struct WindowUmr {
  uint32_t flags = 0;
  uint64_t mask = 0;
  bool bind = false;        // the window ends up bound (not free, non-zero length)
  uint64_t seg_len = 0;     // the mkey segment's len
  uint32_t seg_qpn = 0;     // and its qpn
  bool qpn_masked = false;  // mkey_mask selects the qpn
};

// The WQE's shape (LOCAL_QP_OP_ERR): head, flags, translation list, ds, mkey_mask, and a bind's
// one KLM followed by zeros.
UmrResult CheckBindShape(Bytes w, uint32_t qpn, WindowUmr* u) {
  if (UmrResult head = CheckHead(w, qpn); !head.ok()) return head;
  const uint32_t qpn_ds = prm::Get(w, Ctrl::qpn_ds);
  const uint32_t flags = prm::Get(w, UmrCtrl::flags);
  const uint32_t xlt = prm::Get(w, UmrCtrl::xlt_octowords);
  if ((flags & ~uint32_t{kKnownFlags}) != 0) return BadWqe(UmrCheck::UMR_FLAGS);
  // A translation list the device would fetch through a pointer is not implemented.
  if (xlt != 0 && !(flags & prm::MLX5_WQE_UMR_CTRL_FLAG_INLINE))
    return BadWqe(UmrCheck::UMR_FLAGS);
  if (prm::Get(w, UmrCtrl::xlt_offset) != 0 || prm::Get(w, UmrCtrl::xlt_offset_47_16) != 0 ||
      (xlt != 0 && xlt != kBindXltOctowords))
    return BadWqe(UmrCheck::XLT);
  const uint32_t ds = prm::DsOf(qpn_ds);
  if (ds != kHeadDs + xlt) return BadWqe(UmrCheck::WQE_DS);
  if (w.size() < std::size_t{ds} * prm::MLX5_SEND_WQE_DS) return BadWqe(UmrCheck::WQE_TOO_SHORT);
  const uint64_t mask = prm::Get(w, UmrCtrl::mkey_mask);
  if ((mask & ~kWindowMask) != 0 || !(mask & prm::MLX5_MKEY_MASK_FREE))
    return BadWqe(UmrCheck::MKEY_MASK);

  const bool seg_free = prm::Get(w, SegMkc::free) != 0;
  const uint64_t seg_len = prm::Get(w, SegMkc::len);
  const bool bind = !seg_free && (mask & prm::MLX5_MKEY_MASK_LEN) && seg_len != 0;
  if (bind && !(mask & prm::MLX5_MKEY_MASK_START_ADDR)) return BadWqe(UmrCheck::MKEY_MASK);
  if (bind != (xlt != 0)) return BadWqe(UmrCheck::XLT);
  if (bind) {
    // One binding KLM; the rest of the 64-byte block is padding.
    constexpr std::size_t kKlm = prm::size_bytes<prm::mlx5_klm>;
    Bytes pad = w.subspan(kHeadBytes + kKlm, prm::MLX5_UMR_INLINE_KLM_BYTES - kKlm);
    if (std::any_of(pad.begin(), pad.end(), [](std::byte b) { return b != std::byte{0}; }))
      return BadWqe(UmrCheck::XLT);
  }
  *u = {.flags = flags,
        .mask = mask,
        .bind = bind,
        .seg_len = seg_len,
        .seg_qpn = static_cast<uint32_t>(prm::Get(w, SegMkc::qpn)),
        .qpn_masked = (mask & prm::MLX5_MKEY_MASK_QPN) != 0};
  return {};
}

// The window `key` names (MW_BIND_ERR): its key byte, a window of the QP's PD, the free state
// the flags ask for, the QP it is (or is to be) bound to.
UmrResult CheckWindow(const Mkey& mw, uint32_t key, const UmrRequest& r, const WindowUmr& u) {
  const Bytes mw_mkc(mw.mkc);
  if (prm::Get(mw_mkc, prm::mkc::mkey_7_0) != (key & 0xff)) return BadBind(UmrCheck::MW_KEY);
  if (!mw.window) return BadBind(UmrCheck::NOT_WINDOW);
  if (mw.pd != r.pd) return BadBind(UmrCheck::MW_PD);
  const bool mw_free = prm::Get(mw_mkc, prm::mkc::free) != 0;
  if ((u.flags & prm::MLX5_WQE_UMR_CTRL_FLAG_CHECK_FREE) && !mw_free)
    return BadBind(UmrCheck::MW_NOT_FREE);
  if ((u.flags & prm::MLX5_UMR_CHECK_FREE) && mw_free) return BadBind(UmrCheck::MW_FREE);
  const bool type2 = prm::Get(mw_mkc, prm::mkc::en_rinval) != 0;
  if (u.bind) {
    if (type2 ? !u.qpn_masked || u.seg_qpn != r.qpn
              : u.qpn_masked && u.seg_qpn != prm::MLX5_MKEY_NO_QPN)
      return BadBind(UmrCheck::MW_QPN);
  } else {
    if ((u.flags & prm::MLX5_WQE_UMR_CTRL_FLAG_CHECK_QPN) && !mw_free &&
        prm::Get(mw_mkc, prm::mkc::qpn) != r.qpn)
      return BadBind(UmrCheck::MW_QPN);
    if (u.qpn_masked && u.seg_qpn != prm::MLX5_MKEY_NO_QPN) return BadBind(UmrCheck::MW_QPN);
  }
  return {};
}

// A bind's KLM and the parent it names: the window's range is the KLM's (MW_BIND_ERR), the
// parent a live key (LOCAL_PROT_ERR) that allows this binding (MW_BIND_ERR). Sets
// *parent_index.
UmrResult CheckParent(const std::map<uint32_t, Mkey>& mkeys, Bytes w, const Mkey& mw,
                      const WindowUmr& u, uint32_t* parent_index) {
  const uint64_t start = prm::Get(w, SegMkc::start_addr);
  const uint64_t byte_count = prm::Get(w, Klm::bcount);
  const uint64_t address = prm::Get(w, Klm::va);
  if (u.seg_len > prm::MLX5_MAX_KLM_BYTE_COUNT || u.seg_len != byte_count)
    return BadBind(UmrCheck::MW_LENGTH);
  if (start != address) return BadBind(UmrCheck::MW_ZERO_BASED);

  const uint32_t parent_key = prm::Get(w, Klm::key);
  auto pit = mkeys.find(parent_key >> 8);
  if (pit == mkeys.end())
    return Fail(prm::MLX5_CQE_SYNDROME_LOCAL_PROT_ERR, UmrCheck::PARENT_UNKNOWN);
  const Mkey& parent = pit->second;
  Bytes pmkc(parent.mkc);
  if (prm::Get(pmkc, prm::mkc::mkey_7_0) != (parent_key & 0xff) ||
      prm::Get(pmkc, prm::mkc::free) != 0)
    return Fail(prm::MLX5_CQE_SYNDROME_LOCAL_PROT_ERR, UmrCheck::PARENT_UNKNOWN);
  const uint32_t pmode =
      (prm::Get(pmkc, prm::mkc::access_mode_4_2) << 2) | prm::Get(pmkc, prm::mkc::access_mode_1_0);
  if (parent.window || pmode == prm::MKC_ACCESS_MODE_KLMS)
    return BadBind(UmrCheck::PARENT_IS_WINDOW);
  if (parent.pd != mw.pd) return BadBind(UmrCheck::PARENT_PD);
  if (prm::Get(pmkc, prm::mkc::umr_en) == 0) return BadBind(UmrCheck::PARENT_NO_BIND);
  const uint64_t pstart = prm::Get(pmkc, prm::mkc::start_addr);
  const uint64_t plen = prm::Get(pmkc, prm::mkc::len);
  const bool whole = prm::Get(pmkc, prm::mkc::length64) != 0;
  if (!whole && pstart == 0) return BadBind(UmrCheck::PARENT_ZERO_BASED);
  if (!whole && (address < pstart || address - pstart > plen || byte_count > plen - (address - pstart)))
    return BadBind(UmrCheck::PARENT_RANGE);
  if (whole && byte_count > ~uint64_t{0} - address) return BadBind(UmrCheck::PARENT_RANGE);
  // IB: a window granting remote write or atomic needs local write on its region.
  const bool remote_write = (u.mask & prm::MLX5_MKEY_MASK_RW) && prm::Get(w, SegMkc::rw) != 0;
  const bool atomic = (u.mask & prm::MLX5_MKEY_MASK_A) && prm::Get(w, SegMkc::a) != 0;
  if ((remote_write || atomic) && prm::Get(pmkc, prm::mkc::lw) == 0)
    return BadBind(UmrCheck::PARENT_ACCESS);
  *parent_index = pit->first;
  return {};
}

// Every check passed: the mkc fields mkey_mask selects, then the binding (or its release).
void ApplyWindowUmr(std::map<uint32_t, Mkey>& mkeys, Mkey& mw, Bytes w, const WindowUmr& u,
                    uint32_t parent_index) {
  const uint64_t mask = u.mask;
  prm::Bits mw_mkc(mw.mkc);
  for (uint32_t t : mw.klm_targets) --mkeys.at(t).klm_refs;
  mw.klm_targets.clear();
  if (mask & prm::MLX5_MKEY_MASK_KEY) mw_mkc.set(prm::mkc::mkey_7_0, prm::Get(w, SegMkc::mkey_7_0));
  if (u.qpn_masked) mw_mkc.set(prm::mkc::qpn, u.seg_qpn);
  if (mask & prm::MLX5_MKEY_MASK_START_ADDR)
    mw_mkc.set(prm::mkc::start_addr, prm::Get(w, SegMkc::start_addr));
  if (mask & prm::MLX5_MKEY_MASK_LEN) mw_mkc.set(prm::mkc::len, u.seg_len);
  if (mask & prm::MLX5_MKEY_MASK_LR) mw_mkc.set(prm::mkc::lr, prm::Get(w, SegMkc::lr));
  if (mask & prm::MLX5_MKEY_MASK_LW) mw_mkc.set(prm::mkc::lw, prm::Get(w, SegMkc::lw));
  if (mask & prm::MLX5_MKEY_MASK_RR) mw_mkc.set(prm::mkc::rr, prm::Get(w, SegMkc::rr));
  if (mask & prm::MLX5_MKEY_MASK_RW) mw_mkc.set(prm::mkc::rw, prm::Get(w, SegMkc::rw));
  if (mask & prm::MLX5_MKEY_MASK_A) mw_mkc.set(prm::mkc::a, prm::Get(w, SegMkc::a));
  if (u.bind) {
    mw_mkc.set(prm::mkc::free, 0);
    Bytes klms = w.subspan(kHeadBytes, prm::MLX5_UMR_INLINE_KLM_BYTES);
    mw.translations.assign(klms.begin(), klms.end());
    mw.klm_targets.push_back(parent_index);
    ++mkeys.at(parent_index).klm_refs;
  } else {
    mw_mkc.set(prm::mkc::free, 1);
    mw.translations.clear();
  }
}

}  // namespace

UmrResult Firmware::PostUmr(const UmrRequest& r) {
  std::lock_guard lock(mutex_);
  return PostUmrLocked(r);
}

UmrResult Firmware::PostUmrLocked(const UmrRequest& r) {
  if (r.reg_umr) return PostMrUmrLocked(r);
  const Bytes w = r.wqe;
  WindowUmr u;
  if (UmrResult shape = CheckBindShape(w, r.qpn, &u); !shape.ok()) return shape;
  const uint32_t key = prm::Get(w, Ctrl::imm);
  auto wit = mkeys_.find(key >> 8);
  if (wit == mkeys_.end()) return BadBind(UmrCheck::MW_UNKNOWN);
  Mkey& mw = wit->second;
  if (UmrResult window = CheckWindow(mw, key, r, u); !window.ok()) return window;
  uint32_t parent_index = 0;
  if (u.bind)
    if (UmrResult parent = CheckParent(mkeys_, w, mw, u, &parent_index); !parent.ok())
      return parent;
  ApplyWindowUmr(mkeys_, mw, w, u, parent_index);
  return {};
}

// A REG_UMR QP's UMR on an MR: the mkey segment's access bits and PD, as mkey_mask selects them,
// replace the MR's; its key, translation and length stay. This is how the kernel re-registers an
// MR's access or PD without changing its lkey and rkey (ibv_rereg_mr without a new translation).
// Checks, in order: the WQE's shape (no translation: ds 8, xlt 0; mask only PD and the access
// bits; the 0x40 check is honoured) LOCAL_QP_OP_ERR; the MR (exists with that key byte, not a
// window, umr_en) and the new PD (exists, same uid as the MR) LOCAL_PROT_ERR.
UmrResult Firmware::PostMrUmrLocked(const UmrRequest& r) {
  constexpr uint64_t kMrMask = prm::MLX5_MKEY_MASK_PD | prm::MLX5_MKEY_MASK_LR |
                               prm::MLX5_MKEY_MASK_LW | prm::MLX5_MKEY_MASK_RR |
                               prm::MLX5_MKEY_MASK_RW | prm::MLX5_MKEY_MASK_A;
  constexpr uint8_t kMrFlags = prm::MLX5_WQE_UMR_CTRL_FLAG_INLINE | prm::MLX5_UMR_CHECK_FREE;
  const Bytes w = r.wqe;
  if (UmrResult head = CheckHead(w, r.qpn); !head.ok()) return head;
  if (prm::DsOf(prm::Get(w, Ctrl::qpn_ds)) != kHeadDs) return BadWqe(UmrCheck::WQE_DS);
  const uint32_t flags = prm::Get(w, UmrCtrl::flags);
  if ((flags & ~uint32_t{kMrFlags}) != 0) return BadWqe(UmrCheck::UMR_FLAGS);
  if (prm::Get(w, UmrCtrl::xlt_octowords) != 0 || prm::Get(w, UmrCtrl::xlt_offset) != 0 ||
      prm::Get(w, UmrCtrl::xlt_offset_47_16) != 0)
    return BadWqe(UmrCheck::XLT);
  const uint64_t mask = prm::Get(w, UmrCtrl::mkey_mask);
  if (mask == 0 || (mask & ~kMrMask) != 0) return BadWqe(UmrCheck::MKEY_MASK);

  auto prot = [](UmrCheck c) { return Fail(prm::MLX5_CQE_SYNDROME_LOCAL_PROT_ERR, c); };
  const uint32_t key = prm::Get(w, Ctrl::imm);
  auto it = mkeys_.find(key >> 8);
  if (it == mkeys_.end()) return prot(UmrCheck::MR_UNKNOWN);
  Mkey& mr = it->second;
  prm::Bits mkc(mr.mkc);
  if (mkc.get(prm::mkc::mkey_7_0) != (key & 0xff)) return prot(UmrCheck::MR_UNKNOWN);
  if (mr.window) return prot(UmrCheck::MR_IS_WINDOW);
  if (mkc.get(prm::mkc::umr_en) == 0) return prot(UmrCheck::MR_NO_UMR);
  if ((flags & prm::MLX5_UMR_CHECK_FREE) && mkc.get(prm::mkc::free) != 0)
    return prot(UmrCheck::MR_UNKNOWN);
  const uint32_t new_pd = static_cast<uint32_t>(prm::Get(w, SegMkc::pd));
  if (mask & prm::MLX5_MKEY_MASK_PD) {
    auto pd = pds_.find(new_pd);
    if (pd == pds_.end() || pd->second.uid != mr.uid) return prot(UmrCheck::MR_PD);
  }

  // ---- Apply: every check passed. ----
  if (mask & prm::MLX5_MKEY_MASK_PD && new_pd != mr.pd) {
    --pds_.at(mr.pd).mkeys;
    ++pds_.at(new_pd).mkeys;
    mr.pd = new_pd;
    mkc.set(prm::mkc::pd, new_pd);
  }
  if (mask & prm::MLX5_MKEY_MASK_LR) mkc.set(prm::mkc::lr, prm::Get(w, SegMkc::lr));
  if (mask & prm::MLX5_MKEY_MASK_LW) mkc.set(prm::mkc::lw, prm::Get(w, SegMkc::lw));
  if (mask & prm::MLX5_MKEY_MASK_RR) mkc.set(prm::mkc::rr, prm::Get(w, SegMkc::rr));
  if (mask & prm::MLX5_MKEY_MASK_RW) mkc.set(prm::mkc::rw, prm::Get(w, SegMkc::rw));
  if (mask & prm::MLX5_MKEY_MASK_A) mkc.set(prm::mkc::a, prm::Get(w, SegMkc::a));
  return {};
}

std::string_view UmrCheckName(UmrCheck c) {
  switch (c) {
#define ONCHIP_UMR_CHECK(n) \
  case UmrCheck::n:         \
    return #n;
    ONCHIP_UMR_CHECK(OK)
    ONCHIP_UMR_CHECK(WQE_TOO_SHORT)
    ONCHIP_UMR_CHECK(NOT_UMR)
    ONCHIP_UMR_CHECK(WQE_QPN)
    ONCHIP_UMR_CHECK(WQE_DS)
    ONCHIP_UMR_CHECK(UMR_FLAGS)
    ONCHIP_UMR_CHECK(MKEY_MASK)
    ONCHIP_UMR_CHECK(XLT)
    ONCHIP_UMR_CHECK(RESERVED)
    ONCHIP_UMR_CHECK(MW_UNKNOWN)
    ONCHIP_UMR_CHECK(MW_KEY)
    ONCHIP_UMR_CHECK(NOT_WINDOW)
    ONCHIP_UMR_CHECK(MW_PD)
    ONCHIP_UMR_CHECK(MW_NOT_FREE)
    ONCHIP_UMR_CHECK(MW_FREE)
    ONCHIP_UMR_CHECK(MW_QPN)
    ONCHIP_UMR_CHECK(MW_ZERO_BASED)
    ONCHIP_UMR_CHECK(MW_LENGTH)
    ONCHIP_UMR_CHECK(PARENT_UNKNOWN)
    ONCHIP_UMR_CHECK(PARENT_IS_WINDOW)
    ONCHIP_UMR_CHECK(PARENT_PD)
    ONCHIP_UMR_CHECK(PARENT_NO_BIND)
    ONCHIP_UMR_CHECK(PARENT_ZERO_BASED)
    ONCHIP_UMR_CHECK(PARENT_RANGE)
    ONCHIP_UMR_CHECK(PARENT_ACCESS)
    ONCHIP_UMR_CHECK(MR_UNKNOWN)
    ONCHIP_UMR_CHECK(MR_IS_WINDOW)
    ONCHIP_UMR_CHECK(MR_NO_UMR)
    ONCHIP_UMR_CHECK(MR_PD)
#undef ONCHIP_UMR_CHECK
  }
  return "UNKNOWN_UMR_CHECK";
}

}  // namespace onchip::sim
