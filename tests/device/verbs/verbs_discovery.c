/* The software ConnectX seen by an unmodified verbs program: written against
 * <infiniband/verbs.h> only, run through tools/verbs_env/launch.py (what `tools/onchip run`
 * does). Each check prints "ok" or "not ok" with what it saw; the exit status is the number of
 * failures (0 = all passed).
 *
 * Expected values are what the environment publishes (tools/verbs_env/sysfs_tree.py) and what a
 * ConnectX-6 Dx reports; device limits are read back, not guessed. */
#include <infiniband/verbs.h>

#include <dirent.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tests/device/verbs/checks.h"

static const uint8_t kLinkLocal[16] = {0xfe, 0x80, 0, 0, 0, 0, 0, 0,
                                       0x0e, 0x42, 0xa1, 0xff, 0xfe, 0x4f, 0x00, 0x01};
static const uint8_t kLoopbackV4[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 127, 0, 0, 1};
static const uint64_t kNodeGuid = 0x0c42a103004f0001ull;

static void check_device_queries(struct ibv_context* ctx) {
  struct {
    struct ibv_device_attr attr;
    unsigned char guard[64];
  } q;
  memset(&q, 0xab, sizeof(q));
  int rc = ibv_query_device(ctx, &q.attr);
  CHECK(rc == 0, "ibv_query_device rc=%d", rc);
  int guard_intact = 1;
  for (size_t i = 0; i < sizeof(q.guard); ++i) guard_intact &= q.guard[i] == 0xab;
  CHECK(guard_intact, "ibv_query_device writes nothing past struct ibv_device_attr");
  CHECK(q.attr.vendor_id == 0x02c9 && q.attr.vendor_part_id == 4125,
        "vendor 0x%x part %u (Mellanox, ConnectX-6 Dx)", q.attr.vendor_id, q.attr.vendor_part_id);
  CHECK(strcmp(q.attr.fw_ver, "22.39.1002") == 0, "fw_ver %s from the device's init segment",
        q.attr.fw_ver);
  CHECK(be64toh(q.attr.node_guid) == kNodeGuid, "node_guid %016llx as sysfs publishes",
        (unsigned long long)be64toh(q.attr.node_guid));
  CHECK(q.attr.phys_port_cnt == 1, "phys_port_cnt %u", q.attr.phys_port_cnt);
  CHECK(q.attr.max_pd > 0 && q.attr.max_mr > 0 && q.attr.max_mw > 0,
        "max_pd %d max_mr %d max_mw %d", q.attr.max_pd, q.attr.max_mr, q.attr.max_mw);
  /* Queue limits from the capabilities, and only what the driver does. */
  CHECK(q.attr.max_qp > 0 && q.attr.max_qp_wr > 0 && q.attr.max_cq > 0 && q.attr.max_cqe > 0 &&
            q.attr.max_srq > 0 && q.attr.max_srq_wr > 0 && q.attr.max_ah > 0 &&
            q.attr.max_sge > 0 && q.attr.max_qp_rd_atom > 0 && q.attr.max_mcast_grp == 0 &&
            q.attr.atomic_cap == IBV_ATOMIC_HCA,
        "queue limits from the capabilities (max_qp %d max_cq %d max_cqe %d max_srq %d "
        "max_ah %d max_sge %d atomic_cap %d)", q.attr.max_qp, q.attr.max_cq, q.attr.max_cqe,
        q.attr.max_srq, q.attr.max_ah, q.attr.max_sge, q.attr.atomic_cap);
  CHECK((q.attr.device_cap_flags & IBV_DEVICE_RC_RNR_NAK_GEN) &&
            (q.attr.device_cap_flags & IBV_DEVICE_XRC) &&
            !(q.attr.device_cap_flags & IBV_DEVICE_AUTO_PATH_MIG),
        "RNR NAKs, XRC, no path migration (device_cap_flags 0x%x)", q.attr.device_cap_flags);

  struct ibv_device_attr_ex ex;
  memset(&ex, 0, sizeof(ex));
  rc = ibv_query_device_ex(ctx, NULL, &ex);
  CHECK(rc == 0, "ibv_query_device_ex rc=%d", rc);
  CHECK(memcmp(&ex.orig_attr, &q.attr, sizeof(q.attr)) == 0,
        "query_device_ex's orig_attr equals query_device");
  CHECK(ex.max_dm_size >= 4096, "max_dm_size %llu", (unsigned long long)ex.max_dm_size);
  CHECK(ex.phys_port_cnt_ex == 1, "phys_port_cnt_ex %u", ex.phys_port_cnt_ex);
  /* Completion timestamps (ibv_rc_pingpong -t checks both). */
  CHECK(ex.hca_core_clock != 0 && ex.completion_timestamp_mask == 0x7fffffffffffffffull,
        "hca_core_clock %llu kHz, completion_timestamp_mask %#llx",
        (unsigned long long)ex.hca_core_clock, (unsigned long long)ex.completion_timestamp_mask);

  /* ibv_query_rt_values_ex: the device's free-running clock (the one completion timestamps
   * carry), advancing at its hca_core_clock rate. The software ConnectX refreshes the register
   * at least every few milliseconds when idle, so a reading may be that much behind. */
  struct ibv_values_ex v1 = {.comp_mask = IBV_VALUES_MASK_RAW_CLOCK};
  struct timespec w1, w2;
  clock_gettime(CLOCK_MONOTONIC, &w1);
  rc = ibv_query_rt_values_ex(ctx, &v1);
  CHECK(rc == 0 && v1.comp_mask == IBV_VALUES_MASK_RAW_CLOCK && v1.raw_clock.tv_sec == 0,
        "ibv_query_rt_values_ex(RAW_CLOCK): rc=%d comp_mask %#x", rc, v1.comp_mask);
  usleep(50000);
  struct ibv_values_ex v2 = {.comp_mask = IBV_VALUES_MASK_RAW_CLOCK};
  rc = ibv_query_rt_values_ex(ctx, &v2);
  clock_gettime(CLOCK_MONOTONIC, &w2);
  const long long elapsed_ns =
      (w2.tv_sec - w1.tv_sec) * 1000000000ll + (w2.tv_nsec - w1.tv_nsec);
  const long long ticks = (long long)v2.raw_clock.tv_nsec - (long long)v1.raw_clock.tv_nsec;
  const long long device_ns = ex.hca_core_clock ? ticks * 1000000ll / (long long)ex.hca_core_clock : -1;
  CHECK(rc == 0 && ticks > 0 && device_ns <= elapsed_ns + 25000000ll,
        "the raw clock advanced %lld ticks (%lld ns of device time) in %lld ns", ticks, device_ns,
        elapsed_ns);
  struct ibv_values_ex bad = {.comp_mask = IBV_VALUES_MASK_RAW_CLOCK | (1u << 1)};
  rc = ibv_query_rt_values_ex(ctx, &bad);
  CHECK(rc == EINVAL, "ibv_query_rt_values_ex with an unknown comp_mask bit: rc=%d (EINVAL)", rc);

  struct ibv_query_device_ex_input input = {.comp_mask = 1};
  rc = ibv_query_device_ex(ctx, &input, &ex);
  CHECK(rc == EINVAL, "query_device_ex with an unknown input comp_mask: rc=%d (EINVAL)", rc);
}

