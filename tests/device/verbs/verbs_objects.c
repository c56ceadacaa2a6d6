/* Memory regions, windows, thread and parent domains on the software ConnectX, seen by an
 * unmodified verbs program: written against <infiniband/verbs.h> only, run through
 * tools/verbs_env/launch.py. Every call goes through libibverbs 44's own entry points and inline
 * wrappers into onchip's provider ops. Each check prints "ok" or "not ok" with what it saw; the
 * exit status is the number of failures.
 *
 * Expected errors are rdma-core's and the kernel's for the same calls on an mlx5 device. */
#include <infiniband/verbs.h>

#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/device/verbs/checks.h"

/* ibv_reg_mr's documented failures and the PD it pins. */
static void check_host_mr(struct ibv_context* ctx, struct ibv_pd* pd) {
  static char buf[3 * 4096];
  const int rw = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;

  struct ibv_mr* mr = ibv_reg_mr(pd, buf + 100, 8000, rw);
  CHECK(mr != NULL, "ibv_reg_mr(8000 bytes, local+remote write+read) (errno %d)", mr ? 0 : errno);
  if (!mr) return;
  CHECK(mr->context == ctx && mr->pd == pd, "mr->context and mr->pd are the caller's");
  CHECK(mr->addr == buf + 100 && mr->length == 8000, "mr->addr %p length %zu", mr->addr,
        mr->length);
  CHECK(mr->lkey != 0 && mr->lkey == mr->rkey, "lkey 0x%x = rkey 0x%x", mr->lkey, mr->rkey);

  struct ibv_mr* mr2 = ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
  CHECK(mr2 != NULL && mr2->lkey != mr->lkey, "a second MR over the same pages has its own key "
        "(errno %d)", mr2 ? 0 : errno);

  int rc = ibv_dealloc_pd(pd);
  CHECK(rc == EBUSY, "ibv_dealloc_pd with MRs registered: rc=%d (EBUSY)", rc);
  rc = ibv_dereg_mr(mr);
  CHECK(rc == 0, "ibv_dereg_mr rc=%d", rc);
  if (mr2) {
    rc = ibv_dereg_mr(mr2);
    CHECK(rc == 0, "ibv_dereg_mr (second) rc=%d", rc);
  }

  errno = 0;
  mr = ibv_reg_mr(pd, buf, 64, IBV_ACCESS_LOCAL_WRITE | (1 << 14));
  CHECK(mr == NULL && errno == EINVAL, "ibv_reg_mr with an unknown access bit: errno %d (EINVAL)",
        errno);
  errno = 0;
  mr = ibv_reg_mr(pd, buf, 64, IBV_ACCESS_REMOTE_WRITE);
  CHECK(mr == NULL && errno == EINVAL,
        "ibv_reg_mr remote write without local write: errno %d (EINVAL)", errno);
  errno = 0;
  mr = ibv_reg_mr(pd, buf, 64, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_ATOMIC);
  if (mr) ibv_dereg_mr(mr);
  CHECK(mr != NULL, "remote atomic with local write is accepted (errno %d)", mr ? 0 : errno);
  errno = 0;
  mr = ibv_reg_mr(pd, buf, 0, IBV_ACCESS_LOCAL_WRITE);
  CHECK(mr == NULL && errno == EINVAL, "ibv_reg_mr of 0 bytes: errno %d (EINVAL)", errno);
  errno = 0;
  mr = ibv_reg_mr(pd, buf, 64, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_ON_DEMAND);
  CHECK(mr == NULL && errno == EOPNOTSUPP, "ibv_reg_mr ON_DEMAND: errno %d (EOPNOTSUPP: no ODP)",
        errno);

  /* Relaxed ordering is an optional bit: accepted (and ignorable) by any device. */
  mr = ibv_reg_mr(pd, buf, 64, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_RELAXED_ORDERING);
  CHECK(mr != NULL, "ibv_reg_mr with IBV_ACCESS_RELAXED_ORDERING (errno %d)", mr ? 0 : errno);
  if (mr) ibv_dereg_mr(mr);

  /* iova2: the device addresses the MR by iova, which must share addr's offset in its page. */
  const uint64_t iova = 0x7f0000000000ull + ((uintptr_t)(buf + 100) & 4095);
  mr = ibv_reg_mr_iova2(pd, buf + 100, 256, iova, IBV_ACCESS_LOCAL_WRITE);
  CHECK(mr != NULL && mr->addr == buf + 100, "ibv_reg_mr_iova2 at a different iova (errno %d)",
        mr ? 0 : errno);
  if (mr) ibv_dereg_mr(mr);
  errno = 0;
  mr = ibv_reg_mr_iova2(pd, buf + 100, 256, iova + 1, IBV_ACCESS_LOCAL_WRITE);
  CHECK(mr == NULL && errno == EINVAL, "iova with another in-page offset: errno %d (EINVAL)",
        errno);
}

