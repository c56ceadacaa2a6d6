#include "driver/verbs/calls.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "driver/ah.h"
#include "driver/cq.h"
#include "driver/dm.h"
#include "driver/dmah.h"
#include "driver/events.h"
#include "driver/import.h"
#include "driver/mr.h"
#include "driver/mw.h"
#include "driver/mw_bind.h"
#include "driver/parent_domain.h"
#include "driver/pd.h"
#include "driver/qp.h"
#include "driver/srq.h"
#include "driver/td.h"
#include "uapi/verbs/abi34.h"
#include "driver/xrcd.h"
#include "log/log.h"

namespace onchip::driver::verbs {
namespace {

// A failure's errno, for the verbs face. Under ONCHIP_LOG=debug the failure's full account (what
// failed, the firmware's status and syndrome when a command did) goes to stderr first, as
// libmlx5 prints under MLX5_DEBUG_MASK: perftest or a pingpong says only "Couldn't create QP".
int ErrnoOf(const Error& e) {
  if (log::Enabled(log::Level::kDebug)) log::Say(log::Level::kDebug, "onchip: %s", e.describe().c_str());
  return e.errno_value();
}

// The verbs struct a driver object embeds first, or NULL with errno.
template <class V, class T>
V* VerbsOrErrno(Result<T*> r) {
  if (r) return &(*r)->ibv;
  errno = ErrnoOf(r.error());
  return nullptr;
}

template <class V>
V* Errno(int e) {
  errno = e;
  return nullptr;
}

// An object created through `context` points at it (the device may serve several contexts).
template <class T>
Result<T*> Through(ibv_context* context, Result<T*> r) {
  if (r) (*r)->ibv.context = context;
  return r;
}

// True when `object` was created through a context of another uverbs file than `context`'s (a
// context and the ones imported from it are one file), or in another process (a forked child's
// parent). The kernel looks every handle up in the caller's uverbs file only, so another file's
// object is not found there; a child's commands go through its own
// connection to the device (provider.cc), where its parent's objects are not found either.
template <class T>
bool OfAnotherContext(T* object, const ibv_context* context) {
  return object != nullptr &&
         (!Device::SameFile(object->context, context) || !OfThisProcess(object));
}

template <class Driver, class V>
bool MadeHere(V* object) {
  if (object == nullptr) return true;
  const auto& device = Driver::From(object)->device;
  return device == nullptr || device->InThisProcess();
}

int AsErrno(const Result<void>& r) { return r ? 0 : ErrnoOf(r.error()); }

std::shared_ptr<Device> DeviceOf(ibv_context* context) {
  Device* d = Device::FromVerbs(context);
  return d ? d->weak_from_this().lock() : nullptr;  // null while the device is being destroyed
}

// The device's event thread, or null (no interrupts, or no device).
EventThread* EventsOf(ibv_context* context) {
  Device* d = Device::FromVerbs(context);
  return d ? d->events() : nullptr;
}

// As the kernel looks up a CQ's completion channel: none is fine; one this device's event
// thread does not know, or one of another context, is EBADF.
int CheckChannel(ibv_context* context, ibv_comp_channel* channel) {
  if (channel == nullptr) return 0;
  EventThread* events = EventsOf(context);
  return events && events->ChannelOf(channel, context) ? 0 : EBADF;
}

// A new CQ's events: completions to its channel, CQ errors to its context's async_fd.
void WatchCq(ibv_context* context, Cq& cq, ibv_comp_channel* channel) {
  EventThread* events = EventsOf(context);
  if (events == nullptr) return;
  const auto handle = reinterpret_cast<uint64_t>(&cq.dp.verbs.cq);
  if (channel != nullptr) events->WatchCq(cq.cqn, handle, channel);
  events->WatchQueue(EventQueueKind::kCq, cq.cqn, handle, context);
}

void WatchQueue(ibv_context* context, EventQueueKind kind, uint32_t number, const void* element) {
  if (EventThread* events = EventsOf(context))
    events->WatchQueue(kind, number, reinterpret_cast<uint64_t>(element), context);
}

void UnwatchQueue(ibv_context* context, EventQueueKind kind, uint32_t number) {
  if (EventThread* events = EventsOf(context)) events->UnwatchQueue(kind, number);
}

}  // namespace

bool OfThisProcess(ibv_pd* pd) { return MadeHere<Pd>(pd); }
bool OfThisProcess(ibv_dm* dm) { return MadeHere<Dm>(dm); }
bool OfThisProcess(ibv_mw* mw) { return MadeHere<Mw>(mw); }
bool OfThisProcess(ibv_td* td) { return MadeHere<Td>(td); }
bool OfThisProcess(ibv_mr* mr) { return MadeHere<Mr>(mr); }
bool OfThisProcess(ibv_cq* cq) { return MadeHere<Cq>(cq); }
bool OfThisProcess(ibv_qp* qp) { return MadeHere<Qp>(qp); }
bool OfThisProcess(ibv_srq* srq) { return MadeHere<Srq>(srq); }
bool OfThisProcess(ibv_ah* ah) { return MadeHere<Ah>(ah); }
bool OfThisProcess(ibv_xrcd* xrcd) { return MadeHere<Xrcd>(xrcd); }
bool OfThisProcess(ibv_dmah* dmah) { return MadeHere<Dmah>(dmah); }

ibv_comp_channel* create_comp_channel(ibv_context* context) {
  if (context == nullptr) return Errno<ibv_comp_channel>(EINVAL);
  EventThread* events = EventsOf(context);
  if (events == nullptr) return Errno<ibv_comp_channel>(EOPNOTSUPP);
  // malloc, as libibverbs allocates it: ibv_destroy_comp_channel frees it with free().
  auto* channel = static_cast<ibv_comp_channel*>(std::malloc(sizeof(ibv_comp_channel)));
  if (channel == nullptr) return Errno<ibv_comp_channel>(ENOMEM);
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    const int e = errno;
    std::free(channel);
    return Errno<ibv_comp_channel>(e);
  }
  channel->context = context;
  channel->fd = fds[0];
  channel->refcnt = 0;
  if (auto added = events->AddChannel(channel, context, fds[1]); !added) {  // takes fds[1]
    close(fds[0]);
    std::free(channel);
    return Errno<ibv_comp_channel>(ErrnoOf(added.error()));
  }
  return channel;
}

