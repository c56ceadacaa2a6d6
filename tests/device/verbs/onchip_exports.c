/* A program that links libonchip-rdmav34.so (-lonchip-rdmav34) for the calls Debian's
 * libibverbs 44 and libmlx5 cannot give a provider other than mlx5: ibv_alloc_dmah,
 * ibv_dealloc_dmah and ibv_reg_mr_ex (declared by uapi/verbs/dmah.h, as upstream libibverbs
 * does), mlx5dv_alloc_dm, mlx5dv_init_obj, mlx5dv_is_supported and mlx5dv_query_device
 * (<infiniband/mlx5dv.h>). Everything else is plain
 * libibverbs, run through tools/verbs_env/launch.py. Each check prints "ok" or "not ok"; the exit
 * status is the number of failures.
 *
 * Expected errors are rdma-core's (mlx5_alloc_dmah, ibv_cmd_reg_mr_ex, _mlx5dv_alloc_dm) and the
 * kernel's for the same calls on an mlx5 device with TPH. */
#define _GNU_SOURCE
#include <infiniband/mlx5dv.h>
#include <infiniband/verbs.h>

#include <errno.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "tests/device/verbs/checks.h"
#include "uapi/verbs/dmah.h"

static struct ibv_dmah* alloc_dmah(struct ibv_context* ctx, uint32_t mask, uint8_t ph,
                                   uint32_t cpu) {
  struct ibv_dmah_init_attr attr;
  memset(&attr, 0, sizeof(attr));
  attr.comp_mask = mask;
  attr.ph = ph;
  attr.cpu_id = cpu;
  attr.tph_mem_type = IBV_TPH_MEM_TYPE_VM;
  errno = 0;
  return ibv_alloc_dmah(ctx, &attr);
}

/* Validation order: unknown bit, PH missing, half of CPU_ID/TPH_MEM_TYPE, ph out of range. */
static void check_dmah(struct ibv_context* ctx, struct ibv_pd* pd) {
  const uint32_t PH = IBV_DMAH_INIT_ATTR_MASK_PH, CPU = IBV_DMAH_INIT_ATTR_MASK_CPU_ID,
                 MEM = IBV_DMAH_INIT_ATTR_MASK_TPH_MEM_TYPE;
  struct ibv_dmah* d = alloc_dmah(ctx, PH | (1u << 3), 9, 0);
  CHECK(d == NULL && errno == EOPNOTSUPP,
        "ibv_alloc_dmah with an unknown mask bit (and a bad ph): errno %d (EOPNOTSUPP first)",
        errno);
  d = alloc_dmah(ctx, CPU | MEM, 0, 0);
  CHECK(d == NULL && errno == EINVAL, "ibv_alloc_dmah without PH: errno %d (EINVAL)", errno);
  d = alloc_dmah(ctx, PH | CPU, 0, 0);
  CHECK(d == NULL && errno == EINVAL, "ibv_alloc_dmah with CPU_ID alone: errno %d (EINVAL)",
        errno);
  d = alloc_dmah(ctx, PH | MEM, 0, 0);
  CHECK(d == NULL && errno == EINVAL, "ibv_alloc_dmah with TPH_MEM_TYPE alone: errno %d (EINVAL)",
        errno);
  d = alloc_dmah(ctx, PH, 4, 0);
  CHECK(d == NULL && errno == EINVAL, "ibv_alloc_dmah with ph 4: errno %d (EINVAL)", errno);

  struct ibv_dmah* dmah = alloc_dmah(ctx, PH, 2, 0);
  CHECK(dmah != NULL, "ibv_alloc_dmah(ph 2) (errno %d)", dmah ? 0 : errno);
  if (!dmah) return;
  CHECK(dmah->context == ctx, "dmah->context is the opened context");

  static char buf[8192];
  struct ibv_mr_init_attr mra;
  memset(&mra, 0, sizeof(mra));
  mra.comp_mask = IBV_REG_MR_MASK_ADDR | IBV_REG_MR_MASK_DMAH;
  mra.addr = buf + 8;
  mra.length = 5000;
  mra.access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ;
  mra.dmah = dmah;
  struct ibv_mr* mr = ibv_reg_mr_ex(pd, &mra);
  CHECK(mr != NULL, "ibv_reg_mr_ex(ADDR | DMAH) (errno %d)", mr ? 0 : errno);
  if (mr) {
    CHECK(mr->context == ctx && mr->pd == pd && mr->addr == buf + 8 && mr->length == 5000 &&
              mr->lkey != 0,
          "the MR describes the range: addr %p length %zu lkey 0x%x", mr->addr, mr->length,
          mr->lkey);
    int rc = ibv_dealloc_dmah(dmah);
    CHECK(rc == EBUSY, "ibv_dealloc_dmah while an MR uses it: rc=%d (EBUSY)", rc);
    rc = ibv_dereg_mr(mr); /* libibverbs' own, into onchip's dereg_mr */
    CHECK(rc == 0, "ibv_dereg_mr of the ibv_reg_mr_ex MR: rc=%d", rc);
  }

  mra.comp_mask = IBV_REG_MR_MASK_ADDR | IBV_REG_MR_MASK_FD;
  errno = 0;
  mr = ibv_reg_mr_ex(pd, &mra);
  CHECK(mr == NULL && errno == EINVAL, "ibv_reg_mr_ex with both ADDR and FD: errno %d (EINVAL)",
        errno);
  mra.comp_mask = IBV_REG_MR_MASK_FD;
  mra.fd = 0;
  errno = 0;
  mr = ibv_reg_mr_ex(pd, &mra);
  CHECK(mr == NULL && errno == EOPNOTSUPP, "ibv_reg_mr_ex of a dma-buf: errno %d (EOPNOTSUPP)",
        errno);

  /* A steering tag for a CPU this process may run on. */
  cpu_set_t allowed;
  uint32_t cpu = 0;
  if (sched_getaffinity(0, sizeof(allowed), &allowed) == 0)
    while (cpu < CPU_SETSIZE && !CPU_ISSET(cpu, &allowed)) ++cpu;
  struct ibv_dmah* tagged = alloc_dmah(ctx, PH | CPU | MEM, 0, cpu);
  CHECK(tagged != NULL, "ibv_alloc_dmah(CPU %u of our affinity, VM memory) (errno %d)", cpu,
        tagged ? 0 : errno);
  if (tagged) CHECK(ibv_dealloc_dmah(tagged) == 0, "ibv_dealloc_dmah of the tagged handle");

  int rc = ibv_dealloc_dmah(dmah);
  CHECK(rc == 0, "ibv_dealloc_dmah once the MR is gone: rc=%d", rc);
}

