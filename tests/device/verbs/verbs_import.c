/* Sharing objects between contexts of one uverbs file: ibv_import_device on a dup of a context's
 * command fd, then ibv_import_pd, ibv_import_mr and ibv_import_dm by handle, and their unimport
 * calls. Written against <infiniband/verbs.h> only and run through tools/verbs_env/launch.py
 * (which preloads the plugin: libibverbs 44's own ibv_import_device needs a kernel). Each check
 * prints "ok" or "not ok"; the exit status is the number of failures. */
#include <infiniband/verbs.h>

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/device/verbs/checks.h"

static struct ibv_context* open_first(void) {
  struct ibv_device** list = ibv_get_device_list(NULL);
  struct ibv_context* ctx = list && list[0] ? ibv_open_device(list[0]) : NULL;
  if (list) ibv_free_device_list(list);
  return ctx;
}

/* A CQ and an RC QP made through `ctx` on `pd`; 0 when both were created. */
static int make_qp(struct ibv_context* ctx, struct ibv_pd* pd, struct ibv_cq* cq,
                   struct ibv_qp** qp) {
  struct ibv_qp_init_attr attr = {
      .send_cq = cq,
      .recv_cq = cq,
      .cap = {.max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1},
      .qp_type = IBV_QPT_RC,
  };
  (void)ctx;
  *qp = ibv_create_qp(pd, &attr);
  return *qp ? 0 : errno;
}

