/* Bad input at the verbs boundary, through libibverbs 44 as an unmodified program makes it: objects
 * of another context, attributes past what ibv_query_device reports, QP transitions the state
 * machine forbids and work requests the queue cannot take. Each check names the errno rdma-core's
 * mlx5 provider and the kernel give for the same call; driver/verbs/README.md has the table.
 *
 * Two contexts on one device share the device, as two uverbs files of one process share a PCI
 * function, but not their objects: the kernel looks a handle up in the caller's file only, so an
 * object of the other context is not found there. A write command (create_qp, create_srq) reads
 * that as EINVAL; an ioctl method (reg_dm_mr) as ENOENT. */
#include <infiniband/verbs.h>

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "tests/device/verbs/checks.h"

struct side {
  struct ibv_context* ctx;
  struct ibv_pd* pd;
  struct ibv_cq* cq;
  struct ibv_srq* srq;
};

static int open_side(struct ibv_device* dev, struct side* s) {
  memset(s, 0, sizeof(*s));
  s->ctx = ibv_open_device(dev);
  if (!s->ctx) return -1;
  s->pd = ibv_alloc_pd(s->ctx);
  s->cq = ibv_create_cq(s->ctx, 16, NULL, NULL, 0);
  struct ibv_srq_init_attr sa = {.attr = {.max_wr = 8, .max_sge = 1}};
  s->srq = s->pd ? ibv_create_srq(s->pd, &sa) : NULL;
  return s->pd && s->cq && s->srq ? 0 : -1;
}

static void close_side(struct side* s) {
  if (s->srq) ibv_destroy_srq(s->srq);
  if (s->cq) ibv_destroy_cq(s->cq);
  if (s->pd) ibv_dealloc_pd(s->pd);
  if (s->ctx) ibv_close_device(s->ctx);
}

static struct ibv_qp_init_attr rc_attr(struct ibv_cq* send_cq, struct ibv_cq* recv_cq,
                                       struct ibv_srq* srq) {
  struct ibv_qp_init_attr a = {.send_cq = send_cq, .recv_cq = recv_cq, .srq = srq,
                               .cap = {.max_send_wr = 4, .max_recv_wr = srq ? 0 : 4,
                                       .max_send_sge = 1, .max_recv_sge = srq ? 0 : 1},
                               .qp_type = IBV_QPT_RC};
  return a;
}

/* Expects ibv_create_qp to fail with `want`, and destroys a QP that was wrongly created. */
static void expect_no_qp(struct ibv_pd* pd, struct ibv_qp_init_attr a, int want, const char* what) {
  errno = 0;
  struct ibv_qp* qp = ibv_create_qp(pd, &a);
  const int got = qp ? 0 : errno;
  if (qp) ibv_destroy_qp(qp);
  CHECK(qp == NULL && got == want, "ibv_create_qp %s: errno %d (%d)", what, got, want);
}