static void check_dv_dm(struct ibv_context* ctx) {
  /* SW ICM: device-only memory, known by its ICM address. */
  struct ibv_alloc_dm_attr attr = {.length = 4096};
  struct mlx5dv_alloc_dm_attr dv = {.type = MLX5DV_DM_TYPE_STEERING_SW_ICM};
  struct ibv_dm* icm = mlx5dv_alloc_dm(ctx, &attr, &dv);
  CHECK(icm != NULL, "mlx5dv_alloc_dm(STEERING_SW_ICM, 4096) (errno %d)", icm ? 0 : errno);
  if (icm) {
    struct mlx5dv_dm out;
    memset(&out, 0, sizeof(out));
    out.comp_mask = MLX5DV_DM_MASK_REMOTE_VA;
    struct mlx5dv_obj obj;
    memset(&obj, 0, sizeof(obj));
    obj.dm.in = icm;
    obj.dm.out = &out;
    int rc = mlx5dv_init_obj(&obj, MLX5DV_OBJ_DM);
    CHECK(rc == 0, "mlx5dv_init_obj(DM) rc=%d", rc);
    CHECK((out.comp_mask & MLX5DV_DM_MASK_REMOTE_VA) && out.remote_va != 0 &&
              out.remote_va % 4096 == 0 && out.buf == NULL && out.length == 4096,
          "SW ICM: remote_va 0x%llx (aligned), no CPU buffer, length %llu",
          (unsigned long long)out.remote_va, (unsigned long long)out.length);
    char byte = 1;
    rc = ibv_memcpy_to_dm(icm, 0, &byte, 1);
    CHECK(rc != 0, "ibv_memcpy_to_dm on SW ICM is refused: rc=%d", rc);
    rc = ibv_free_dm(icm);
    CHECK(rc == 0, "ibv_free_dm (SW ICM) rc=%d", rc);
  }

  /* MEMIC through mlx5dv: the CPU buffer init_obj reports holds what ibv_memcpy_to_dm wrote. */
  dv.type = MLX5DV_DM_TYPE_MEMIC;
  struct ibv_dm* memic = mlx5dv_alloc_dm(ctx, &attr, &dv);
  CHECK(memic != NULL, "mlx5dv_alloc_dm(MEMIC, 4096) (errno %d)", memic ? 0 : errno);
  if (memic) {
    struct mlx5dv_dm out;
    memset(&out, 0, sizeof(out));
    struct mlx5dv_obj obj;
    memset(&obj, 0, sizeof(obj));
    obj.dm.in = memic;
    obj.dm.out = &out;
    int rc = mlx5dv_init_obj(&obj, MLX5DV_OBJ_DM);
    uint32_t pattern[16], seen[16];
    for (int i = 0; i < 16; ++i) pattern[i] = 0x5a000000u + (uint32_t)i * 0x01010101u;
    int w = ibv_memcpy_to_dm(memic, 128, pattern, sizeof(pattern));
    if (rc == 0 && out.buf) memcpy(seen, (const char*)out.buf + 128, sizeof(seen));
    CHECK(rc == 0 && w == 0 && out.buf != NULL && out.comp_mask == 0 &&
              memcmp(seen, pattern, sizeof(seen)) == 0,
          "MEMIC: mlx5dv buf %p shows the 64 bytes ibv_memcpy_to_dm wrote (rc=%d w=%d)", out.buf,
          rc, w);
    rc = mlx5dv_init_obj(&obj, MLX5DV_OBJ_DM | MLX5DV_OBJ_QP);
    CHECK(rc == EOPNOTSUPP, "mlx5dv_init_obj with a QP: rc=%d (EOPNOTSUPP)", rc);
    rc = ibv_free_dm(memic);
    CHECK(rc == 0, "ibv_free_dm (MEMIC) rc=%d", rc);
  }

  dv.type = (enum mlx5dv_alloc_dm_type)77;
  errno = 0;
  struct ibv_dm* bad = mlx5dv_alloc_dm(ctx, &attr, &dv);
  CHECK(bad == NULL && errno == EOPNOTSUPP, "mlx5dv_alloc_dm of an unknown type: errno %d "
        "(EOPNOTSUPP)", errno);
}