ibv_dm* alloc_dm(ibv_context* context, ibv_alloc_dm_attr* attr) {
  return dv_alloc_dm(context, attr, nullptr);
}

ibv_dm* dv_alloc_dm(ibv_context* context, ibv_alloc_dm_attr* attr, mlx5dv_alloc_dm_attr* dv_attr) {
  if (attr == nullptr) return Errno<ibv_dm>(EINVAL);
  return VerbsOrErrno<ibv_dm>(Through(context, AllocDm(DeviceOf(context), *attr, dv_attr)));
}

int free_dm(ibv_dm* dm) { return AsErrno(FreeDm(dm ? Dm::From(dm) : nullptr)); }

ibv_pd* alloc_pd(ibv_context* context) {
  return VerbsOrErrno<ibv_pd>(Through(context, AllocPd(DeviceOf(context))));
}

int dealloc_pd(ibv_pd* pd) { return AsErrno(DeallocPd(pd ? Pd::From(pd) : nullptr)); }

ibv_pd* import_pd(ibv_context* context, uint32_t pd_handle) {
  return VerbsOrErrno<ibv_pd>(ImportPd(DeviceOf(context), context, pd_handle));
}

ibv_mr* import_mr(ibv_pd* pd, uint32_t mr_handle) {
  return VerbsOrErrno<ibv_mr>(ImportMr(pd ? Pd::From(pd) : nullptr, mr_handle));
}

ibv_dm* import_dm(ibv_context* context, uint32_t dm_handle) {
  return VerbsOrErrno<ibv_dm>(ImportDm(DeviceOf(context), context, dm_handle));
}