static void check_other_context(struct side* a, struct side* b) {
  expect_no_qp(a->pd, rc_attr(b->cq, a->cq, NULL), EINVAL, "with the other context's send CQ");
  expect_no_qp(a->pd, rc_attr(a->cq, b->cq, NULL), EINVAL, "with the other context's receive CQ");
  expect_no_qp(a->pd, rc_attr(a->cq, a->cq, b->srq), EINVAL, "with the other context's SRQ");
  expect_no_qp(a->pd, rc_attr(NULL, a->cq, NULL), EINVAL, "without a send CQ");

  struct ibv_qp_init_attr_ex ex = {.send_cq = a->cq, .recv_cq = a->cq,
                                   .cap = {.max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1,
                                           .max_recv_sge = 1},
                                   .qp_type = IBV_QPT_RC, .comp_mask = IBV_QP_INIT_ATTR_PD,
                                   .pd = b->pd};
  errno = 0;
  struct ibv_qp* qp = ibv_create_qp_ex(a->ctx, &ex);
  int got = qp ? 0 : errno;
  if (qp) ibv_destroy_qp(qp);
  CHECK(qp == NULL && got == EINVAL, "ibv_create_qp_ex with the other context's PD: errno %d "
        "(EINVAL)", got);

  /* libibverbs itself sends a basic SRQ asked for by PD alone to ibv_create_srq on that PD, so it
   * is made on the PD's context whatever context the call named; the provider sees the call only
   * with another mask bit, and then refuses the foreign PD. */
  struct ibv_srq_init_attr_ex sx = {.attr = {.max_wr = 4, .max_sge = 1},
                                    .comp_mask = IBV_SRQ_INIT_ATTR_PD, .pd = b->pd};
  errno = 0;
  struct ibv_srq* srq = ibv_create_srq_ex(a->ctx, &sx);
  CHECK(srq != NULL && srq->context == b->ctx, "ibv_create_srq_ex with only the other context's PD "
        "is made on that context by libibverbs (errno %d)", srq ? 0 : errno);
  if (srq) ibv_destroy_srq(srq);
  sx.comp_mask = IBV_SRQ_INIT_ATTR_PD | IBV_SRQ_INIT_ATTR_CQ;
  sx.cq = a->cq;
  sx.srq_type = IBV_SRQT_BASIC;
  errno = 0;
  srq = ibv_create_srq_ex(a->ctx, &sx);
  got = srq ? 0 : errno;
  if (srq) ibv_destroy_srq(srq);
  CHECK(srq == NULL && (got == EINVAL || got == EOPNOTSUPP), "ibv_create_srq_ex with the other "
        "context's PD and a CQ: errno %d (EINVAL, or EOPNOTSUPP without XRC)", got);

  struct ibv_alloc_dm_attr dma = {.length = 64};
  struct ibv_dm* dm = ibv_alloc_dm(b->ctx, &dma);
  CHECK(dm != NULL, "ibv_alloc_dm on the second context (errno %d)", dm ? 0 : errno);
  if (dm) {
    errno = 0;
    struct ibv_mr* mr = ibv_reg_dm_mr(a->pd, dm, 0, 64,
                                      IBV_ACCESS_ZERO_BASED | IBV_ACCESS_LOCAL_WRITE);
    got = mr ? 0 : errno;
    if (mr) ibv_dereg_mr(mr);
    CHECK(mr == NULL && got == ENOENT, "ibv_reg_dm_mr of the other context's DM: errno %d "
          "(ENOENT)", got);
    CHECK(ibv_free_dm(dm) == 0, "the DM is freed: nothing pinned it");
  }

  /* The refusals left both contexts' objects as they were: a QP on a's own objects works. */
  struct ibv_qp_init_attr good = rc_attr(a->cq, a->cq, a->srq);
  qp = ibv_create_qp(a->pd, &good);
  CHECK(qp != NULL, "a QP on the context's own PD, CQ and SRQ (errno %d)", qp ? 0 : errno);
  if (qp) CHECK(ibv_destroy_qp(qp) == 0, "and it is destroyed");
}

