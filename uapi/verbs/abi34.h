// libibverbs' private provider ABI, version 34 (rdma-core v40..v56; Debian 12 ships 44.0).
//
// Debian installs no <infiniband/driver.h>, so onchip declares what a provider needs itself: the
// structs libibverbs and a provider share, and the five IBVERBS_PRIVATE_34 functions a provider
// without a kernel calls. Everything here is layout: member order, types and sizes must equal the
// library's, and the static_asserts at the bottom pin the offsets the library reads (rdma-core
// libibverbs/driver.h, checked against the installed libibverbs.so.1). The tier1 test
// in tests/device/verbs pins the behaviour.
//
// Ownership contract with libibverbs:
//   - alloc_device returns a verbs_device the provider allocated; libibverbs fills ops, refcount,
//     names and paths, takes ownership of the verbs_sysfs_dev, and calls uninit_device when the
//     last reference goes.
//   - alloc_context receives cmd_fd and owns it from then on (also on failure).
//   - a context comes from verbs_init_and_alloc_context (calloc) and goes back through
//     verbs_uninit_context (closes cmd_fd and async_fd) followed by free().
#pragma once

#include <infiniband/verbs.h>
#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <ctime>

namespace onchip::ibverbs_abi {

// ccan's list_node: the library threads its own lists through these.
struct ListNode {
  ListNode* next;
  ListNode* prev;
};

enum MatchKind : uint8_t {
  kMatchSentinel = 0,
  kMatchPci = 1,
  kMatchModalias = 2,
  kMatchDriverId = 3,
};

// One entry of a provider's match table; the table ends with an all-zero entry.
struct verbs_match_ent {
  void* driver_data;
  union {
    const char* modalias;  // fnmatch pattern against device/modalias (kMatchModalias)
    uint64_t driver_id;
  } u;
  uint16_t vendor;
  uint16_t device;
  uint8_t kind;
};

inline constexpr std::size_t kSysfsNameMax = 64;   // IBV_SYSFS_NAME_MAX
inline constexpr std::size_t kSysfsPathMax = 256;  // IBV_SYSFS_PATH_MAX

// What libibverbs learnt about one uverbs device from sysfs (or netlink).
struct verbs_sysfs_dev {
  ListNode entry;
  void* provider_data;
  const verbs_match_ent* match;  // the table entry that matched
  unsigned int flags;
  char sysfs_name[kSysfsNameMax];  // "uverbs0"
  dev_t sysfs_cdev;
  char ibdev_name[kSysfsNameMax];  // "onchip_0"
  char ibdev_path[kSysfsPathMax];  // "$SYSFS_PATH/class/infiniband/onchip_0"
  char modalias[512];
  uint64_t node_guid;
  uint32_t driver_id;
  ibv_node_type node_type;
  int ibdev_idx;
  uint32_t num_ports;
  uint32_t abi_ver;
  timespec time_created;
};

struct verbs_device;

struct verbs_device_ops {
  const char* name;
  uint32_t match_min_abi_version;
  uint32_t match_max_abi_version;
  const verbs_match_ent* match_table;
  const verbs_device_ops** static_providers;
  bool (*match_device)(verbs_sysfs_dev* sysfs_dev);
  verbs_context* (*alloc_context)(ibv_device* device, int cmd_fd, void* private_data);
  verbs_context* (*import_context)(ibv_device* device, int cmd_fd);
  verbs_device* (*alloc_device)(verbs_sysfs_dev* sysfs_dev);
  void (*uninit_device)(verbs_device* device);
};

struct verbs_device {
  ibv_device device;  // first: libibverbs converts ibv_device* back by address
  const verbs_device_ops* ops;
  int refcount;  // C11 atomic_int in the library; only libibverbs touches it
  ListNode entry;
  verbs_sysfs_dev* sysfs;
  uint64_t core_support;  // bit 0: optional MR access flags (relaxed ordering) pass ibv_reg_mr
};

inline constexpr uint64_t kCoreSupportOptionalMrAccess = 1u << 0;

// Every ibv_mr a provider returns is one of these: ibv_dereg_mr reads mr_type and access behind
// the ibv_mr before it calls dereg_mr.
enum ibv_mr_type : int {
  IBV_MR_TYPE_MR = 0,
  IBV_MR_TYPE_NULL_MR = 1,
  IBV_MR_TYPE_IMPORTED_MR = 2,
  IBV_MR_TYPE_DMABUF_MR = 3,
};

struct verbs_mr {
  ibv_mr mr;  // `ibv_mr` in the library
  ibv_mr_type mr_type;
  int access;
};

struct verbs_dm {
  ibv_dm dm;
  uint32_t handle;
};

// A provider's QP, CQ and SRQ begin with these: libibverbs reads the extended structs through
// the plain ones (ibv_qp_to_qp_ex, ibv_cq_ex_to_cq) and xrcd/srq_type behind them.
// libibverbs' verbs_xrcd: an ibv_xrcd the library reads, then its comp_mask and handle.
struct verbs_xrcd {
  ibv_xrcd xrcd;
  uint32_t comp_mask;
  uint32_t handle;
};
struct verbs_qp {
  union {
    ibv_qp qp;
    ibv_qp_ex qp_ex;
  };
  uint32_t comp_mask;
  verbs_xrcd* xrcd;
};

struct verbs_cq {
  union {
    ibv_cq cq;
    ibv_cq_ex cq_ex;
  };
};

struct verbs_srq {
  ibv_srq srq;
  ibv_srq_type srq_type;
  verbs_xrcd* xrcd;
  ibv_cq* cq;
  uint32_t srq_num;
};

// The provider's operations, one pointer per verb, sorted by name as in the library. A null
// entry keeps libibverbs' default, which fails with EOPNOTSUPP.
struct verbs_context_ops {
  int (*advise_mr)(ibv_pd* pd, ibv_advise_mr_advice advice, uint32_t flags, ibv_sge* sg_list,
                   uint32_t num_sges);
  ibv_dm* (*alloc_dm)(ibv_context* context, ibv_alloc_dm_attr* attr);
  ibv_mw* (*alloc_mw)(ibv_pd* pd, ibv_mw_type type);
  ibv_mr* (*alloc_null_mr)(ibv_pd* pd);
  ibv_pd* (*alloc_parent_domain)(ibv_context* context, ibv_parent_domain_init_attr* attr);
  ibv_pd* (*alloc_pd)(ibv_context* context);
  ibv_td* (*alloc_td)(ibv_context* context, ibv_td_init_attr* init_attr);
  void (*async_event)(ibv_context* context, ibv_async_event* event);
  int (*attach_counters_point_flow)(ibv_counters* counters, ibv_counter_attach_attr* attr,
                                    ibv_flow* flow);
  int (*attach_mcast)(ibv_qp* qp, const ibv_gid* gid, uint16_t lid);
  int (*bind_mw)(ibv_qp* qp, ibv_mw* mw, ibv_mw_bind* mw_bind);
  int (*close_xrcd)(ibv_xrcd* xrcd);
  void (*cq_event)(ibv_cq* cq);
  ibv_ah* (*create_ah)(ibv_pd* pd, ibv_ah_attr* attr);
  ibv_counters* (*create_counters)(ibv_context* context, ibv_counters_init_attr* init_attr);
  ibv_cq* (*create_cq)(ibv_context* context, int cqe, ibv_comp_channel* channel, int comp_vector);
  ibv_cq_ex* (*create_cq_ex)(ibv_context* context, ibv_cq_init_attr_ex* init_attr);
  ibv_flow* (*create_flow)(ibv_qp* qp, ibv_flow_attr* flow_attr);
  ibv_flow_action* (*create_flow_action_esp)(ibv_context* context, ibv_flow_action_esp_attr* attr);
  ibv_qp* (*create_qp)(ibv_pd* pd, ibv_qp_init_attr* attr);
  ibv_qp* (*create_qp_ex)(ibv_context* context, ibv_qp_init_attr_ex* qp_init_attr_ex);
  ibv_rwq_ind_table* (*create_rwq_ind_table)(ibv_context* context,
                                             ibv_rwq_ind_table_init_attr* init_attr);
  ibv_srq* (*create_srq)(ibv_pd* pd, ibv_srq_init_attr* srq_init_attr);
  ibv_srq* (*create_srq_ex)(ibv_context* context, ibv_srq_init_attr_ex* srq_init_attr_ex);
  ibv_wq* (*create_wq)(ibv_context* context, ibv_wq_init_attr* wq_init_attr);
  int (*dealloc_mw)(ibv_mw* mw);
  int (*dealloc_pd)(ibv_pd* pd);
  int (*dealloc_td)(ibv_td* td);
  int (*dereg_mr)(verbs_mr* vmr);
  int (*destroy_ah)(ibv_ah* ah);
  int (*destroy_counters)(ibv_counters* counters);
  int (*destroy_cq)(ibv_cq* cq);
  int (*destroy_flow)(ibv_flow* flow);
  int (*destroy_flow_action)(ibv_flow_action* action);
  int (*destroy_qp)(ibv_qp* qp);
  int (*destroy_rwq_ind_table)(ibv_rwq_ind_table* rwq_ind_table);
  int (*destroy_srq)(ibv_srq* srq);
  int (*destroy_wq)(ibv_wq* wq);
  int (*detach_mcast)(ibv_qp* qp, const ibv_gid* gid, uint16_t lid);
  void (*free_context)(ibv_context* context);
  int (*free_dm)(ibv_dm* dm);
  int (*get_srq_num)(ibv_srq* srq, uint32_t* srq_num);
  ibv_dm* (*import_dm)(ibv_context* context, uint32_t dm_handle);
  ibv_mr* (*import_mr)(ibv_pd* pd, uint32_t mr_handle);
  ibv_pd* (*import_pd)(ibv_context* context, uint32_t pd_handle);
  int (*modify_cq)(ibv_cq* cq, ibv_modify_cq_attr* attr);
  int (*modify_flow_action_esp)(ibv_flow_action* action, ibv_flow_action_esp_attr* attr);
  int (*modify_qp)(ibv_qp* qp, ibv_qp_attr* attr, int attr_mask);
  int (*modify_qp_rate_limit)(ibv_qp* qp, ibv_qp_rate_limit_attr* attr);
  int (*modify_srq)(ibv_srq* srq, ibv_srq_attr* srq_attr, int srq_attr_mask);
  int (*modify_wq)(ibv_wq* wq, ibv_wq_attr* wq_attr);
  ibv_qp* (*open_qp)(ibv_context* context, ibv_qp_open_attr* attr);
  ibv_xrcd* (*open_xrcd)(ibv_context* context, ibv_xrcd_init_attr* xrcd_init_attr);
  int (*poll_cq)(ibv_cq* cq, int num_entries, ibv_wc* wc);
  int (*post_recv)(ibv_qp* qp, ibv_recv_wr* wr, ibv_recv_wr** bad_wr);
  int (*post_send)(ibv_qp* qp, ibv_send_wr* wr, ibv_send_wr** bad_wr);
  int (*post_srq_ops)(ibv_srq* srq, ibv_ops_wr* op, ibv_ops_wr** bad_op);
  int (*post_srq_recv)(ibv_srq* srq, ibv_recv_wr* recv_wr, ibv_recv_wr** bad_recv_wr);
  // ibv_query_device passes attr_size = sizeof(ibv_device_attr): write no byte past attr_size.
  int (*query_device_ex)(ibv_context* context, const ibv_query_device_ex_input* input,
                         ibv_device_attr_ex* attr, size_t attr_size);
  int (*query_ece)(ibv_qp* qp, ibv_ece* ece);
  int (*query_port)(ibv_context* context, uint8_t port_num, ibv_port_attr* port_attr);
  int (*query_qp)(ibv_qp* qp, ibv_qp_attr* attr, int attr_mask, ibv_qp_init_attr* init_attr);
  int (*query_qp_data_in_order)(ibv_qp* qp, ibv_wr_opcode op, uint32_t flags);
  int (*query_rt_values)(ibv_context* context, ibv_values_ex* values);
  int (*query_srq)(ibv_srq* srq, ibv_srq_attr* srq_attr);
  int (*read_counters)(ibv_counters* counters, uint64_t* counters_value, uint32_t ncounters,
                       uint32_t flags);
  ibv_mr* (*reg_dm_mr)(ibv_pd* pd, ibv_dm* dm, uint64_t dm_offset, size_t length,
                       unsigned int access);
  ibv_mr* (*reg_dmabuf_mr)(ibv_pd* pd, uint64_t offset, size_t length, uint64_t iova, int fd,
                           int access);
  ibv_mr* (*reg_mr)(ibv_pd* pd, void* addr, size_t length, uint64_t hca_va, int access);
  int (*req_notify_cq)(ibv_cq* cq, int solicited_only);
  int (*rereg_mr)(verbs_mr* vmr, int flags, ibv_pd* pd, void* addr, size_t length, int access);
  int (*resize_cq)(ibv_cq* cq, int cqe);
  int (*set_ece)(ibv_qp* qp, ibv_ece* ece);
  void (*unimport_dm)(ibv_dm* dm);
  void (*unimport_mr)(ibv_mr* mr);
  void (*unimport_pd)(ibv_pd* pd);
};

static_assert(offsetof(verbs_mr, mr_type) == sizeof(ibv_mr));
static_assert(offsetof(verbs_qp, qp) == 0 && offsetof(verbs_qp, qp_ex) == 0 &&
              offsetof(verbs_qp, comp_mask) == sizeof(ibv_qp_ex));
static_assert(offsetof(verbs_cq, cq) == 0 && sizeof(verbs_cq) == sizeof(ibv_cq_ex));
static_assert(offsetof(verbs_srq, srq_type) == sizeof(ibv_srq));

// ---- layout pins (offsets the installed libibverbs.so.1 reads) ----
static_assert(sizeof(verbs_sysfs_dev) == 0x3e0);
static_assert(offsetof(verbs_sysfs_dev, sysfs_name) == 0x24);
static_assert(offsetof(verbs_sysfs_dev, sysfs_cdev) == 0x68);
static_assert(offsetof(verbs_sysfs_dev, ibdev_idx) == 0x3c0);
static_assert(offsetof(verbs_device, ops) == 0x298);
static_assert(offsetof(verbs_device, sysfs) == 0x2b8);
static_assert(offsetof(verbs_device, core_support) == 0x2c0);
static_assert(sizeof(verbs_context_ops) == 76 * sizeof(void*));
static_assert(offsetof(verbs_context_ops, alloc_pd) == 0x028);
static_assert(offsetof(verbs_context_ops, dereg_mr) == 0x0e0);
static_assert(offsetof(verbs_context_ops, free_context) == 0x138);
static_assert(offsetof(verbs_context_ops, import_dm) == 0x150);
static_assert(offsetof(verbs_context_ops, query_device_ex) == 0x1d0);
static_assert(offsetof(verbs_context_ops, query_port) == 0x1e0);
static_assert(offsetof(verbs_context_ops, query_qp_data_in_order) == 0x1f0);
static_assert(offsetof(verbs_context_ops, reg_mr) == 0x220);
static_assert(offsetof(verbs_context_ops, unimport_dm) == 0x248);
static_assert(offsetof(verbs_context_ops, unimport_pd) == 0x258);

}  // namespace onchip::ibverbs_abi