/* ibv_reg_dm_mr: zero-based MRs over device memory, which pin their DM. */
static void check_dm_mr(struct ibv_context* ctx, struct ibv_pd* pd) {
  struct ibv_alloc_dm_attr attr = {.length = 4096};
  struct ibv_dm* dm = ibv_alloc_dm(ctx, &attr);
  CHECK(dm != NULL, "ibv_alloc_dm(4096) (errno %d)", dm ? 0 : errno);
  if (!dm) return;
  const unsigned access = IBV_ACCESS_ZERO_BASED | IBV_ACCESS_LOCAL_WRITE |
                          IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE;
  struct ibv_mr* mr = ibv_reg_dm_mr(pd, dm, 1024, 2048, access);
  CHECK(mr != NULL, "ibv_reg_dm_mr(offset 1024, 2048 bytes) (errno %d)", mr ? 0 : errno);
  if (mr) {
    CHECK(mr->context == ctx && mr->pd == pd && mr->addr == NULL && mr->length == 2048,
          "DM MR: context, pd, zero-based addr NULL, length %zu", mr->length);
    int rc = ibv_free_dm(dm);
    CHECK(rc == EBUSY, "ibv_free_dm with an MR on it: rc=%d (EBUSY)", rc);
    rc = ibv_dealloc_pd(pd);
    CHECK(rc == EBUSY, "ibv_dealloc_pd with a DM MR: rc=%d (EBUSY)", rc);
    rc = ibv_dereg_mr(mr);
    CHECK(rc == 0, "ibv_dereg_mr (DM MR) rc=%d", rc);
  }
  errno = 0;
  mr = ibv_reg_dm_mr(pd, dm, 0, 64, IBV_ACCESS_LOCAL_WRITE);
  CHECK(mr == NULL && errno == EINVAL, "ibv_reg_dm_mr without ZERO_BASED: errno %d (EINVAL)",
        errno);
  errno = 0;
  mr = ibv_reg_dm_mr(pd, dm, 0, 64, IBV_ACCESS_ZERO_BASED | IBV_ACCESS_REMOTE_WRITE);
  CHECK(mr == NULL && errno == EINVAL,
        "ibv_reg_dm_mr REMOTE_WRITE without LOCAL_WRITE: errno %d (EINVAL)", errno);
  errno = 0;
  mr = ibv_reg_dm_mr(pd, dm, 0, 64, IBV_ACCESS_ZERO_BASED | IBV_ACCESS_REMOTE_ATOMIC);
  CHECK(mr == NULL && errno == EINVAL,
        "ibv_reg_dm_mr REMOTE_ATOMIC without LOCAL_WRITE: errno %d (EINVAL)", errno);
  errno = 0;
  mr = ibv_reg_dm_mr(pd, dm, 4096 - 64, 128, access);
  CHECK(mr == NULL && errno == EINVAL, "ibv_reg_dm_mr past the DM's end: errno %d (EINVAL)",
        errno);
  errno = 0;
  mr = ibv_reg_dm_mr(pd, dm, 0, 64, access | IBV_ACCESS_MW_BIND);
  CHECK(mr == NULL && errno == EINVAL, "ibv_reg_dm_mr with MW_BIND: errno %d (EINVAL)", errno);
  int rc = ibv_free_dm(dm);
  CHECK(rc == 0, "ibv_free_dm after the MR is gone rc=%d", rc);
}