static void check_limits(struct side* a, const struct ibv_device_attr* dev) {
  errno = 0;
  struct ibv_cq* cq = ibv_create_cq(a->ctx, dev->max_cqe + 1, NULL, NULL, 0);
  int got = cq ? 0 : errno;
  if (cq) ibv_destroy_cq(cq);
  CHECK(cq == NULL && got == EINVAL, "ibv_create_cq(max_cqe + 1): errno %d (EINVAL)", got);
  errno = 0;
  cq = ibv_create_cq(a->ctx, 4, NULL, NULL, a->ctx->num_comp_vectors);
  got = cq ? 0 : errno;
  if (cq) ibv_destroy_cq(cq);
  CHECK(cq == NULL && got == EINVAL, "ibv_create_cq on vector %d of %d: errno %d (EINVAL)",
        a->ctx->num_comp_vectors, a->ctx->num_comp_vectors, got);

  struct ibv_qp_init_attr q = rc_attr(a->cq, a->cq, NULL);
  q.cap.max_send_wr = (uint32_t)dev->max_qp_wr + 1;
  expect_no_qp(a->pd, q, EINVAL, "max_send_wr = max_qp_wr + 1");
  q = rc_attr(a->cq, a->cq, NULL);
  q.cap.max_recv_wr = (uint32_t)dev->max_qp_wr + 1;
  expect_no_qp(a->pd, q, EINVAL, "max_recv_wr = max_qp_wr + 1");
  /* max_sge is the smaller of the send and receive limits, so one more may still fit one side;
   * more than any WQE descriptor holds fits neither. */
  q = rc_attr(a->cq, a->cq, NULL);
  q.cap.max_send_sge = q.cap.max_recv_sge = (uint32_t)dev->max_sge;
  struct ibv_qp* qp = ibv_create_qp(a->pd, &q);
  CHECK(qp != NULL, "an RC QP with max_sge (%d) on both queues (errno %d)", dev->max_sge,
        qp ? 0 : errno);
  if (qp) ibv_destroy_qp(qp);
  q = rc_attr(a->cq, a->cq, NULL);
  q.cap.max_send_sge = 4096;
  expect_no_qp(a->pd, q, EINVAL, "max_send_sge 4096");
  q = rc_attr(a->cq, a->cq, NULL);
  q.cap.max_recv_sge = 4096;
  expect_no_qp(a->pd, q, EINVAL, "max_recv_sge 4096");
  q = rc_attr(a->cq, a->cq, NULL);
  q.cap.max_inline_data = 1u << 20;
  expect_no_qp(a->pd, q, EINVAL, "max_inline_data 1 MiB");

  struct ibv_srq_init_attr sa = {.attr = {.max_wr = (uint32_t)dev->max_srq_wr + 1, .max_sge = 1}};
  errno = 0;
  struct ibv_srq* srq = ibv_create_srq(a->pd, &sa);
  got = srq ? 0 : errno;
  if (srq) ibv_destroy_srq(srq);
  CHECK(srq == NULL && got == EINVAL, "ibv_create_srq(max_srq_wr + 1): errno %d (EINVAL)", got);
  struct ibv_srq_attr limit = {.srq_limit = 9};  /* a->srq holds 8 or a few more */
  struct ibv_srq_attr now;
  if (ibv_query_srq(a->srq, &now) == 0) limit.srq_limit = now.max_wr + 1;
  int rc = ibv_modify_srq(a->srq, &limit, IBV_SRQ_LIMIT);
  CHECK(rc == EINVAL, "ibv_modify_srq limit above max_wr: rc %d (EINVAL)", rc);
}

static int to_state(struct ibv_qp* qp, enum ibv_qp_state state, int mask_extra,
                    struct ibv_qp_attr* attr) {
  attr->qp_state = state;
  return ibv_modify_qp(qp, attr, IBV_QP_STATE | mask_extra);
}