static void check_port(struct ibv_context* ctx) {
  struct ibv_port_attr port;
  int rc = ibv_query_port(ctx, 1, &port);
  CHECK(rc == 0, "ibv_query_port(1) rc=%d", rc);
  CHECK(port.state == IBV_PORT_ACTIVE, "port state %d (ACTIVE)", port.state);
  CHECK(port.link_layer == IBV_LINK_LAYER_ETHERNET, "link layer %u (Ethernet)", port.link_layer);
  /* The table is larger than the four GIDs it holds, as on a real port. */
  CHECK(port.gid_tbl_len == 16, "gid_tbl_len %d", port.gid_tbl_len);
  CHECK(port.max_mtu == IBV_MTU_4096 && port.active_mtu == IBV_MTU_1024, "mtu max %d active %d",
        port.max_mtu, port.active_mtu);
  CHECK(port.pkey_tbl_len == 1, "pkey_tbl_len %u", port.pkey_tbl_len);
  rc = ibv_query_port(ctx, 2, &port);
  CHECK(rc == EINVAL, "ibv_query_port(2) rc=%d (EINVAL: one port)", rc);

  union ibv_gid gid;
  rc = ibv_query_gid(ctx, 1, 0, &gid);
  CHECK(rc == 0 && memcmp(gid.raw, kLinkLocal, 16) == 0, "GID 0 is the link-local address (rc=%d)", rc);
  rc = ibv_query_gid(ctx, 1, 3, &gid);
  CHECK(rc == 0 && memcmp(gid.raw, kLoopbackV4, 16) == 0, "GID 3 is ::ffff:127.0.0.1 (rc=%d)", rc);
  struct ibv_gid_entry entry;
  rc = ibv_query_gid_ex(ctx, 1, 0, &entry, 0);
  CHECK(rc == 0 && entry.gid_type == IBV_GID_TYPE_ROCE_V1, "GID 0 type %u (RoCE v1), rc=%d",
        entry.gid_type, rc);
  rc = ibv_query_gid_ex(ctx, 1, 1, &entry, 0);
  CHECK(rc == 0 && entry.gid_type == IBV_GID_TYPE_ROCE_V2, "GID 1 type %u (RoCE v2), rc=%d",
        entry.gid_type, rc);
  /* An empty entry: ibv_query_gid_ex says ENODATA, ibv_query_gid gives the zero GID. */
  static const uint8_t kZero[16];
  for (int i = 4; i < port.gid_tbl_len; i += port.gid_tbl_len - 5) {
    rc = ibv_query_gid_ex(ctx, 1, (uint32_t)i, &entry, 0);
    CHECK(rc == ENODATA, "ibv_query_gid_ex of the empty entry %d: rc=%d (ENODATA)", i, rc);
    memset(gid.raw, 0xa5, sizeof(gid.raw));
    rc = ibv_query_gid(ctx, 1, i, &gid);
    CHECK(rc == 0 && memcmp(gid.raw, kZero, 16) == 0, "GID %d is the zero GID (rc=%d)", i, rc);
  }
  /* Only the held entries, in index order. */
  struct ibv_gid_entry table[32];
  ssize_t n = ibv_query_gid_table(ctx, table, 32, 0);
  CHECK(n == 4, "ibv_query_gid_table returns %zd entries", n);
  for (ssize_t i = 0; i < n && i < 4; ++i)
    CHECK(table[i].gid_index == (uint32_t)i && table[i].port_num == 1 &&
              memcmp(table[i].gid.raw, kZero, 16) != 0,
          "gid_table entry %zd: index %u port %u", i, table[i].gid_index, table[i].port_num);
  __be16 pkey = 0;
  rc = ibv_query_pkey(ctx, 1, 0, &pkey);
  CHECK(rc == 0 && be16toh(pkey) == 0xffff, "pkey 0 is 0x%x (rc=%d)", be16toh(pkey), rc);
}