// The IBVERBS_PRIVATE_34 functions onchip's provider calls (exported by libibverbs.so.1).
extern "C" {
void verbs_register_driver_34(const onchip::ibverbs_abi::verbs_device_ops* ops);
// calloc(alloc_size), with the verbs_context at byte `(size_t)context_offset` of it initialised:
// device, cmd_fd, async_fd = -1, default ops (EOPNOTSUPP), and an ioctl probe on cmd_fd. On
// failure returns NULL and closes cmd_fd.
void* _verbs_init_and_alloc_context(ibv_device* device, int cmd_fd, size_t alloc_size,
                                    verbs_context* context_offset, uint32_t driver_id);
// Frees the library's private part and closes cmd_fd and async_fd; the caller then free()s.
void verbs_uninit_context(verbs_context* context);
// Installs every non-null op of `ops`.
void verbs_set_ops(verbs_context* vctx, const onchip::ibverbs_abi::verbs_context_ops* ops);

// Public since IBVERBS_1.1 but declared only in driver.h: keep [base, base + size) out of forked
// children (madvise DONTFORK, reference-counted per page once ibv_fork_init ran; a no-op
// otherwise), and undo it. ibv_reg_mr and ibv_dereg_mr pair them for every plain host MR.
int ibv_dontfork_range(void* base, size_t size);
int ibv_dofork_range(void* base, size_t size);
}
