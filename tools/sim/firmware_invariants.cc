// Firmware::CheckInvariants: the consistency of the context tables, in steps. Each step returns
// the first invariant it finds broken, or nullptr. The reference counts the objects keep are
// compared with counts recomputed from the tables (References), which the steps fill as they
// walk the objects that hold references.
#include <map>
#include <span>

#include "tools/sim/firmware.h"
#include "uapi/prm/cq.h"
#include "uapi/prm/mkey.h"
#include "uapi/prm/qp.h"
#include "uapi/prm/wq.h"

namespace onchip::sim {

namespace {

using Bytes = std::span<const std::byte>;

struct References {
  std::map<uint32_t, uint32_t> pd_mkeys, icm, klm;
  std::map<uint64_t, uint32_t> memic;
  std::map<uint32_t, uint32_t> pd_queues, cq, srq, xrcd;
  std::map<uint32_t, uint32_t> tis, rq, td;
  std::map<uint32_t, uint32_t> eq;
};

// Every pool hands out exactly the numbers its table holds; no object outlives kInitialized.
const char* CheckPools(const Contexts& c) {
  if (c.uar_ids.in_use() != c.uars.size()) return "uar pool and table disagree";
  if (c.pd_ids.in_use() != c.pds.size()) return "pd pool and table disagree";
  if (c.td_ids.in_use() != c.tds.size()) return "td pool and table disagree";
  if (c.xrcd_ids.in_use() != c.xrcds.size()) return "xrcd pool and table disagree";
  if (c.mkey_ids.in_use() != c.mkeys.size()) return "mkey pool and table disagree";
  if (c.object_ids.in_use() != c.sw_icm.size()) return "object pool and table disagree";
  if (c.eq_ids.in_use() != c.eqs.size()) return "eq pool and table disagree";
  if (c.cq_ids.in_use() != c.cqs.size()) return "cq pool and table disagree";
  if (c.qp_ids.in_use() != c.qps.size() + c.sqs.size() + c.rqs.size())
    return "qp pool and the QP, SQ and RQ tables disagree";
  if (c.tis_ids.in_use() != c.tises.size()) return "tis pool and table disagree";
  if (c.tir_ids.in_use() != c.tirs.size()) return "tir pool and table disagree";
  if (c.srq_ids.in_use() != c.srqs.size()) return "srq pool and table disagree";
  return nullptr;
}

const char* CheckOnlyWhenInitialized(const Contexts& c) {
  if (c.state != HcaState::kInitialized &&
      !(c.uars.empty() && c.pds.empty() && c.tds.empty() && c.xrcds.empty() && c.mkeys.empty() &&
        c.memic.empty() && c.sw_icm.empty() && c.eqs.empty() && c.cqs.empty() && c.qps.empty() &&
        c.srqs.empty() && c.sqs.empty() && c.rqs.empty() && c.tises.empty() && c.tirs.empty()))
    return "objects alive outside kInitialized";
  return nullptr;
}

// What each mkey names is alive (its PD, MEMIC allocation, SW ICM object, KLM targets); a
// window is bound to one MTT key of its PD exactly when it is not free.
const char* CheckMkeys(const Contexts& c, References& r) {
  for (const auto& [idx, m] : c.mkeys) {
    if (!c.pds.contains(m.pd)) return "mkey on a dead pd";
    ++r.pd_mkeys[m.pd];
    if (m.memic_start) {
      if (!c.memic.contains(*m.memic_start)) return "mkey on a dead memic allocation";
      ++r.memic[*m.memic_start];
    }
    if (m.sw_icm_id) {
      if (!c.sw_icm.contains(*m.sw_icm_id)) return "mkey on a dead sw icm object";
      ++r.icm[*m.sw_icm_id];
    }
    for (uint32_t t : m.klm_targets) {
      if (!c.mkeys.contains(t)) return "klm names a dead mkey";
      ++r.klm[t];
    }
    if (m.window) {
      const bool free = prm::Get(Bytes(m.mkc), prm::mkc::free) != 0;
      if (free != m.klm_targets.empty()) return "window bound state and parent disagree";
      if (!free) {
        if (m.klm_targets.size() != 1) return "bound window with other than one parent";
        const Mkey& parent = c.mkeys.at(m.klm_targets[0]);
        if (parent.window) return "window bound to a window";
        if (parent.pd != m.pd) return "window bound across PDs";
      }
    }
  }
  return nullptr;
}

const char* CheckQpState(const Qp& qp) {
  if (qp.state > prm::QP_STATE_ERR) return "qp in an undefined state";
  if (prm::Get(Bytes(qp.qpc), prm::qpc::state) != qp.state)
    return "qp context state and table disagree";
  return nullptr;
}

// What each QP holds is alive (XRC domain, PD, CQs and the pointers to them, SRQ).
const char* CheckQps(const Contexts& c, References& r) {
  for (const auto& [qpn, qp] : c.qps) {
    if (qp.xrcd) {
      if (!c.xrcds.contains(*qp.xrcd)) return "qp on a dead xrcd";
      ++r.xrcd[*qp.xrcd];
    }
    if (qp.xrc_tgt) {
      // The receive side of XRC holds nothing else and has no rings of its own.
      if (qp.srqn || qp.rq_wqe_count || qp.sq_wqebb_count || !qp.xrcd) return "xrc target with rings";
      if (const char* broken = CheckQpState(qp)) return broken;
      continue;
    }
    if (!c.pds.contains(qp.pd)) return "qp on a dead pd";
    ++r.pd_queues[qp.pd];
    if (!c.cqs.contains(qp.cqn_snd) || !c.cqs.contains(qp.cqn_rcv)) return "qp on a dead cq";
    if (qp.cq_snd != &c.cqs.at(qp.cqn_snd) || qp.cq_rcv != &c.cqs.at(qp.cqn_rcv))
      return "qp's cq pointers and numbers disagree";
    ++r.cq[qp.cqn_snd];
    ++r.cq[qp.cqn_rcv];
    if (qp.srqn) {
      if (!c.srqs.contains(*qp.srqn)) return "qp on a dead srq";
      ++r.srq[*qp.srqn];
    }
    if (const char* broken = CheckQpState(qp)) return broken;
    if (qp.pas.empty()) return "qp without pages";
    if (qp.rq_wqe_count == 0 && qp.sq_wqebb_count == 0) return "qp without a ring";
  }
  return nullptr;
}

// A raw packet QP's objects: SQs and RQs (numbers of their own, what they hold alive), TIRs and
// TISes (their transport domain, the RQ a TIR dispatches to) and the counts they keep.
const char* CheckEthQueues(const Contexts& c, References& r) {
  for (const auto& [sqn, sq] : c.sqs) {
    if (c.qps.contains(sqn) || c.rqs.contains(sqn)) return "sq number shared";
    if (!c.pds.contains(sq.pd)) return "sq on a dead pd";
    ++r.pd_queues[sq.pd];
    if (!c.cqs.contains(sq.cqn)) return "sq on a dead cq";
    ++r.cq[sq.cqn];
    if (!c.tises.contains(sq.tisn)) return "sq on a dead tis";
    ++r.tis[sq.tisn];
    if (prm::Get(Bytes(sq.sqc), prm::sqc::state) != sq.state)
      return "sq context state and table disagree";
  }
  for (const auto& [rqn, rq] : c.rqs) {
    if (c.qps.contains(rqn)) return "rq number shared";
    if (!c.pds.contains(rq.pd)) return "rq on a dead pd";
    ++r.pd_queues[rq.pd];
    if (!c.cqs.contains(rq.cqn)) return "rq on a dead cq";
    ++r.cq[rq.cqn];
    if (prm::Get(Bytes(rq.rqc), prm::rqc::state) != rq.state)
      return "rq context state and table disagree";
  }
  for (const auto& [tirn, tir] : c.tirs) {
    if (!c.rqs.contains(tir.rqn)) return "tir on a dead rq";
    ++r.rq[tir.rqn];
    if (!c.tds.contains(tir.td)) return "tir on a dead transport domain";
    ++r.td[tir.td];
  }
  for (const auto& [tisn, tis] : c.tises) {
    if (!c.tds.contains(tis.td)) return "tis on a dead transport domain";
    ++r.td[tis.td];
    if (tis.sqs != r.tis[tisn]) return "tis sq count wrong";
  }
  for (const auto& [rqn, rq] : c.rqs)
    if (rq.tirs != r.rq[rqn]) return "rq tir count wrong";
  return nullptr;
}

// Each SRQ's PD (and an XRC SRQ's domain and CQ) is alive; only plain SRQs have QP users.
const char* CheckSrqs(const Contexts& c, References& r) {
  for (const auto& [srqn, srq] : c.srqs) {
    if (!c.pds.contains(srq.pd)) return "srq on a dead pd";
    ++r.pd_queues[srq.pd];
    if (srq.users != r.srq[srqn]) return "srq user count wrong";
    if (srq.xrcd) {
      if (!c.xrcds.contains(*srq.xrcd)) return "xrc srq on a dead xrcd";
      ++r.xrcd[*srq.xrcd];
      if (!c.cqs.contains(srq.cqn)) return "xrc srq on a dead cq";
      ++r.cq[srq.cqn];
      if (srq.users != 0) return "a qp receives from an xrc srq";
    }
    if (srq.pas.empty()) return "srq without pages";
  }
  return nullptr;
}

// The counts CQs, XRC domains, PDs, MEMIC allocations, SW ICM objects and mkeys keep match the
// references the walks above found.
const char* CheckReferenceCounts(const Contexts& c, References& r) {
  for (const auto& [cqn, cq] : c.cqs)
    if (cq.users != r.cq[cqn]) return "cq user count wrong";
  for (const auto& [id, x] : c.xrcds)
    if (x.users != r.xrcd[id]) return "xrcd user count wrong";
  for (const auto& [idx, pd] : c.pds) {
    if (pd.mkeys != r.pd_mkeys[idx]) return "pd mkey count wrong";
    if (pd.queues != r.pd_queues[idx]) return "pd queue count wrong";
  }
  for (const auto& [start, a] : c.memic)
    if (a.mkeys != r.memic[start]) return "memic mkey count wrong";
  for (const auto& [id, o] : c.sw_icm)
    if (o.mkeys != r.icm[id]) return "sw icm mkey count wrong";
  for (const auto& [idx, m] : c.mkeys)
    if (m.klm_refs != r.klm[idx]) return "klm reference count wrong";
  return nullptr;
}

// Each CQ's EQ is alive and its size fields match its context; each EQ counts its CQs.
const char* CheckCqsAndEqs(const Contexts& c, References& r) {
  for (const auto& [cqn, cq] : c.cqs) {
    if (!c.eqs.contains(cq.eqn)) return "cq on a dead eq";
    ++r.eq[cq.eqn];
    if (cq.pas.empty()) return "cq without pages";
    const Bytes cqc(cq.cqc);
    if (cq.log_size != prm::Get(cqc, prm::cqc::log_cq_size) ||
        cq.cqe_bytes != (prm::Get(cqc, prm::cqc::cqe_sz) == 1 ? 128u : 64u))
      return "cq size and context disagree";
  }
  for (const auto& [eqn, eq] : c.eqs) {
    if (eq.cqs != r.eq[eqn]) return "eq cq count wrong";
    if (eq.pas.empty()) return "eq without pages";
  }
  return nullptr;
}

// MEMIC allocations lie apart inside the window; SW ICM objects are backed whole and apart.
const char* CheckDeviceMemory(const Contexts& c, const BarLayout& layout) {
  uint64_t prev_end = layout.memic_start;
  for (const auto& [start, a] : c.memic) {
    if (start < prev_end || a.size == 0 || start + a.size > layout.memic_start + layout.memic_size)
      return "memic allocations overlap or leave the window";
    prev_end = start + a.size;
  }
  std::map<uint64_t, uint64_t> icm_ranges;
  for (const auto& [id, o] : c.sw_icm) {
    if (o.backing.size() != (uint64_t{1} << o.log_size)) return "sw icm backing size wrong";
    icm_ranges[o.start] = o.backing.size();
  }
  uint64_t icm_end = 0;
  for (const auto& [start, size] : icm_ranges) {
    if (start < icm_end) return "sw icm objects overlap";
    icm_end = start + size;
  }
  return nullptr;
}

}  // namespace

const char* Firmware::CheckInvariants() const {
  std::lock_guard lock(mutex_);
  const Contexts& c = contexts_;
  if (const char* broken = CheckPools(c)) return broken;
  if (pages_.size() > config_.max_pages_held) return "more pages than the limit";
  if (const char* broken = CheckOnlyWhenInitialized(c)) return broken;
  References r;
  if (const char* broken = CheckMkeys(c, r)) return broken;
  if (const char* broken = CheckQps(c, r)) return broken;
  if (const char* broken = CheckEthQueues(c, r)) return broken;
  for (const auto& [td, uid] : c.tds)
    if (TdUsers(td) != r.td[td]) return "transport domain user count wrong";
  if (const char* broken = CheckSrqs(c, r)) return broken;
  if (const char* broken = CheckReferenceCounts(c, r)) return broken;
  if (const char* broken = CheckCqsAndEqs(c, r)) return broken;
  return CheckDeviceMemory(c, layout_);
}

}  // namespace onchip::sim