void unimport_pd(ibv_pd* pd) { (void)UnimportPd(pd ? Pd::From(pd) : nullptr); }
void unimport_mr(ibv_mr* mr) { (void)UnimportMr(mr ? Mr::From(mr) : nullptr); }
void unimport_dm(ibv_dm* dm) { (void)UnimportDm(dm ? Dm::From(dm) : nullptr); }

ibv_mr* reg_dm_mr(ibv_pd* pd, ibv_dm* dm, uint64_t dm_offset, size_t length, unsigned int access) {
  // An ioctl method's handle lookup that finds nothing is ENOENT.
  if (pd != nullptr && OfAnotherContext(dm, pd->context)) return Errno<ibv_mr>(ENOENT);
  return VerbsOrErrno<ibv_mr>(RegDmMr(pd ? Pd::Parent(pd) : nullptr, dm ? Dm::From(dm) : nullptr,
                                      dm_offset, length, access));
}

int dereg_mr(ibv_mr* mr) { return AsErrno(DeregMr(mr ? Mr::From(mr) : nullptr)); }

int rereg_mr(ibv_mr* mr, int flags, ibv_pd* pd, void* addr, size_t length, int access) {
  if (mr != nullptr && (flags & IBV_REREG_MR_CHANGE_PD) && OfAnotherContext(pd, mr->context)) {
    errno = EINVAL;  // REREG_MR is a write command: the PD's lookup finds nothing
    return EINVAL;
  }
  const int e = AsErrno(ReregMr(mr ? Mr::From(mr) : nullptr, flags, pd ? Pd::Parent(pd) : nullptr,
                                addr, length, static_cast<unsigned>(access)));
  if (e != 0) errno = e;
  return e;
}

int dv_init_dm(ibv_dm* dm, mlx5dv_dm* out) {
  if (dm == nullptr || out == nullptr) return EINVAL;
  QueryDv(*Dm::From(dm), out);
  return 0;
}

ibv_mr* reg_mr(ibv_pd* pd, void* addr, size_t length, uint64_t iova, unsigned int access) {
  return VerbsOrErrno<ibv_mr>(RegMr(pd ? Pd::Parent(pd) : nullptr, addr, length, iova, access));
}

ibv_mr* reg_mr_ex(ibv_pd* pd, ibv_mr_init_attr* attr) {
  if (pd == nullptr || attr == nullptr) return Errno<ibv_mr>(EINVAL);
  constexpr uint64_t kKnown = IBV_REG_MR_MASK_IOVA | IBV_REG_MR_MASK_ADDR | IBV_REG_MR_MASK_FD |
                              IBV_REG_MR_MASK_FD_OFFSET | IBV_REG_MR_MASK_DMAH |
                              IBV_REG_MR_MASK_BUF;
  const uint64_t mask = attr->comp_mask;
  if (mask & ~kKnown) return Errno<ibv_mr>(EINVAL);
  const bool by_addr = mask & IBV_REG_MR_MASK_ADDR;
  const bool by_fd = mask & IBV_REG_MR_MASK_FD;
  // rdma-core's ibv_cmd_reg_mr_ex: ADDR and FD exclusive, FD_OFFSET only with FD.
  if (by_addr == by_fd && !(mask & IBV_REG_MR_MASK_BUF)) return Errno<ibv_mr>(EINVAL);
  if (by_addr && (mask & IBV_REG_MR_MASK_FD_OFFSET)) return Errno<ibv_mr>(EINVAL);
  if (by_fd || (mask & IBV_REG_MR_MASK_BUF)) return Errno<ibv_mr>(EOPNOTSUPP);  // no dma-buf
  if ((attr->access & IBV_ACCESS_ON_DEMAND) && (mask & IBV_REG_MR_MASK_DMAH))
    return Errno<ibv_mr>(EINVAL);
  const uint64_t iova =
      (mask & IBV_REG_MR_MASK_IOVA) ? attr->iova : reinterpret_cast<uintptr_t>(attr->addr);
  Dmah* dmah = (mask & IBV_REG_MR_MASK_DMAH) && attr->dmah ? Dmah::From(attr->dmah) : nullptr;
  if ((mask & IBV_REG_MR_MASK_DMAH) && dmah == nullptr) return Errno<ibv_mr>(EINVAL);
  // REG_MR is an ioctl method: the kernel looks the DMA handle up in the caller's own uverbs
  // file, and a handle of another finds nothing, ENOENT (as reg_dm_mr's DM).
  if (dmah != nullptr && OfAnotherContext(attr->dmah, pd->context)) return Errno<ibv_mr>(ENOENT);
  return VerbsOrErrno<ibv_mr>(RegMr(Pd::Parent(pd), attr->addr, attr->length, iova,
                                    static_cast<unsigned>(attr->access), dmah));
}