/* A DMA handle belongs to the context (uverbs file) it was allocated on: ibv_reg_mr_ex of one
 * from another context of the same device finds no such handle, ENOENT (the kernel's ioctl
 * handle lookup), as ibv_reg_dm_mr of another context's DM; on its own context it registers. */
static void check_dmah_of_another_context(struct ibv_device* device, struct ibv_pd* pd) {
  struct ibv_context* other = ibv_open_device(device);
  CHECK(other != NULL, "a second context on the device (errno %d)", other ? 0 : errno);
  if (!other) return;
  struct ibv_dmah* theirs = alloc_dmah(other, IBV_DMAH_INIT_ATTR_MASK_PH, 1, 0);
  CHECK(theirs != NULL, "ibv_alloc_dmah on the second context (errno %d)", theirs ? 0 : errno);
  if (theirs) {
    static char buf[4096];
    struct ibv_mr_init_attr mra;
    memset(&mra, 0, sizeof(mra));
    mra.comp_mask = IBV_REG_MR_MASK_ADDR | IBV_REG_MR_MASK_DMAH;
    mra.addr = buf;
    mra.length = sizeof(buf);
    mra.access = IBV_ACCESS_LOCAL_WRITE;
    mra.dmah = theirs;
    errno = 0;
    struct ibv_mr* mr = ibv_reg_mr_ex(pd, &mra);
    CHECK(mr == NULL && errno == ENOENT,
          "ibv_reg_mr_ex with another context's DMA handle: errno %d (ENOENT)", errno);
    if (mr) ibv_dereg_mr(mr);
    CHECK(ibv_dealloc_dmah(theirs) == 0, "that handle is unused: ibv_dealloc_dmah");
  }
  CHECK(ibv_close_device(other) == 0, "the second context closed");
}

/* mlx5dv_is_supported and mlx5dv_query_device, as libmlx5 answers them for its own devices
 * (providers/mlx5/mlx5.c): version 0, the CQE format flag, and of the comp_mask bits asked for
 * only those answered stay set. The software ConnectX has CQE version 1, BlueFlame and no LAG. */
