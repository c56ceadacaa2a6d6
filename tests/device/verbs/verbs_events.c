/* Completion channels on the software ConnectX, seen by an unmodified verbs program: written
 * against <infiniband/verbs.h> only and run through tools/verbs_env/launch.py (the plugin
 * preloaded, as `tools/onchip run` does). A real RC completion wakes ibv_get_cq_event; events are
 * acknowledged; a CQ destroyed with an unread event leaves nothing behind in the channel; a
 * channel of another context is EBADF; async events (COMM_EST on a QP receiving in RTR, SRQ
 * limit) arrive on async_fd with their objects; and the device's event thread and fds are gone
 * after ibv_close_device. */
#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "checks.h"

enum { kBytes = 64 };

static int readable(int fd, int timeout_ms) {
  struct pollfd p = {.fd = fd, .events = POLLIN};
  return poll(&p, 1, timeout_ms) == 1 && (p.revents & POLLIN);
}

static struct ibv_qp* make_qp_srq(struct ibv_pd* pd, struct ibv_cq* cq, struct ibv_srq* srq) {
  struct ibv_qp_init_attr a;
  memset(&a, 0, sizeof a);
  a.send_cq = cq;
  a.recv_cq = cq;
  a.srq = srq;
  a.qp_type = IBV_QPT_RC;
  a.cap.max_send_wr = 4;
  a.cap.max_recv_wr = 4;
  a.cap.max_send_sge = 1;
  a.cap.max_recv_sge = 1;
  return ibv_create_qp(pd, &a);
}

static struct ibv_qp* make_qp(struct ibv_pd* pd, struct ibv_cq* cq) { return make_qp_srq(pd, cq, NULL); }