ibv_td* alloc_td(ibv_context* context, ibv_td_init_attr* attr) {
  if (attr == nullptr) return Errno<ibv_td>(EINVAL);
  return VerbsOrErrno<ibv_td>(Through(context, AllocTd(DeviceOf(context), *attr)));
}

int dealloc_td(ibv_td* td) { return AsErrno(DeallocTd(td ? Td::From(td) : nullptr)); }

ibv_pd* alloc_parent_domain(ibv_context* context, ibv_parent_domain_init_attr* attr) {
  if (attr == nullptr) return Errno<ibv_pd>(EINVAL);
  auto device = DeviceOf(context);
  if (!device) return Errno<ibv_pd>(EINVAL);
  return VerbsOrErrno<ibv_pd>(AllocParentDomain(device, *attr));
}

ibv_mw* alloc_mw(ibv_pd* pd, ibv_mw_type type) {
  return VerbsOrErrno<ibv_mw>(AllocMw(pd ? Pd::Parent(pd) : nullptr, static_cast<int>(type)));
}

int dealloc_mw(ibv_mw* mw) { return AsErrno(DeallocMw(mw ? Mw::From(mw) : nullptr)); }

ibv_dmah* alloc_dmah(ibv_context* context, ibv_dmah_init_attr* attr) {
  if (attr == nullptr) return Errno<ibv_dmah>(EINVAL);
  return VerbsOrErrno<ibv_dmah>(Through(context, AllocDmah(DeviceOf(context), *attr)));
}

int dealloc_dmah(ibv_dmah* dmah) { return AsErrno(DeallocDmah(dmah ? Dmah::From(dmah) : nullptr)); }

ibv_cq* create_cq(ibv_context* context, int cqe, ibv_comp_channel* channel, int comp_vector) {
  if (cqe <= 0 || comp_vector < 0) return Errno<ibv_cq>(EINVAL);
  if (int e = CheckChannel(context, channel)) return Errno<ibv_cq>(e);
  CqAttributes attr;
  attr.cqe = static_cast<uint32_t>(cqe);
  attr.comp_vector = static_cast<uint32_t>(comp_vector);
  auto cq = CreateCq(DeviceOf(context), attr);
  if (!cq) return Errno<ibv_cq>(ErrnoOf(cq.error()));
  (*cq)->dp.verbs.cq.context = context;  // the device may serve several contexts
  WatchCq(context, **cq, channel);
  return &(*cq)->dp.verbs.cq;
}