/* Memory windows: types 1 and 2 exist; binding is a send-queue operation (no data path yet). */
static void check_mw(struct ibv_context* ctx, struct ibv_pd* pd) {
  struct ibv_mw* mw1 = ibv_alloc_mw(pd, IBV_MW_TYPE_1);
  CHECK(mw1 != NULL, "ibv_alloc_mw type 1 (errno %d)", mw1 ? 0 : errno);
  struct ibv_mw* mw2 = ibv_alloc_mw(pd, IBV_MW_TYPE_2);
  CHECK(mw2 != NULL, "ibv_alloc_mw type 2 (errno %d)", mw2 ? 0 : errno);
  errno = 0;
  struct ibv_mw* mw3 = ibv_alloc_mw(pd, (enum ibv_mw_type)3);
  CHECK(mw3 == NULL && errno == EINVAL, "ibv_alloc_mw type 3: NULL, errno %d (EINVAL)", errno);
  if (mw1) {
    CHECK(mw1->context == ctx && mw1->pd == pd && mw1->type == IBV_MW_TYPE_1,
          "type 1 window: context, pd, type %d", mw1->type);
    const uint32_t next = ibv_inc_rkey(mw1->rkey);
    CHECK((next & ~0xffu) == (mw1->rkey & ~0xffu) && (next & 0xff) == ((mw1->rkey + 1) & 0xff),
          "ibv_inc_rkey(0x%x) = 0x%x bumps only the key byte", mw1->rkey, next);
    struct ibv_mw_bind bind;
    memset(&bind, 0, sizeof(bind));
    int rc = ibv_bind_mw(NULL, mw1, &bind);
    CHECK(rc == EOPNOTSUPP, "ibv_bind_mw: rc=%d (EOPNOTSUPP: no send queues yet)", rc);
  }
  if (mw2) {
    CHECK(mw2->type == IBV_MW_TYPE_2 && mw2->rkey != (mw1 ? mw1->rkey : 0),
          "type 2 window with its own rkey 0x%x", mw2->rkey);
  }
  int rc = ibv_dealloc_pd(pd);
  CHECK(rc == EBUSY, "ibv_dealloc_pd with windows: rc=%d (EBUSY)", rc);
  if (mw1) {
    rc = ibv_dealloc_mw(mw1);
    CHECK(rc == 0, "ibv_dealloc_mw (type 1) rc=%d", rc);
  }
  if (mw2) {
    rc = ibv_dealloc_mw(mw2);
    CHECK(rc == 0, "ibv_dealloc_mw (type 2) rc=%d", rc);
  }
}