int main(void) {
  open_device_once();
  const int fds_before = count_entries("/proc/self/fd");
  static char buf[8192];

  struct ibv_context* ctx = open_first();
  CHECK(ctx != NULL, "ibv_open_device (errno %d)", ctx ? 0 : errno);
  if (!ctx) return check_summary();
  struct ibv_pd* pd = ibv_alloc_pd(ctx);
  struct ibv_mr* mr = pd ? ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE |
                                                               IBV_ACCESS_REMOTE_WRITE)
                         : NULL;
  struct ibv_alloc_dm_attr dm_attr = {.length = 4096};
  struct ibv_dm* dm = ibv_alloc_dm(ctx, &dm_attr);
  CHECK(pd && mr && dm, "PD, MR and DM on the original context");
  if (!pd || !mr || !dm) return check_summary();

  /* The import: a second context of the same file. */
  const int fd = dup(ctx->cmd_fd);
  struct ibv_context* imported = ibv_import_device(fd);
  CHECK(imported != NULL && imported != ctx, "ibv_import_device(dup(cmd_fd)) (errno %d)",
        imported ? 0 : errno);
  if (!imported) return check_summary();
  CHECK(imported->cmd_fd == fd, "the imported context owns the fd it was given (%d, %d)",
        imported->cmd_fd, fd);
  CHECK(imported->async_fd >= 0 && imported->async_fd != ctx->async_fd,
        "the imported context has an async_fd of its own");
  struct ibv_device_attr da;
  CHECK(ibv_query_device(imported, &da) == 0, "ibv_query_device through the import");

  struct ibv_pd* pd2 = ibv_import_pd(imported, pd->handle);
  CHECK(pd2 != NULL && pd2 != pd && pd2->context == imported && pd2->handle == pd->handle,
        "ibv_import_pd: a new PD of the imported context with the same handle (errno %d)",
        pd2 ? 0 : errno);
  struct ibv_mr* mr2 = pd2 ? ibv_import_mr(pd2, mr->handle) : NULL;
  CHECK(mr2 != NULL && mr2->lkey == mr->lkey && mr2->rkey == mr->rkey &&
            mr2->length == mr->length && mr2->pd == pd2 && mr2->context == imported,
        "ibv_import_mr: the original's keys and length on the imported PD (errno %d)",
        mr2 ? 0 : errno);
  struct ibv_dm* dm2 = ibv_import_dm(imported, dm->handle);
  CHECK(dm2 != NULL && dm2->context == imported && dm2->handle == dm->handle,
        "ibv_import_dm (errno %d)", dm2 ? 0 : errno);
  if (!pd2 || !mr2 || !dm2) return check_summary();

  /* Device memory written through one face is read through the other. */
  uint8_t out[256], in[256];
  for (size_t i = 0; i < sizeof(out); ++i) out[i] = (uint8_t)(i * 7 + 3);
  CHECK(ibv_memcpy_to_dm(dm, 64, out, sizeof(out)) == 0, "write the original DM");
  memset(in, 0, sizeof(in));
  CHECK(ibv_memcpy_from_dm(in, dm2, 64, sizeof(in)) == 0 && memcmp(in, out, sizeof(in)) == 0,
        "the imported DM reads the bytes written through the original");
  CHECK(ibv_memcpy_from_dm(in, dm2, 4096 - 4, 8) == EFAULT,
        "the imported DM keeps the original's bounds (EFAULT past its end)");

  /* Objects of one file mix across its contexts; another file's do not. */
  struct ibv_cq* cq_orig = ibv_create_cq(ctx, 4, NULL, NULL, 0);
  struct ibv_cq* cq_imp = ibv_create_cq(imported, 4, NULL, NULL, 0);
  CHECK(cq_orig && cq_imp, "a CQ on each context");
  struct ibv_qp* qp = NULL;
  int rc = make_qp(imported, pd2, cq_orig, &qp);
  CHECK(rc == 0, "an RC QP on the imported PD with the original context's CQ (errno %d)", rc);
  if (qp) CHECK(ibv_destroy_qp(qp) == 0, "destroy it");
  rc = make_qp(ctx, pd, cq_imp, &qp);
  CHECK(rc == 0, "an RC QP on the original PD with the imported context's CQ (errno %d)", rc);
  if (qp) ibv_destroy_qp(qp);

  struct ibv_context* other = open_first();
  CHECK(other != NULL, "a second ibv_open_device: another uverbs file");
  if (other) {
    errno = 0;
    struct ibv_pd* foreign = ibv_import_pd(other, pd->handle);
    CHECK(foreign == NULL && errno == ENOENT,
          "ibv_import_pd of another file's handle: errno %d (ENOENT)", errno);
    struct ibv_cq* cq_other = ibv_create_cq(other, 4, NULL, NULL, 0);
    rc = cq_other ? make_qp(other, pd2, cq_other, &qp) : -1;
    CHECK(rc == EINVAL, "a QP of another file on the imported PD: errno %d (EINVAL)", rc);
    if (cq_other) ibv_destroy_cq(cq_other);
    ibv_close_device(other);
  }
  errno = 0;
  CHECK(ibv_import_pd(imported, pd->handle + 1000) == NULL && errno == ENOENT,
        "ibv_import_pd of a handle no PD has: errno %d (ENOENT)", errno);

  /* A face pins its original; unimporting frees the face only. */
  rc = ibv_dealloc_pd(pd);
  CHECK(rc == EBUSY, "ibv_dealloc_pd of the original while an MR and an import use it: %d", rc);
  ibv_unimport_mr(mr2);
  ibv_unimport_dm(dm2);
  ibv_unimport_pd(pd2);
  CHECK(ibv_memcpy_to_dm(dm, 0, out, 8) == 0, "the original DM still works after unimport");
  CHECK(ibv_destroy_cq(cq_imp) == 0 && ibv_destroy_cq(cq_orig) == 0, "destroy the CQs");
  CHECK(ibv_free_dm(dm) == 0, "ibv_free_dm of the original after its import is gone");
  CHECK(ibv_dereg_mr(mr) == 0, "ibv_dereg_mr of the original");
  CHECK(ibv_dealloc_pd(pd) == 0, "ibv_dealloc_pd of the original");

  /* An fd that is no context's is not onchip's import: libibverbs answers it. */
  const int stray = open("/dev/null", O_RDONLY | O_CLOEXEC);
  errno = 0;
  struct ibv_context* none = ibv_import_device(stray);
  CHECK(none == NULL && errno != 0, "ibv_import_device of a stray fd fails (errno %d)", errno);
  if (none) ibv_close_device(none);
  close(stray);

  CHECK(ibv_close_device(ctx) == 0, "close the original first");
  struct ibv_pd* late = ibv_alloc_pd(imported);
  CHECK(late != NULL, "the imported context still works after the original closed (errno %d)",
        late ? 0 : errno);
  if (late) ibv_dealloc_pd(late);
  CHECK(ibv_close_device(imported) == 0, "close the import (and its fd)");
  CHECK(fcntl(fd, F_GETFD) == -1 && errno == EBADF, "the imported fd is closed with its context");
  const int fds_after = count_entries("/proc/self/fd");
  CHECK(fds_after == fds_before, "no fd leaked (%d before, %d after)", fds_before, fds_after);
  return check_summary();
}