ibv_cq_ex* create_cq_ex(ibv_context* context, ibv_cq_init_attr_ex* attr) {
  if (attr == nullptr || attr->cqe == 0) return Errno<ibv_cq_ex>(EINVAL);
  if (attr->comp_mask & ~uint32_t{IBV_CQ_INIT_ATTR_MASK_FLAGS | IBV_CQ_INIT_ATTR_MASK_PD})
    return Errno<ibv_cq_ex>(EINVAL);
  CqAttributes a;
  a.extended = true;
  a.cqe = attr->cqe;
  a.comp_vector = attr->comp_vector;
  a.wc_flags = attr->wc_flags;
  if (attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS) a.create_flags = attr->flags;
  if (attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_PD) {
    if (attr->parent_domain == nullptr) return Errno<ibv_cq_ex>(EINVAL);
    a.parent_domain = Pd::From(attr->parent_domain);
  }
  if (int e = CheckChannel(context, attr->channel)) return Errno<ibv_cq_ex>(e);
  auto cq = CreateCq(DeviceOf(context), a);
  if (!cq) return Errno<ibv_cq_ex>(ErrnoOf(cq.error()));
  ibv_cq_ex* ex = &(*cq)->dp.verbs.cq_ex;
  // libibverbs initialises the CQ when this returns (rdma-core libibverbs/device.c
  // __lib_ibv_create_cq_ex calls verbs_init_cq: context, channel reference, cq_context, event
  // counters), as ibv_create_cq does after create_cq; doing it here too would take the
  // channel's reference twice, and ibv_destroy_comp_channel would answer EBUSY forever.
  (*cq)->dp.verbs.cq.context = context;  // the device may serve several contexts
  WatchCq(context, **cq, attr->channel);
  return ex;
}

int destroy_cq(ibv_cq* cq) {
  if (cq == nullptr) return EINVAL;
  ibv_context* context = cq->context;
  const uint32_t cqn = Cq::From(cq)->cqn;
  const int channel_fd = cq->channel ? cq->channel->fd : -1;
  if (int e = AsErrno(DestroyCq(Cq::From(cq)))) return e;  // frees *cq
  // Its events stop, and its records still unread leave the channel (libibverbs 44 waits for
  // no acknowledgement here: ibv_destroy_cq only drops the channel's reference afterwards).
  if (EventThread* events = EventsOf(context)) {
    events->UnwatchCq(cqn, reinterpret_cast<uint64_t>(cq), channel_fd);
    events->UnwatchQueue(EventQueueKind::kCq, cqn);
  }
  return 0;
}

int resize_cq(ibv_cq* cq, int cqe) {
  if (cq == nullptr) return EINVAL;
  return AsErrno(ResizeCq(Cq::From(cq), cqe));
}

int modify_cq(ibv_cq* cq, ibv_modify_cq_attr* attr) {
  if (cq == nullptr || attr == nullptr) return EINVAL;
  return AsErrno(ModifyCq(Cq::From(cq), *attr));
}

namespace {

void TakeCommonQpAttributes(const ibv_qp_init_attr_ex* attr, QpAttributes& a) {
  a.type = attr->qp_type;
  a.cap = attr->cap;
  a.sq_sig_all = attr->sq_sig_all != 0;
  a.qp_context = attr->qp_context;
  if (attr->comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) a.create_flags = attr->create_flags;
  if (attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) {
    a.ex = true;
    a.send_ops_flags = attr->send_ops_flags;
  }
}

ibv_qp* CreateQpFrom(Pd* pd, ibv_qp_init_attr_ex* attr) {
  // A write command's lookup that finds nothing is EINVAL. The kernel looks up no receive CQ
  // or SRQ for an XRC send QP.
  const bool xrc_send = attr->qp_type == IBV_QPT_XRC_SEND;
  if (OfAnotherContext(attr->send_cq, pd->ibv.context) ||
      (!xrc_send && OfAnotherContext(attr->recv_cq, pd->ibv.context)) ||
      (!xrc_send && OfAnotherContext(attr->srq, pd->ibv.context)))
    return Errno<ibv_qp>(EINVAL);
  QpAttributes a;
  TakeCommonQpAttributes(attr, a);
  a.send_cq = attr->send_cq ? Cq::From(attr->send_cq) : nullptr;
  a.recv_cq = attr->recv_cq ? Cq::From(attr->recv_cq) : nullptr;
  a.srq = attr->srq ? Srq::From(attr->srq) : nullptr;
  auto qp = CreateQp(pd, a);
  if (!qp) return Errno<ibv_qp>(ErrnoOf(qp.error()));
  attr->cap = a.cap;
  ibv_qp& v = (*qp)->ibv();
  WatchQueue(pd->ibv.context, EventQueueKind::kQp, v.qp_num, &v);
  return &v;
}

}  // namespace