/* INIT, RTR and (unless rtr_only) RTS towards remote_qpn. */
static int connect_qp_to(struct ibv_qp* qp, uint32_t remote_qpn, const union ibv_gid* gid,
                         int rtr_only) {
  struct ibv_qp_attr a;
  memset(&a, 0, sizeof a);
  a.qp_state = IBV_QPS_INIT;
  a.port_num = 1;
  a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_LOCAL_WRITE;
  if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
    return -1;
  memset(&a, 0, sizeof a);
  a.qp_state = IBV_QPS_RTR;
  a.path_mtu = IBV_MTU_1024;
  a.dest_qp_num = remote_qpn;
  a.max_dest_rd_atomic = 1;
  a.min_rnr_timer = 1;
  a.ah_attr.is_global = 1;
  a.ah_attr.grh.dgid = *gid;
  a.ah_attr.grh.hop_limit = 1;
  a.ah_attr.port_num = 1;
  if (ibv_modify_qp(qp, &a,
                    IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                        IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
    return -1;
  if (rtr_only) return 0;
  memset(&a, 0, sizeof a);
  a.qp_state = IBV_QPS_RTS;
  a.timeout = 14;
  a.retry_cnt = 7;
  a.rnr_retry = 7;
  a.max_rd_atomic = 1;
  return ibv_modify_qp(qp, &a,
                       IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                           IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
}

static int connect_qp(struct ibv_qp* qp, uint32_t remote_qpn, const union ibv_gid* gid) {
  return connect_qp_to(qp, remote_qpn, gid, 0);
}

/* Waits up to 5 s for one async event of `ctx`; returns its type, or -1. */
static int next_async(struct ibv_context* ctx, struct ibv_async_event* ev) {
  if (!readable(ctx->async_fd, 5000) || ibv_get_async_event(ctx, ev)) return -1;
  return (int)ev->event_type;
}

static int post_send_only(struct ibv_qp* a, struct ibv_mr* mr, char* buf) {
  struct ibv_sge ss = {.addr = (uintptr_t)buf, .length = kBytes, .lkey = mr->lkey};
  struct ibv_send_wr swr;
  memset(&swr, 0, sizeof swr);
  swr.sg_list = &ss;
  swr.num_sge = 1;
  swr.opcode = IBV_WR_SEND;
  swr.send_flags = IBV_SEND_SIGNALED;
  struct ibv_send_wr* bad_s;
  return ibv_post_send(a, &swr, &bad_s);
}

static int send_once(struct ibv_qp* a, struct ibv_qp* b, struct ibv_mr* mr, char* buf);
static int reap(struct ibv_cq* cq, int n);

/* Async events on ctx->async_fd: COMM_EST when a QP in RTR receives, SRQ_LIMIT_REACHED when an
 * armed SRQ drops below its limit. */
static void check_async(struct ibv_context* ctx, struct ibv_pd* pd, struct ibv_mr* mr, char* buf,
                        const union ibv_gid* gid) {
  struct ibv_cq* cq = ibv_create_cq(ctx, 32, NULL, NULL, 0);
  struct ibv_srq_init_attr sa;
  memset(&sa, 0, sizeof sa);
  sa.attr.max_wr = 8;
  sa.attr.max_sge = 1;
  struct ibv_srq* srq = ibv_create_srq(pd, &sa);
  struct ibv_qp* c = cq ? make_qp(pd, cq) : NULL;
  struct ibv_qp* d = cq ? make_qp(pd, cq) : NULL;
  struct ibv_qp* e = cq && srq ? make_qp_srq(pd, cq, srq) : NULL;
  struct ibv_qp* f = cq ? make_qp(pd, cq) : NULL;
  int up = c && d && e && f && connect_qp(c, d->qp_num, gid) == 0 &&
           connect_qp_to(d, c->qp_num, gid, 1) == 0 && connect_qp(e, f->qp_num, gid) == 0 &&
           connect_qp(f, e->qp_num, gid) == 0;
  CHECK(up, "QPs for the async events (one left in RTR, one on an SRQ)");
  if (!up) return;
  struct ibv_async_event ev;
  CHECK(!readable(ctx->async_fd, 0), "no async event yet");

  CHECK(send_once(c, d, mr, buf) == 0, "a SEND to the QP in RTR");
  int type = next_async(ctx, &ev);
  CHECK(type == IBV_EVENT_COMM_EST && ev.element.qp == d, "IBV_EVENT_COMM_EST for that QP (%d)",
        type);
  if (type >= 0) ibv_ack_async_event(&ev);
  CHECK(d->events_completed == 1, "ibv_ack_async_event counted on the QP");
  CHECK(reap(cq, 2) == 2, "its completions polled");

  int posted = 0;
  for (int i = 0; i < 4; ++i) {
    struct ibv_sge rs = {.addr = (uintptr_t)(buf + kBytes), .length = kBytes, .lkey = mr->lkey};
    struct ibv_recv_wr rwr = {.wr_id = 10 + i, .sg_list = &rs, .num_sge = 1};
    struct ibv_recv_wr* bad;
    posted += ibv_post_srq_recv(srq, &rwr, &bad) == 0;
  }
  struct ibv_srq_attr limit = {.srq_limit = 3};
  CHECK(posted == 4 && ibv_modify_srq(srq, &limit, IBV_SRQ_LIMIT) == 0,
        "4 SRQ receives posted, limit armed at 3");
  CHECK(post_send_only(f, mr, buf) == 0 && reap(cq, 2) == 2, "one SEND consumed (3 left)");
  CHECK(!readable(ctx->async_fd, 100), "not below the limit: no event");
  CHECK(post_send_only(f, mr, buf) == 0 && reap(cq, 2) == 2, "another SEND consumed (2 left)");
  type = next_async(ctx, &ev);
  CHECK(type == IBV_EVENT_SRQ_LIMIT_REACHED && ev.element.srq == srq,
        "IBV_EVENT_SRQ_LIMIT_REACHED for the SRQ (%d)", type);
  if (type >= 0) ibv_ack_async_event(&ev);
  CHECK(post_send_only(f, mr, buf) == 0 && reap(cq, 2) == 2 && !readable(ctx->async_fd, 100),
        "the limit fires once until armed again");

  CHECK(ibv_destroy_qp(c) == 0 && ibv_destroy_qp(d) == 0 && ibv_destroy_qp(e) == 0 &&
            ibv_destroy_qp(f) == 0 && ibv_destroy_srq(srq) == 0 && ibv_destroy_cq(cq) == 0,
        "async-event objects destroyed");
}

/* Waits for the next async event and checks it is `want` on `element`; acks it. */
// An extended CQ on a channel holds one reference to it, as a basic CQ does: libibverbs takes it
// when ibv_create_cq_ex returns, and ibv_destroy_cq drops it, so the channel can go afterwards.
static void check_extended_cq(struct ibv_context* ctx, struct ibv_pd* pd, struct ibv_mr* mr,
                              char* buf, const union ibv_gid* gid) {
  struct ibv_comp_channel* ch = ibv_create_comp_channel(ctx);
  CHECK(ch != NULL, "a channel for an extended CQ (errno %d)", ch ? 0 : errno);
  if (ch == NULL) return;
  int marker = 0;
  struct ibv_cq_init_attr_ex attr = {
      .cqe = 16, .cq_context = &marker, .channel = ch, .comp_vector = 0,
      .wc_flags = IBV_WC_STANDARD_FLAGS};
  struct ibv_cq_ex* cq_ex = ibv_create_cq_ex(ctx, &attr);
  CHECK(cq_ex != NULL, "ibv_create_cq_ex on the channel (errno %d)", cq_ex ? 0 : errno);
  if (cq_ex == NULL) {
    ibv_destroy_comp_channel(ch);
    return;
  }
  struct ibv_cq* cq = ibv_cq_ex_to_cq(cq_ex);
  CHECK(cq->channel == ch && cq->cq_context == &marker && ch->refcnt == 1,
        "the extended CQ holds the channel once (refcnt %d)", ch->refcnt);
  CHECK(ibv_destroy_comp_channel(ch) == EBUSY, "ibv_destroy_comp_channel while it uses it: EBUSY");
  struct ibv_qp* a = make_qp(pd, cq);
  struct ibv_qp* b = make_qp(pd, cq);
  int up = a && b && connect_qp(a, b->qp_num, gid) == 0 && connect_qp(b, a->qp_num, gid) == 0;
  CHECK(up, "two RC QPs on the extended CQ");
  if (up) {
    CHECK(ibv_req_notify_cq(cq, 0) == 0 && send_once(a, b, mr, buf) == 0 && readable(ch->fd, 5000),
          "a completion on the extended CQ raised an event");
    struct ibv_cq* ev_cq = NULL;
    void* ev_ctx = NULL;
    CHECK(ibv_get_cq_event(ch, &ev_cq, &ev_ctx) == 0 && ev_cq == cq && ev_ctx == &marker,
          "ibv_get_cq_event names the extended CQ and its cq_context");
    ibv_ack_cq_events(cq, 1);
    CHECK(reap(cq, 2) == 2, "its completions polled");
  }
  if (a) ibv_destroy_qp(a);
  if (b) ibv_destroy_qp(b);
  CHECK(ibv_destroy_cq(cq) == 0 && ch->refcnt == 0, "extended CQ destroyed: refcnt %d", ch->refcnt);
  CHECK(ibv_destroy_comp_channel(ch) == 0, "ibv_destroy_comp_channel after the extended CQ");
}

static void expect_async(struct ibv_context* ctx, enum ibv_event_type want, const void* element,
                         const char* what) {
  struct ibv_async_event ev;
  const int type = next_async(ctx, &ev);
  const void* got = NULL;
  if (type == IBV_EVENT_CQ_ERR)
    got = ev.element.cq;
  else if (type >= 0)
    got = ev.element.qp;
  CHECK(type == (int)want && got == element, "%s: event %d (%d) on the right object (%s)", what,
        type, (int)want, got == element ? "yes" : "no");
  if (type >= 0) ibv_ack_async_event(&ev);
}

/* One signaled work request from qp, waited for; returns its completion status or -1. */
static int post_and_wait(struct ibv_qp* qp, struct ibv_cq* cq, struct ibv_send_wr* wr) {
  struct ibv_send_wr* bad;
  if (ibv_post_send(qp, wr, &bad)) return -1;
  for (int spins = 0; spins < 5000000; ++spins) {
    struct ibv_wc wc;
    const int got = ibv_poll_cq(cq, 1, &wc);
    if (got < 0) return -1;
    if (got == 1 && wc.qp_num == qp->qp_num) return wc.status;
  }
  return -1;
}

/* The affiliated errors the IBTA names, through ibv_get_async_event: a QP on an SRQ that enters
 * the error state says its last WQE was reached; a responder refusing an RDMA WRITE for its rkey
 * says QP_ACCESS_ERR; one whose receive names a bad lkey cannot go on (QP_FATAL); a CQ overrun
 * says CQ_ERR. (SQ_DRAINED needs RTS to SQD, which mlx5 has no command for.) */
static void check_error_events(struct ibv_context* ctx, struct ibv_pd* pd, struct ibv_mr* mr,
                               char* buf, const union ibv_gid* gid) {
  struct ibv_cq* cq = ibv_create_cq(ctx, 32, NULL, NULL, 0);
  struct ibv_cq* tiny = ibv_create_cq(ctx, 1, NULL, NULL, 0);
  struct ibv_srq_init_attr sa = {.attr = {.max_wr = 4, .max_sge = 1}};
  struct ibv_srq* srq = ibv_create_srq(pd, &sa);
  struct ibv_qp* on_srq = cq && srq ? make_qp_srq(pd, cq, srq) : NULL;
  struct ibv_qp* req = cq ? make_qp(pd, cq) : NULL;
  struct ibv_qp* resp = cq ? make_qp(pd, cq) : NULL;
  struct ibv_qp* flood = tiny ? make_qp(pd, tiny) : NULL;
  struct ibv_qp* sink = cq ? make_qp(pd, cq) : NULL;
  int up = on_srq && req && resp && flood && sink &&
           connect_qp(on_srq, req->qp_num, gid) == 0 && connect_qp(req, resp->qp_num, gid) == 0 &&
           connect_qp(resp, req->qp_num, gid) == 0 && connect_qp(flood, sink->qp_num, gid) == 0 &&
           connect_qp(sink, flood->qp_num, gid) == 0;
  CHECK(up, "QPs and CQs for the error events");
  if (!up) return;
  CHECK(!readable(ctx->async_fd, 0), "no async event yet");

  struct ibv_qp_attr err = {.qp_state = IBV_QPS_ERR};
  CHECK(ibv_modify_qp(on_srq, &err, IBV_QP_STATE) == 0, "a QP on an SRQ moved to ERR");
  expect_async(ctx, IBV_EVENT_QP_LAST_WQE_REACHED, on_srq, "IBV_EVENT_QP_LAST_WQE_REACHED");

  struct ibv_sge sge = {.addr = (uintptr_t)buf, .length = kBytes, .lkey = mr->lkey};
  struct ibv_send_wr wr = {.wr_id = 1, .sg_list = &sge, .num_sge = 1,
                           .opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_SIGNALED};
  wr.wr.rdma.remote_addr = (uintptr_t)buf;
  wr.wr.rdma.rkey = mr->rkey ^ 0x5a5a00;
  const int status = post_and_wait(req, cq, &wr);
  CHECK(status == IBV_WC_REM_ACCESS_ERR, "an RDMA WRITE with a bad rkey: status %d "
        "(REM_ACCESS_ERR)", status);
  expect_async(ctx, IBV_EVENT_QP_ACCESS_ERR, resp, "the responder's IBV_EVENT_QP_ACCESS_ERR");

  /* Both back to RESET and connected again, then a receive that names a bad lkey. */
  struct ibv_qp_attr reset = {.qp_state = IBV_QPS_RESET};
  CHECK(ibv_modify_qp(req, &reset, IBV_QP_STATE) == 0 && ibv_modify_qp(resp, &reset, IBV_QP_STATE) == 0 &&
            connect_qp(req, resp->qp_num, gid) == 0 && connect_qp(resp, req->qp_num, gid) == 0,
        "the pair reconnected");
  struct ibv_sge bad_sge = {.addr = (uintptr_t)(buf + kBytes), .length = kBytes,
                            .lkey = mr->lkey ^ 0x5a5a00};
  struct ibv_recv_wr rwr = {.wr_id = 2, .sg_list = &bad_sge, .num_sge = 1};
  struct ibv_recv_wr* rbad;
  CHECK(ibv_post_recv(resp, &rwr, &rbad) == 0, "a receive with a bad lkey posted");
  wr.opcode = IBV_WR_SEND;
  const int sent = post_and_wait(req, cq, &wr);
  CHECK(sent == IBV_WC_REM_OP_ERR, "a SEND into it: status %d (REM_OP_ERR)", sent);
  expect_async(ctx, IBV_EVENT_QP_FATAL, resp, "the responder's IBV_EVENT_QP_FATAL");

  /* More completions than the CQ holds, none polled. */
  const int room = tiny->cqe + 1;
  wr.opcode = IBV_WR_RDMA_WRITE;
  wr.wr.rdma.rkey = mr->rkey;
  int posted = 0;
  for (int i = 0; i <= room; ++i) {
    struct ibv_send_wr* bad;
    posted += ibv_post_send(flood, &wr, &bad) == 0;
  }
  CHECK(posted == room + 1, "%d signaled writes on a CQ of %d entries", posted, room);
  expect_async(ctx, IBV_EVENT_CQ_ERR, tiny, "IBV_EVENT_CQ_ERR for the overrun CQ");

  reap(cq, 8);  /* whatever the error paths flushed */
  CHECK(ibv_destroy_qp(on_srq) == 0 && ibv_destroy_qp(req) == 0 && ibv_destroy_qp(resp) == 0 &&
            ibv_destroy_qp(flood) == 0 && ibv_destroy_qp(sink) == 0 && ibv_destroy_srq(srq) == 0 &&
            ibv_destroy_cq(tiny) == 0 && ibv_destroy_cq(cq) == 0,
        "error-event objects destroyed");
}

/* One SEND from a to b: b's receive and a's send complete on `cq`. */
static int send_once(struct ibv_qp* a, struct ibv_qp* b, struct ibv_mr* mr, char* buf) {
  struct ibv_sge rs = {.addr = (uintptr_t)(buf + kBytes), .length = kBytes, .lkey = mr->lkey};
  struct ibv_recv_wr rwr = {.wr_id = 2, .sg_list = &rs, .num_sge = 1};
  struct ibv_recv_wr* bad_r;
  if (ibv_post_recv(b, &rwr, &bad_r)) return -1;
  struct ibv_sge ss = {.addr = (uintptr_t)buf, .length = kBytes, .lkey = mr->lkey};
  struct ibv_send_wr swr;
  memset(&swr, 0, sizeof swr);
  swr.wr_id = 1;
  swr.sg_list = &ss;
  swr.num_sge = 1;
  swr.opcode = IBV_WR_SEND;
  swr.send_flags = IBV_SEND_SIGNALED;
  struct ibv_send_wr* bad_s;
  return ibv_post_send(a, &swr, &bad_s);
}

/* Polls until `n` completions arrived (or 5 s passed); returns how many were successes. */
static int reap(struct ibv_cq* cq, int n) {
  int good = 0;
  for (int spins = 0; n > 0 && spins < 5000000; ++spins) {
    struct ibv_wc wc;
    int got = ibv_poll_cq(cq, 1, &wc);
    if (got < 0) return -1;
    if (got == 1) {
      --n;
      good += wc.status == IBV_WC_SUCCESS;
    }
  }
  return good;
}

int main(void) {
  open_device_once();
  const int fds_before = count_entries("/proc/self/fd");
  const int threads_before = count_entries("/proc/self/task");

  struct ibv_device** list = ibv_get_device_list(NULL);
  CHECK(list && list[0], "a device is listed");
  if (!list || !list[0]) return check_summary();
  struct ibv_context* ctx = ibv_open_device(list[0]);
  struct ibv_context* other = ibv_open_device(list[0]);
  CHECK(ctx && other, "two contexts open");
  if (!ctx || !other) return check_summary();

  struct ibv_comp_channel* ch = ibv_create_comp_channel(ctx);
  CHECK(ch != NULL, "ibv_create_comp_channel (errno %d)", ch ? 0 : errno);
  if (!ch) return check_summary();
  CHECK(ch->context == ctx && ch->fd >= 0 && ch->refcnt == 0, "channel {context, fd %d, refcnt %d}",
        ch->fd, ch->refcnt);

  errno = 0;
  struct ibv_cq* foreign = ibv_create_cq(other, 4, NULL, ch, 0);
  CHECK(foreign == NULL && errno == EBADF, "a CQ of another context on the channel: errno %d (EBADF)",
        errno);

  int marker = 0;
  struct ibv_cq* cq = ibv_create_cq(ctx, 16, &marker, ch, 0);
  CHECK(cq != NULL && cq->channel == ch && ch->refcnt == 1, "CQ on the channel (refcnt %d)",
        ch->refcnt);
  CHECK(ibv_destroy_comp_channel(ch) == EBUSY, "ibv_destroy_comp_channel while a CQ uses it: EBUSY");

  struct ibv_pd* pd = ibv_alloc_pd(ctx);
  char* buf = calloc(2, kBytes);
  struct ibv_mr* mr = pd ? ibv_reg_mr(pd, buf, 2 * kBytes, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE) : NULL;
  struct ibv_qp* a = pd && cq ? make_qp(pd, cq) : NULL;
  struct ibv_qp* b = pd && cq ? make_qp(pd, cq) : NULL;
  union ibv_gid gid;
  int up = mr && a && b && ibv_query_gid(ctx, 1, 0, &gid) == 0 &&
           connect_qp(a, b->qp_num, &gid) == 0 && connect_qp(b, a->qp_num, &gid) == 0;
  CHECK(up, "two RC QPs connected on the CQ");
  if (!up) return check_summary();

  CHECK(!readable(ch->fd, 0), "no event before arming");
  CHECK(ibv_req_notify_cq(cq, 0) == 0, "ibv_req_notify_cq");
  CHECK(send_once(a, b, mr, buf) == 0, "a SEND posted");
  CHECK(readable(ch->fd, 5000), "the completion raised an event on the channel fd");
  struct ibv_cq* ev_cq = NULL;
  void* ev_ctx = NULL;
  CHECK(ibv_get_cq_event(ch, &ev_cq, &ev_ctx) == 0 && ev_cq == cq && ev_ctx == &marker,
        "ibv_get_cq_event names the CQ and its cq_context");
  CHECK(reap(cq, 2) == 2, "both completions polled");
  ibv_ack_cq_events(cq, 1);
  CHECK(cq->comp_events_completed == 1, "ibv_ack_cq_events counted (%u)", cq->comp_events_completed);
  CHECK(!readable(ch->fd, 100), "one event per arm: nothing more without re-arming");

  /* Twice more through the blocking read, re-arming each time as applications do. */
  int rounds = 0;
  for (int i = 0; i < 2; ++i) {
    if (ibv_req_notify_cq(cq, 0) || send_once(a, b, mr, buf)) break;
    if (ibv_get_cq_event(ch, &ev_cq, &ev_ctx) || ev_cq != cq) break;
    ibv_ack_cq_events(cq, 1);
    if (reap(cq, 2) != 2) break;
    ++rounds;
  }
  CHECK(rounds == 2, "arm, send, blocking ibv_get_cq_event, ack: %d of 2 rounds", rounds);

  /* An event left unread when its CQ goes away is taken out of the channel. */
  CHECK(ibv_req_notify_cq(cq, 0) == 0 && send_once(a, b, mr, buf) == 0 && readable(ch->fd, 5000),
        "an event pending, unread");
  CHECK(reap(cq, 2) == 2, "its completions polled");
  CHECK(ibv_destroy_qp(a) == 0 && ibv_destroy_qp(b) == 0, "QPs destroyed");
  CHECK(ibv_destroy_cq(cq) == 0, "ibv_destroy_cq with an unread event returns");
  CHECK(!readable(ch->fd, 0), "the destroyed CQ's event is gone from the channel");
  CHECK(ch->refcnt == 0, "the channel's reference dropped");
  CHECK(ibv_destroy_comp_channel(ch) == 0, "ibv_destroy_comp_channel");

  check_extended_cq(ctx, pd, mr, buf, &gid);
  check_async(ctx, pd, mr, buf, &gid);
  check_error_events(ctx, pd, mr, buf, &gid);

  ibv_dereg_mr(mr);
  ibv_dealloc_pd(pd);
  free(buf);
  CHECK(ibv_close_device(other) == 0 && ibv_close_device(ctx) == 0, "contexts closed");
  ibv_free_device_list(list);
  CHECK(count_entries("/proc/self/fd") == fds_before, "no fd leaked (%d, before %d)",
        count_entries("/proc/self/fd"), fds_before);
  CHECK(count_entries("/proc/self/task") == threads_before, "no thread left (%d, before %d)",
        count_entries("/proc/self/task"), threads_before);
  return check_summary();
}