static void check_objects(struct ibv_context* ctx) {
  struct ibv_pd* pd = ibv_alloc_pd(ctx);
  CHECK(pd != NULL, "ibv_alloc_pd (errno %d)", pd ? 0 : errno);
  if (pd) {
    CHECK(pd->context == ctx, "pd->context is the opened context");
    int rc = ibv_dealloc_pd(pd);
    CHECK(rc == 0, "ibv_dealloc_pd rc=%d", rc);
  }

  struct ibv_alloc_dm_attr dm_attr = {.length = 4096};
  struct ibv_dm* dm = ibv_alloc_dm(ctx, &dm_attr);
  CHECK(dm != NULL, "ibv_alloc_dm(4096) (errno %d)", dm ? 0 : errno);
  if (dm) {
    CHECK(dm->context == ctx, "dm->context is the opened context");
    unsigned char out[256], in[256];
    for (int i = 0; i < 256; ++i) out[i] = (unsigned char)(i * 7 + 1);
    memset(in, 0, sizeof(in));
    int w = ibv_memcpy_to_dm(dm, 64, out, sizeof(out));
    int r = ibv_memcpy_from_dm(in, dm, 64, sizeof(in));
    CHECK(w == 0 && r == 0 && memcmp(in, out, sizeof(in)) == 0,
          "256 bytes written to DM offset 64 read back equal (w=%d r=%d)", w, r);
    int rc = ibv_free_dm(dm);
    CHECK(rc == 0, "ibv_free_dm rc=%d", rc);
  }

  /* Queues through libibverbs: a CQ and an SRQ come and go. */
  errno = 0;
  struct ibv_cq* cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
  CHECK(cq != NULL && cq->cqe >= 16 && cq->context == ctx, "ibv_create_cq (errno %d)", errno);
  if (cq) CHECK(ibv_destroy_cq(cq) == 0, "ibv_destroy_cq");
  struct ibv_pd* pd2 = ibv_alloc_pd(ctx);
  if (pd2) {
    struct ibv_srq_init_attr srq_attr = {.attr = {.max_wr = 16, .max_sge = 1}};
    errno = 0;
    struct ibv_srq* srq = ibv_create_srq(pd2, &srq_attr);
    CHECK(srq != NULL && srq_attr.attr.max_wr >= 16 && srq->pd == pd2,
          "ibv_create_srq (errno %d)", errno);
    if (srq) CHECK(ibv_destroy_srq(srq) == 0, "ibv_destroy_srq");
    ibv_dealloc_pd(pd2);
  }

  /* No kernel behind cmd_fd: the preloaded plugin answers ibv_create_comp_channel with a real
   * channel (verbs_events.c drives it), never a stray fd from a write to cmd_fd. */
  errno = 0;
  struct ibv_comp_channel* ch = ibv_create_comp_channel(ctx);
  CHECK(ch != NULL && ch->context == ctx && fcntl(ch->fd, F_GETFD) >= 0,
        "ibv_create_comp_channel gives a channel with a valid fd (errno %d)", errno);
  if (ch) CHECK(ibv_destroy_comp_channel(ch) == 0, "ibv_destroy_comp_channel");

  /* The async fd is the context's own: nothing pending. */
  int flags = fcntl(ctx->async_fd, F_GETFL);
  CHECK(flags >= 0 && fcntl(ctx->async_fd, F_SETFL, flags | O_NONBLOCK) == 0,
        "async_fd %d is a valid descriptor", ctx->async_fd);
  struct ibv_async_event ev;
  errno = 0;
  int rc = ibv_get_async_event(ctx, &ev);
  CHECK(rc == -1 && errno == EAGAIN, "no async event pending (rc=%d errno=%d)", rc, errno);
}