ibv_qp* create_qp(ibv_pd* pd, ibv_qp_init_attr* attr) {
  if (pd == nullptr || attr == nullptr) return Errno<ibv_qp>(EINVAL);
  ibv_qp_init_attr_ex ex{};
  ex.qp_context = attr->qp_context;
  ex.send_cq = attr->send_cq;
  ex.recv_cq = attr->recv_cq;
  ex.srq = attr->srq;
  ex.cap = attr->cap;
  ex.qp_type = attr->qp_type;
  ex.sq_sig_all = attr->sq_sig_all;
  ex.comp_mask = IBV_QP_INIT_ATTR_PD;
  ex.pd = pd;
  ibv_qp* qp = CreateQpFrom(Pd::Parent(pd), &ex);
  if (qp) attr->cap = ex.cap;
  return qp;
}

ibv_qp* create_qp_ex(ibv_context* context, ibv_qp_init_attr_ex* attr) {
  if (attr == nullptr) return Errno<ibv_qp>(EINVAL);
  constexpr uint32_t kKnown = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_XRCD |
                              IBV_QP_INIT_ATTR_CREATE_FLAGS | IBV_QP_INIT_ATTR_MAX_TSO_HEADER |
                              IBV_QP_INIT_ATTR_IND_TABLE | IBV_QP_INIT_ATTR_RX_HASH |
                              IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
  if (attr->comp_mask & ~kKnown) return Errno<ibv_qp>(EINVAL);
  if (attr->comp_mask & (IBV_QP_INIT_ATTR_MAX_TSO_HEADER | IBV_QP_INIT_ATTR_IND_TABLE |
                         IBV_QP_INIT_ATTR_RX_HASH))
    return Errno<ibv_qp>(EOPNOTSUPP);
  // libibverbs sends the XRC domain's handle where the PD's goes: an XRC receive QP needs it,
  // and any other type given one finds no PD there (EINVAL).
  if (attr->comp_mask & IBV_QP_INIT_ATTR_XRCD) {
    if (attr->qp_type != IBV_QPT_XRC_RECV || attr->xrcd == nullptr ||
        OfAnotherContext(attr->xrcd, context))
      return Errno<ibv_qp>(EINVAL);
    QpAttributes a;
    TakeCommonQpAttributes(attr, a);
    a.xrcd = Xrcd::From(attr->xrcd);
    auto qp = CreateXrcRecvQp(a);
    if (!qp) return Errno<ibv_qp>(ErrnoOf(qp.error()));
    attr->cap = a.cap;
    ibv_qp& v = (*qp)->ibv();
    v.context = context;
    WatchQueue(context, EventQueueKind::kQp, v.qp_num, &v);
    return &v;
  }
  if (attr->qp_type == IBV_QPT_XRC_RECV) return Errno<ibv_qp>(EINVAL);
  if (!(attr->comp_mask & IBV_QP_INIT_ATTR_PD) || attr->pd == nullptr) return Errno<ibv_qp>(EINVAL);
  if (OfAnotherContext(attr->pd, context)) return Errno<ibv_qp>(EINVAL);
  return CreateQpFrom(Pd::Parent(attr->pd), attr);
}

int modify_qp(ibv_qp* qp, ibv_qp_attr* attr, int attr_mask) {
  if (qp == nullptr || attr == nullptr) return EINVAL;
  return AsErrno(ModifyQp(Qp::From(qp), *attr, attr_mask));
}

int query_qp(ibv_qp* qp, ibv_qp_attr* attr, int attr_mask, ibv_qp_init_attr* init_attr) {
  if (qp == nullptr) return EINVAL;
  return AsErrno(QueryQp(Qp::From(qp), attr_mask, attr, init_attr));
}