static void check_transitions(struct side* a, const struct ibv_device_attr* dev) {
  struct ibv_qp_init_attr q = rc_attr(a->cq, a->cq, NULL);
  struct ibv_qp* qp = ibv_create_qp(a->pd, &q);
  CHECK(qp != NULL, "an RC QP for the transition checks (errno %d)", qp ? 0 : errno);
  if (!qp) return;
  const int init_mask = IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
  struct ibv_qp_attr attr = {.port_num = 1};
  int rc = to_state(qp, IBV_QPS_RTR, 0, &attr);
  CHECK(rc == EINVAL, "RESET -> RTR: rc %d (EINVAL)", rc);
  rc = to_state(qp, IBV_QPS_RTS, 0, &attr);
  CHECK(rc == EINVAL, "RESET -> RTS: rc %d (EINVAL)", rc);
  rc = to_state(qp, IBV_QPS_INIT, IBV_QP_PKEY_INDEX | IBV_QP_PORT, &attr);
  CHECK(rc == EINVAL, "RESET -> INIT without its required access flags: rc %d (EINVAL)", rc);
  memset(&attr, 0, sizeof(attr));
  attr.port_num = 0;
  rc = to_state(qp, IBV_QPS_INIT, init_mask, &attr);
  CHECK(rc == EINVAL, "RESET -> INIT on port 0: rc %d (EINVAL)", rc);
  attr.port_num = dev->phys_port_cnt + 1;
  rc = to_state(qp, IBV_QPS_INIT, init_mask, &attr);
  CHECK(rc == EINVAL, "RESET -> INIT on port %d of %d: rc %d (EINVAL)", attr.port_num,
        dev->phys_port_cnt, rc);
  attr.port_num = 1;
  attr.pkey_index = (uint16_t)dev->max_pkeys;
  rc = to_state(qp, IBV_QPS_INIT, init_mask, &attr);
  CHECK(rc == EINVAL, "RESET -> INIT with pkey_index %d of %d: rc %d (EINVAL)", attr.pkey_index,
        dev->max_pkeys, rc);
  struct ibv_qp_attr got_attr;
  struct ibv_qp_init_attr got_init;
  rc = ibv_query_qp(qp, &got_attr, IBV_QP_STATE, &got_init);
  CHECK(rc == 0 && got_attr.qp_state == IBV_QPS_RESET, "each refusal left the QP in RESET "
        "(rc %d, state %d)", rc, got_attr.qp_state);

  attr.pkey_index = 0;
  attr.qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
  rc = to_state(qp, IBV_QPS_INIT, init_mask, &attr);
  CHECK(rc == 0, "RESET -> INIT: rc %d", rc);
  rc = to_state(qp, IBV_QPS_RTS, 0, &attr);
  CHECK(rc == EINVAL, "INIT -> RTS: rc %d (EINVAL)", rc);

  union ibv_gid gid;
  const int have_gid = ibv_query_gid(a->ctx, 1, 1, &gid) == 0;
  struct ibv_port_attr port;
  const int have_port = ibv_query_port(a->ctx, 1, &port) == 0;
  CHECK(have_gid && have_port, "port 1 and its GID 1 are readable");
  if (have_gid && have_port) {
    const int rtr_mask = IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                         IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
    memset(&attr, 0, sizeof(attr));
    attr.path_mtu = IBV_MTU_1024;
    attr.dest_qp_num = qp->qp_num;
    attr.max_dest_rd_atomic = (uint8_t)(dev->max_qp_rd_atom + 1);
    attr.min_rnr_timer = 12;
    attr.ah_attr.is_global = 1;
    attr.ah_attr.grh.dgid = gid;
    attr.ah_attr.grh.sgid_index = 1;
    attr.ah_attr.grh.hop_limit = 1;
    attr.ah_attr.port_num = 1;
    rc = to_state(qp, IBV_QPS_RTR, rtr_mask, &attr);
    CHECK(rc == EINVAL, "INIT -> RTR with max_dest_rd_atomic %d above %d: rc %d (EINVAL)",
          attr.max_dest_rd_atomic, dev->max_qp_rd_atom, rc);
    attr.max_dest_rd_atomic = 1;
    attr.ah_attr.grh.sgid_index = (uint8_t)port.gid_tbl_len;
    rc = to_state(qp, IBV_QPS_RTR, rtr_mask, &attr);
    CHECK(rc == EINVAL, "INIT -> RTR with sgid_index %d of %d: rc %d (EINVAL)",
          attr.ah_attr.grh.sgid_index, port.gid_tbl_len, rc);
    /* An entry of the table that holds no GID: the kernel's rdma_get_gid_attr says ENODATA. */
    attr.ah_attr.grh.sgid_index = (uint8_t)(port.gid_tbl_len - 1);
    rc = to_state(qp, IBV_QPS_RTR, rtr_mask, &attr);
    CHECK(rc == ENODATA, "INIT -> RTR with the empty GID entry %d: rc %d (ENODATA)",
          attr.ah_attr.grh.sgid_index, rc);
    struct ibv_ah* ah = ibv_create_ah(a->pd, &attr.ah_attr);
    CHECK(ah == NULL && errno == ENODATA, "create_ah with the empty GID entry %d: errno %d (ENODATA)",
          attr.ah_attr.grh.sgid_index, ah ? 0 : errno);
    if (ah) ibv_destroy_ah(ah);
    attr.ah_attr.grh.sgid_index = 1;
    rc = to_state(qp, IBV_QPS_RTR, rtr_mask & ~IBV_QP_DEST_QPN, &attr);
    CHECK(rc == EINVAL, "INIT -> RTR without its required dest_qp_num: rc %d (EINVAL)", rc);
    rc = ibv_query_qp(qp, &got_attr, IBV_QP_STATE, &got_init);
    CHECK(rc == 0 && got_attr.qp_state == IBV_QPS_INIT, "each refusal left the QP in INIT "
          "(state %d)", got_attr.qp_state);
  }

  /* Work requests the queue cannot take: EINVAL with bad_wr at the first one refused. */
  static char buf[64];
  struct ibv_mr* mr = ibv_reg_mr(a->pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
  CHECK(mr != NULL, "an MR for the work requests (errno %d)", mr ? 0 : errno);
  if (mr) {
    struct ibv_sge sge[2] = {{(uintptr_t)buf, 8, mr->lkey}, {(uintptr_t)buf + 8, 8, mr->lkey}};
    struct ibv_recv_wr rwr[2] = {{.wr_id = 1, .sg_list = sge, .num_sge = 1},
                                 {.wr_id = 2, .sg_list = sge, .num_sge = 2}};
    rwr[0].next = &rwr[1];
    struct ibv_recv_wr* rbad = NULL;
    rc = ibv_post_recv(qp, rwr, &rbad);
    CHECK(rc == EINVAL && rbad == &rwr[1], "ibv_post_recv with 2 SGEs on a 1-SGE queue: rc %d "
          "(EINVAL), bad_wr is the second (%s)", rc, rbad == &rwr[1] ? "yes" : "no");
    struct ibv_send_wr swr = {.wr_id = 3, .sg_list = sge, .num_sge = 2,
                              .opcode = IBV_WR_SEND};
    struct ibv_send_wr* sbad = NULL;
    rc = ibv_post_send(qp, &swr, &sbad);
    /* libmlx5 answers too many gather entries on the send queue with ENOMEM (its max_gs check). */
    CHECK(rc == ENOMEM && sbad == &swr, "ibv_post_send with 2 SGEs on a 1-SGE queue: rc %d "
          "(ENOMEM)", rc);
    swr.num_sge = 1;
    swr.opcode = (enum ibv_wr_opcode)0x7f;
    sbad = NULL;
    rc = ibv_post_send(qp, &swr, &sbad);
    CHECK(rc == EINVAL && sbad == &swr, "ibv_post_send with opcode 0x7f: rc %d (EINVAL)", rc);
    ibv_dereg_mr(mr);
  }
  CHECK(ibv_destroy_qp(qp) == 0, "the QP is destroyed");
}

int main(void) {
  open_device_once();
  const int fds_before = count_entries("/proc/self/fd");
  struct ibv_device** list = ibv_get_device_list(NULL);
  CHECK(list != NULL && list[0] != NULL, "a device is listed");
  if (!list || !list[0]) return 1;
  struct side a, b;
  const int opened = open_side(list[0], &a) == 0 && open_side(list[0], &b) == 0;
  CHECK(opened, "two contexts on one device, each with a PD, a CQ and an SRQ (errno %d)", errno);
  struct ibv_device_attr dev;
  if (opened && ibv_query_device(a.ctx, &dev) == 0) {
    check_other_context(&a, &b);
    check_limits(&a, &dev);
    check_transitions(&a, &dev);
  }
  close_side(&b);
  close_side(&a);
  ibv_free_device_list(list);
  CHECK(count_entries("/proc/self/fd") == fds_before, "no file descriptor left open (%d -> %d)",
        fds_before, count_entries("/proc/self/fd"));
  return check_summary();
}