int main(void) {
  open_device_once();
  const int fds_before = count_entries("/proc/self/fd");
  const int threads_before = count_entries("/proc/self/task");

  int num = -1;
  struct ibv_device** list = ibv_get_device_list(&num);
  CHECK(list != NULL && num == 1, "one device listed (num=%d errno=%d)", num, list ? 0 : errno);
  if (!list || num < 1) return 1;
  CHECK(strcmp(ibv_get_device_name(list[0]), "onchip_0") == 0, "device name %s",
        ibv_get_device_name(list[0]));
  CHECK(be64toh(ibv_get_device_guid(list[0])) == kNodeGuid, "device GUID %016llx",
        (unsigned long long)be64toh(ibv_get_device_guid(list[0])));

  for (int round = 0; round < 2; ++round) {
    struct ibv_context* ctx = ibv_open_device(list[0]);
    CHECK(ctx != NULL, "ibv_open_device, round %d (errno %d)", round, ctx ? 0 : errno);
    if (!ctx) break;
    if (round == 0) {
      check_device_queries(ctx);
      check_port(ctx);
      check_objects(ctx);
    }
    int rc = ibv_close_device(ctx);
    CHECK(rc == 0, "ibv_close_device rc=%d", rc);
  }
  ibv_free_device_list(list);

  CHECK(count_entries("/proc/self/fd") == fds_before, "no file descriptor left open (%d -> %d)",
        fds_before, count_entries("/proc/self/fd"));
  CHECK(count_entries("/proc/self/task") == threads_before, "no device thread left (%d -> %d)",
        threads_before, count_entries("/proc/self/task"));
  return check_summary();
}