int destroy_qp(ibv_qp* qp) {
  if (qp == nullptr) return EINVAL;
  ibv_context* context = qp->context;
  const uint32_t qpn = qp->qp_num;
  if (int e = AsErrno(DestroyQp(Qp::From(qp)))) return e;
  UnwatchQueue(context, EventQueueKind::kQp, qpn);
  return 0;
}

int bind_mw(ibv_qp* qp, ibv_mw* mw, ibv_mw_bind* mw_bind) {
  if (qp == nullptr || mw == nullptr || mw_bind == nullptr) return EINVAL;
  if (auto checked = CheckBind(*Mw::From(mw), mw_bind->bind_info, /*type_1_verb=*/true); !checked)
    return ErrnoOf(checked.error());
  ibv_send_wr wr{};
  wr.wr_id = mw_bind->wr_id;
  wr.opcode = IBV_WR_BIND_MW;
  wr.send_flags = mw_bind->send_flags;
  wr.bind_mw.mw = mw;
  wr.bind_mw.rkey = NextRkey(mw->rkey);
  wr.bind_mw.bind_info = mw_bind->bind_info;
  ibv_send_wr* bad = nullptr;
  if (int e = rings::PostSend(qp, &wr, &bad)) return e;
  mw->rkey = wr.bind_mw.rkey;
  return 0;
}

ibv_srq* create_srq(ibv_pd* pd, ibv_srq_init_attr* attr) {
  if (pd == nullptr || attr == nullptr) return Errno<ibv_srq>(EINVAL);
  SrqAttributes a{attr->attr.max_wr, attr->attr.max_sge, attr->attr.srq_limit};
  auto srq = CreateSrq(Pd::Parent(pd), a);
  if (!srq) return Errno<ibv_srq>(ErrnoOf(srq.error()));
  attr->attr.max_wr = a.max_wr;
  attr->attr.max_sge = a.max_sge;
  WatchQueue(pd->context, EventQueueKind::kSrq, (*srq)->srqn, &(*srq)->dp.verbs.srq);
  return &(*srq)->dp.verbs.srq;
}

ibv_srq* create_srq_ex(ibv_context* context, ibv_srq_init_attr_ex* attr) {
  if (attr == nullptr) return Errno<ibv_srq>(EINVAL);
  constexpr uint32_t kKnown = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD |
                              IBV_SRQ_INIT_ATTR_XRCD | IBV_SRQ_INIT_ATTR_CQ |
                              IBV_SRQ_INIT_ATTR_TM;
  if (attr->comp_mask & ~kKnown) return Errno<ibv_srq>(EINVAL);
  const ibv_srq_type type =
      (attr->comp_mask & IBV_SRQ_INIT_ATTR_TYPE) ? attr->srq_type : IBV_SRQT_BASIC;
  if (type != IBV_SRQT_BASIC && type != IBV_SRQT_XRC) return Errno<ibv_srq>(EOPNOTSUPP);
  if (attr->comp_mask & IBV_SRQ_INIT_ATTR_TM) return Errno<ibv_srq>(EOPNOTSUPP);
  if (!(attr->comp_mask & IBV_SRQ_INIT_ATTR_PD) || attr->pd == nullptr ||
      OfAnotherContext(attr->pd, context))
    return Errno<ibv_srq>(EINVAL);
  SrqAttributes a{attr->attr.max_wr, attr->attr.max_sge, attr->attr.srq_limit};
  // An XRC SRQ names its domain and its CQ, which the kernel looks up (EINVAL when missing or
  // another context's); a basic SRQ's command carries neither, whatever comp_mask says.
  if (type == IBV_SRQT_XRC) {
    if (!(attr->comp_mask & IBV_SRQ_INIT_ATTR_XRCD) || attr->xrcd == nullptr ||
        OfAnotherContext(attr->xrcd, context) || !(attr->comp_mask & IBV_SRQ_INIT_ATTR_CQ) ||
        attr->cq == nullptr || OfAnotherContext(attr->cq, context))
      return Errno<ibv_srq>(EINVAL);
    a.xrcd = Xrcd::From(attr->xrcd);
    a.cq = Cq::From(attr->cq);
  }
  auto srq = CreateSrq(Pd::Parent(attr->pd), a);
  if (!srq) return Errno<ibv_srq>(ErrnoOf(srq.error()));
  attr->attr.max_wr = a.max_wr;
  attr->attr.max_sge = a.max_sge;
  // ibv_create_srq_ex is inline in verbs.h: nothing fills these after the provider.
  ibv_srq& v = (*srq)->dp.verbs.srq;
  v.context = context;
  v.srq_context = attr->srq_context;
  WatchQueue(context, EventQueueKind::kSrq, (*srq)->srqn, &v);
  return &v;
}

