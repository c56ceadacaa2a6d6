/* uapi/verbs/dmah.h compiled as C, as an application would: the same layouts as from C++ and
 * as upstream rdma-core's libibverbs/verbs.h on x86_64 (LP64). */
#include <stddef.h>

#include "uapi/verbs/dmah.h"

_Static_assert(sizeof(struct ibv_dmah) == 8, "ibv_dmah");
_Static_assert(offsetof(struct ibv_dmah, context) == 0, "ibv_dmah.context");

_Static_assert(sizeof(struct ibv_dmah_init_attr) == 12, "ibv_dmah_init_attr");
_Static_assert(offsetof(struct ibv_dmah_init_attr, comp_mask) == 0, "comp_mask");
_Static_assert(offsetof(struct ibv_dmah_init_attr, cpu_id) == 4, "cpu_id");
_Static_assert(offsetof(struct ibv_dmah_init_attr, ph) == 8, "ph");
_Static_assert(offsetof(struct ibv_dmah_init_attr, tph_mem_type) == 9, "tph_mem_type");

_Static_assert(offsetof(struct ibv_mr_init_attr, length) == 0, "length");
_Static_assert(offsetof(struct ibv_mr_init_attr, access) == 8, "access");
_Static_assert(offsetof(struct ibv_mr_init_attr, comp_mask) == 16, "comp_mask");
_Static_assert(offsetof(struct ibv_mr_init_attr, iova) == 24, "iova");
_Static_assert(offsetof(struct ibv_mr_init_attr, addr) == 32, "addr");
_Static_assert(offsetof(struct ibv_mr_init_attr, fd) == 40, "fd");
_Static_assert(offsetof(struct ibv_mr_init_attr, fd_offset) == 48, "fd_offset");
_Static_assert(offsetof(struct ibv_mr_init_attr, dmah) == 56, "dmah");

/* What the C++ test compares with: the C compiler's view. */
size_t onchip_c_sizeof_mr_init_attr(void);
size_t onchip_c_sizeof_mr_init_attr(void) { return sizeof(struct ibv_mr_init_attr); }
size_t onchip_c_sizeof_dmah_init_attr(void);
size_t onchip_c_sizeof_dmah_init_attr(void) { return sizeof(struct ibv_dmah_init_attr); }