static void check_dv_query(struct ibv_device* device, struct ibv_context* ctx) {
  CHECK(mlx5dv_is_supported(device), "mlx5dv_is_supported(the onchip device)");
  const uint64_t answered_always =
      MLX5DV_CONTEXT_MASK_CQE_COMPRESION | MLX5DV_CONTEXT_MASK_SWP |
      MLX5DV_CONTEXT_MASK_STRIDING_RQ | MLX5DV_CONTEXT_MASK_TUNNEL_OFFLOADS |
      MLX5DV_CONTEXT_MASK_DYN_BFREGS | MLX5DV_CONTEXT_MASK_FLOW_ACTION_FLAGS |
      MLX5DV_CONTEXT_MASK_DC_ODP_CAPS | MLX5DV_CONTEXT_MASK_SIGNATURE_OFFLOAD |
      MLX5DV_CONTEXT_MASK_DCI_STREAMS | MLX5DV_CONTEXT_MASK_WR_MEMCPY_LENGTH |
      MLX5DV_CONTEXT_MASK_CRYPTO_OFFLOAD;
  struct mlx5dv_context dv;
  memset(&dv, 0xa5, sizeof(dv));
  dv.comp_mask = answered_always | MLX5DV_CONTEXT_MASK_CLOCK_INFO_UPDATE |
                 MLX5DV_CONTEXT_MASK_HCA_CORE_CLOCK | MLX5DV_CONTEXT_MASK_NUM_LAG_PORTS |
                 (1ull << 40);
  int rc = mlx5dv_query_device(ctx, &dv);
  CHECK(rc == 0, "mlx5dv_query_device: rc=%d", rc);
  CHECK(dv.version == 0, "version %u (0)", dv.version);
  CHECK(dv.flags == MLX5DV_CONTEXT_FLAGS_CQE_V1, "flags 0x%llx (CQE_V1 only)",
        (unsigned long long)dv.flags);
  CHECK(dv.comp_mask == answered_always,
        "comp_mask 0x%llx: the answered bits only (no clock page, core clock mapping, LAG "
        "ports or unknown bit)", (unsigned long long)dv.comp_mask);
  CHECK(dv.max_dynamic_bfregs > 0, "dynamic bfregs: %u (BlueFlame)", dv.max_dynamic_bfregs);
  CHECK(dv.cqe_comp_caps.max_num == 0 && dv.cqe_comp_caps.supported_format == 0 &&
            dv.striding_rq_caps.supported_qpts == 0 && dv.tunnel_offloads_caps == 0 &&
            dv.sig_caps.block_prot == 0 && dv.crypto_caps.flags == 0 &&
            dv.max_wr_memcpy_length == 0,
        "no CQE compression, striding RQ, tunnel, signature, crypto or memcpy offloads");
  CHECK(dv.num_lag_ports == 0xa5, "num_lag_ports not answered: left as it was");

  memset(&dv, 0, sizeof(dv));
  rc = mlx5dv_query_device(ctx, &dv);
  CHECK(rc == 0 && dv.comp_mask == 0 && dv.flags == MLX5DV_CONTEXT_FLAGS_CQE_V1,
        "comp_mask 0 asks nothing: rc=%d comp_mask 0x%llx", rc, (unsigned long long)dv.comp_mask);
  CHECK(mlx5dv_query_device(ctx, NULL) == EINVAL, "mlx5dv_query_device(NULL attrs): EINVAL");
  CHECK(mlx5dv_query_device(NULL, &dv) == EINVAL, "mlx5dv_query_device(NULL context): EINVAL");
}

/* A context of some other provider (here: a device onchip never listed) is not onchip's. */
static void check_foreign(void) {
  static unsigned char other_device[4096];
  struct ibv_context other;
  memset(&other, 0, sizeof(other));
  other.device = (struct ibv_device*)other_device;
  struct ibv_dmah_init_attr attr = {.comp_mask = IBV_DMAH_INIT_ATTR_MASK_PH};
  errno = 0;
  struct ibv_dmah* d = ibv_alloc_dmah(&other, &attr);
  CHECK(d == NULL && errno == EOPNOTSUPP, "ibv_alloc_dmah on another provider's context: errno "
        "%d (EOPNOTSUPP)", errno);
  struct ibv_alloc_dm_attr dm_attr = {.length = 4096};
  struct mlx5dv_alloc_dm_attr dv = {.type = MLX5DV_DM_TYPE_MEMIC};
  errno = 0;
  struct ibv_dm* dm = mlx5dv_alloc_dm(&other, &dm_attr, &dv);
  CHECK(dm == NULL && errno == EOPNOTSUPP, "mlx5dv_alloc_dm on another provider's context: "
        "errno %d (EOPNOTSUPP)", errno);
  struct ibv_dm other_dm;
  memset(&other_dm, 0, sizeof(other_dm));
  other_dm.context = &other;
  struct mlx5dv_dm out;
  struct mlx5dv_obj obj = {.dm = {.in = &other_dm, .out = &out}};
  int rc = mlx5dv_init_obj(&obj, MLX5DV_OBJ_DM);
  CHECK(rc == EOPNOTSUPP, "mlx5dv_init_obj on another provider's DM: rc=%d (EOPNOTSUPP)", rc);
  CHECK(!mlx5dv_is_supported(other.device), "mlx5dv_is_supported(another provider's device): 0");
  struct mlx5dv_context dv_ctx = {.comp_mask = 0};
  rc = mlx5dv_query_device(&other, &dv_ctx);
  CHECK(rc == EOPNOTSUPP, "mlx5dv_query_device on another provider's context: rc=%d "
        "(EOPNOTSUPP)", rc);
}

int main(void) {
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
    check_dmah(ctx, pd);
    check_dmah_of_another_context(list[0], pd);
    CHECK(ibv_dealloc_pd(pd) == 0, "ibv_dealloc_pd once nothing uses it");
  }
  check_dv_dm(ctx);
  check_dv_query(list[0], ctx);
  check_foreign();
  CHECK(ibv_close_device(ctx) == 0, "ibv_close_device");
  ibv_free_device_list(list);
  return check_summary();
}