/* Thread domains and parent domains; a parent domain is freed through ibv_dealloc_pd. */
static void check_domains(struct ibv_context* ctx, struct ibv_pd* pd) {
  struct ibv_td_init_attr td_attr = {.comp_mask = 1};
  errno = 0;
  struct ibv_td* td = ibv_alloc_td(ctx, &td_attr);
  CHECK(td == NULL && errno == EINVAL, "ibv_alloc_td with comp_mask 1: errno %d (EINVAL)", errno);
  td_attr.comp_mask = 0;
  td = ibv_alloc_td(ctx, &td_attr);
  CHECK(td != NULL, "ibv_alloc_td (errno %d)", td ? 0 : errno);
  if (td) CHECK(td->context == ctx, "td->context is the opened context");

  struct ibv_parent_domain_init_attr pa;
  memset(&pa, 0, sizeof(pa));
  errno = 0;
  struct ibv_pd* pad = ibv_alloc_parent_domain(ctx, &pa);
  CHECK(pad == NULL && errno == EINVAL, "ibv_alloc_parent_domain without a PD: errno %d (EINVAL)",
        errno);
  pa.pd = pd;
  pa.comp_mask = 1u << 7;
  errno = 0;
  pad = ibv_alloc_parent_domain(ctx, &pa);
  CHECK(pad == NULL && errno == EINVAL,
        "ibv_alloc_parent_domain with an unknown comp_mask bit: errno %d (EINVAL)", errno);

  pa.comp_mask = IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT;
  pa.pd_context = &pa;
  pa.td = td;
  pad = ibv_alloc_parent_domain(ctx, &pa);
  CHECK(pad != NULL, "ibv_alloc_parent_domain(pd, td, pd_context) (errno %d)", pad ? 0 : errno);
  if (pad) {
    CHECK(pad != pd && pad->context == ctx && pad->handle == pd->handle,
          "the parent domain is a PD of its own with the PD's handle %u", pad->handle);
    if (td) {
      int rc = ibv_dealloc_td(td);
      CHECK(rc == EBUSY, "ibv_dealloc_td while a parent domain holds it: rc=%d (EBUSY)", rc);
    }
    int rc = ibv_dealloc_pd(pd);
    CHECK(rc == EBUSY, "ibv_dealloc_pd of the parent domain's PD: rc=%d (EBUSY)", rc);

    /* An MR on a parent domain protects memory with the PD underneath. */
    static char buf[256];
    struct ibv_mr* mr = ibv_reg_mr(pad, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
    CHECK(mr != NULL && mr->pd == pad, "ibv_reg_mr on the parent domain (errno %d)",
          mr ? 0 : errno);
    if (mr) ibv_dereg_mr(mr);

    rc = ibv_dealloc_pd(pad);
    CHECK(rc == 0, "ibv_dealloc_pd frees the parent domain: rc=%d", rc);
  }
  if (td) {
    int rc = ibv_dealloc_td(td);
    CHECK(rc == 0, "ibv_dealloc_td once no parent domain holds it: rc=%d", rc);
  }
}

/* The software ConnectX runs inside the process that opened the context: a forked child has no
 * device. Its calls that would command the device fail with ENODEV (instead of reaching the
 * parent's command queue), queries still answer, closing releases only the child's part, and the
 * parent's device and objects are untouched. */
static void check_forked_child(struct ibv_context* ctx, struct ibv_pd* pd) {
  fflush(stdout);
  const pid_t child = fork();
  if (child == 0) {
    int bad = 0;
    errno = 0;
    struct ibv_pd* p = ibv_alloc_pd(ctx);
    bad += !(p == NULL && errno == ENODEV);
    static char buf[64];
    errno = 0;
    struct ibv_mr* mr = ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
    bad += !(mr == NULL && errno == ENODEV);
    bad += ibv_dealloc_pd(pd) != ENODEV;
    struct ibv_port_attr port;
    bad += ibv_query_port(ctx, 1, &port) != 0 || port.state != IBV_PORT_ACTIVE;
    bad += ibv_close_device(ctx) != 0;
    _exit(bad);
  }
  int status = -1;
  CHECK(child > 0 && waitpid(child, &status, 0) == child && WIFEXITED(status) &&
            WEXITSTATUS(status) == 0,
        "forked child: alloc_pd, reg_mr, dealloc_pd ENODEV; query_port and close work "
        "(%d of its checks failed)", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  static char buf[64];
  struct ibv_mr* mr = ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
  CHECK(mr != NULL, "the parent's PD still registers memory after the child closed "
        "(errno %d)", mr ? 0 : errno);
  if (mr) ibv_dereg_mr(mr);
}

// Two contexts on one device in one process share the device (as a server and a client do in
// rdma-core's tests): one thread more than a single open, not two devices; closing the first
// leaves the second working; closing both stops the device.
static void check_two_contexts(struct ibv_device* dev) {
  const int threads_before = count_entries("/proc/self/task");
  struct ibv_context* a = ibv_open_device(dev);
  const int threads_one = count_entries("/proc/self/task");
  struct ibv_context* b = ibv_open_device(dev);
  CHECK(a != NULL && b != NULL && a != b, "two contexts on one device (errno %d)", errno);
  if (!a || !b) return;
  CHECK(count_entries("/proc/self/task") == threads_one,
        "the second open shares the first's device (threads %d, %d, %d)", threads_before,
        threads_one, count_entries("/proc/self/task"));
  struct ibv_pd* pa = ibv_alloc_pd(a);
  struct ibv_pd* pb = ibv_alloc_pd(b);
  CHECK(pa && pb && pa->context == a && pb->context == b && pa->handle != pb->handle,
        "each context's PD points at it, distinct PD numbers");
  if (pa) ibv_dealloc_pd(pa);
  CHECK(ibv_close_device(a) == 0, "closing the first context");
  if (pb) {
    struct ibv_alloc_dm_attr attr = {.length = 64};
    struct ibv_dm* dm = ibv_alloc_dm(b, &attr);
    CHECK(dm != NULL, "the second context still allocates device memory (errno %d)",
          dm ? 0 : errno);
    if (dm) ibv_free_dm(dm);
    ibv_dealloc_pd(pb);
  }
  CHECK(ibv_close_device(b) == 0, "closing the second context");
  CHECK(count_entries("/proc/self/task") == threads_before,
        "the device stops with its last context (%d -> %d)", threads_before,
        count_entries("/proc/self/task"));
}

int main(void) {
  open_device_once();
  const int fds_before = count_entries("/proc/self/fd");
  const int threads_before = count_entries("/proc/self/task");

  int num = -1;
  struct ibv_device** list = ibv_get_device_list(&num);
  CHECK(list != NULL && num == 1, "one device listed (num=%d)", num);
  if (!list || num < 1) return 1;
  struct ibv_context* ctx = ibv_open_device(list[0]);
  CHECK(ctx != NULL, "ibv_open_device (errno %d)", ctx ? 0 : errno);
  if (!ctx) return 1;
  struct ibv_pd* pd = ibv_alloc_pd(ctx);
  CHECK(pd != NULL, "ibv_alloc_pd (errno %d)", pd ? 0 : errno);
  if (pd) {
    check_host_mr(ctx, pd);
    check_dm_mr(ctx, pd);
    check_mw(ctx, pd);
    check_domains(ctx, pd);
    check_forked_child(ctx, pd);
    int rc = ibv_dealloc_pd(pd);
    CHECK(rc == 0, "ibv_dealloc_pd once nothing uses it: rc=%d", rc);
  }
  int rc = ibv_close_device(ctx);
  CHECK(rc == 0, "ibv_close_device rc=%d", rc);
  check_two_contexts(list[0]);
  ibv_free_device_list(list);

  CHECK(count_entries("/proc/self/fd") == fds_before, "no file descriptor left open (%d -> %d)",
        fds_before, count_entries("/proc/self/fd"));
  CHECK(count_entries("/proc/self/task") == threads_before, "no device thread left (%d -> %d)",
        threads_before, count_entries("/proc/self/task"));
  return check_summary();
}