int get_srq_num(ibv_srq* srq, uint32_t* srq_num) {
  if (srq == nullptr || srq_num == nullptr) return EINVAL;
  *srq_num = Srq::From(srq)->srqn;
  return 0;
}

ibv_xrcd* open_xrcd(ibv_context* context, ibv_xrcd_init_attr* attr) {
  if (attr == nullptr) return Errno<ibv_xrcd>(EINVAL);
  // libibverbs' ibv_cmd_open_xrcd: unknown comp_mask bits, then FD and OFLAGS both required.
  if (attr->comp_mask & ~uint32_t{IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS})
    return Errno<ibv_xrcd>(EOPNOTSUPP);
  if (!(attr->comp_mask & IBV_XRCD_INIT_ATTR_FD) || !(attr->comp_mask & IBV_XRCD_INIT_ATTR_OFLAGS))
    return Errno<ibv_xrcd>(EINVAL);
  auto xrcd = OpenXrcd(DeviceOf(context), attr->fd, attr->oflags);
  if (!xrcd) return Errno<ibv_xrcd>(ErrnoOf(xrcd.error()));
  // A shared domain keeps the context of its first open (ibv_xrcd has nothing else).
  if ((*xrcd)->opens == 1) (*xrcd)->ibv().context = context;
  return &(*xrcd)->ibv();
}

int close_xrcd(ibv_xrcd* xrcd) {
  if (xrcd == nullptr) return EINVAL;
  return AsErrno(CloseXrcd(Xrcd::From(xrcd)));
}

int modify_srq(ibv_srq* srq, ibv_srq_attr* attr, int attr_mask) {
  if (srq == nullptr || attr == nullptr) return EINVAL;
  return AsErrno(ModifySrq(Srq::From(srq), *attr, attr_mask));
}

int query_srq(ibv_srq* srq, ibv_srq_attr* attr) {
  if (srq == nullptr || attr == nullptr) return EINVAL;
  auto r = QuerySrq(Srq::From(srq));
  if (!r) return ErrnoOf(r.error());
  *attr = *r;
  return 0;
}

int destroy_srq(ibv_srq* srq) {
  if (srq == nullptr) return EINVAL;
  ibv_context* context = srq->context;
  const uint32_t srqn = Srq::From(srq)->srqn;
  if (int e = AsErrno(DestroySrq(Srq::From(srq)))) return e;
  UnwatchQueue(context, EventQueueKind::kSrq, srqn);
  return 0;
}

ibv_ah* create_ah(ibv_pd* pd, ibv_ah_attr* attr) {
  if (pd == nullptr || attr == nullptr) return Errno<ibv_ah>(EINVAL);
  auto ah = CreateAh(Pd::Parent(pd), *attr);
  if (ah) return &(*ah)->dp.verbs;
  // libmlx5 refuses a bad port with NULL and errno as it was.
  if (const int e = ErrnoOf(ah.error()); e != kPortOutOfRange) errno = e;
  return nullptr;
}

int destroy_ah(ibv_ah* ah) { return AsErrno(DestroyAh(ah ? Ah::From(ah) : nullptr)); }

}  // namespace onchip::driver::verbs
