// mlx5 command opcodes, op_mods, capability types, mkey access modes and object types, with the
// PRM / mlx5_ifc.h names (MLX5_CMD_OP_ALLOC_MEMIC is prm::ALLOC_MEMIC here).
#pragma once

#include <cstdint>

namespace onchip::prm {

enum Opcode : uint16_t {
  QUERY_HCA_CAP = 0x100,
  QUERY_ADAPTER = 0x101,
  INIT_HCA = 0x102,
  TEARDOWN_HCA = 0x103,
  ENABLE_HCA = 0x104,
  DISABLE_HCA = 0x105,
  QUERY_PAGES = 0x107,
  MANAGE_PAGES = 0x108,
  SET_HCA_CAP = 0x109,
  QUERY_ISSI = 0x10a,
  SET_ISSI = 0x10b,
  SET_DRIVER_VERSION = 0x10d,
  CREATE_MKEY = 0x200,
  QUERY_MKEY = 0x201,
  DESTROY_MKEY = 0x202,
  QUERY_SPECIAL_CONTEXTS = 0x203,
  ALLOC_MEMIC = 0x205,
  DEALLOC_MEMIC = 0x206,
  MODIFY_MEMIC = 0x207,
  CREATE_EQ = 0x301,
  DESTROY_EQ = 0x302,
  QUERY_EQ = 0x303,
  CREATE_CQ = 0x400,
  DESTROY_CQ = 0x401,
  QUERY_CQ = 0x402,
  MODIFY_CQ = 0x403,
  CREATE_QP = 0x500,
  DESTROY_QP = 0x501,
  RST2INIT_QP = 0x502,
  INIT2RTR_QP = 0x503,
  RTR2RTS_QP = 0x504,
  RTS2RTS_QP = 0x505,
  SQERR2RTS_QP = 0x506,
  QP_2ERR = 0x507,
  QP_2RST = 0x50a,
  QUERY_QP = 0x50b,
  SQD_RTS_QP = 0x50c,
  INIT2INIT_QP = 0x50e,
  CREATE_SRQ = 0x700,
  DESTROY_SRQ = 0x701,
  QUERY_SRQ = 0x702,
  ARM_RQ = 0x703,
  CREATE_XRC_SRQ = 0x705,
  DESTROY_XRC_SRQ = 0x706,
  QUERY_XRC_SRQ = 0x707,
  ARM_XRC_SRQ = 0x708,
  QUERY_VPORT_STATE = 0x750,
  QUERY_ROCE_ADDRESS = 0x760,
  QUERY_HCA_VPORT_CONTEXT = 0x762,
  QUERY_HCA_VPORT_GID = 0x764,
  ALLOC_PD = 0x800,
  DEALLOC_PD = 0x801,
  ALLOC_UAR = 0x802,
  DEALLOC_UAR = 0x803,
  ACCESS_REG = 0x805,
  NOP = 0x80d,
  ALLOC_XRCD = 0x80e,
  DEALLOC_XRCD = 0x80f,
  ALLOC_TRANSPORT_DOMAIN = 0x816,
  DEALLOC_TRANSPORT_DOMAIN = 0x817,
  CREATE_TIR = 0x900,
  MODIFY_TIR = 0x901,
  DESTROY_TIR = 0x902,
  QUERY_TIR = 0x903,
  CREATE_SQ = 0x904,
  MODIFY_SQ = 0x905,
  DESTROY_SQ = 0x906,
  QUERY_SQ = 0x907,
  CREATE_RQ = 0x908,
  MODIFY_RQ = 0x909,
  DESTROY_RQ = 0x90a,
  QUERY_RQ = 0x90b,
  CREATE_TIS = 0x912,
  MODIFY_TIS = 0x913,
  DESTROY_TIS = 0x914,
  QUERY_TIS = 0x915,
  CREATE_RQT = 0x916,
  CREATE_GENERAL_OBJECT = 0xa00,
  MODIFY_GENERAL_OBJECT = 0xa01,
  QUERY_GENERAL_OBJECT = 0xa02,
  DESTROY_GENERAL_OBJECT = 0xa03,
};

// QUERY_HCA_CAP op_mod = (cap_type << 1) | mode; SET_HCA_CAP op_mod = cap_type << 1.
enum CapType : uint16_t {
  CAP_GENERAL = 0x0,
  CAP_ETHERNET_OFFLOADS = 0x1,
  CAP_ODP = 0x2,
  CAP_ATOMIC = 0x3,
  CAP_ROCE = 0x4,
  CAP_FLOW_TABLE = 0x7,
  CAP_DEV_MEM = 0xf,
  CAP_GENERAL_2 = 0x20,
};
enum CapMode : uint16_t { HCA_CAP_OPMOD_GET_MAX = 0, HCA_CAP_OPMOD_GET_CUR = 1 };
constexpr uint16_t QueryCapOpMod(CapType type, CapMode mode) {
  return static_cast<uint16_t>((type << 1) | mode);
}
constexpr uint16_t SetCapOpMod(CapType type) { return static_cast<uint16_t>(type << 1); }

enum QueryPagesOpMod : uint16_t { BOOT_PAGES = 1, INIT_PAGES = 2, REGULAR_PAGES = 3 };
enum ManagePagesOpMod : uint16_t { PAGES_CANT_GIVE = 0, PAGES_GIVE = 1, PAGES_TAKE = 2 };
enum ModifyMemicOpMod : uint16_t { MODIFY_MEMIC_OP_MOD_ALLOC = 0, MODIFY_MEMIC_OP_MOD_DEALLOC = 1 };
enum AccessRegOpMod : uint16_t { ACCESS_REG_WRITE = 0, ACCESS_REG_READ = 1 };
enum TeardownProfile : uint16_t {
  TEARDOWN_HCA_GRACEFUL_CLOSE = 0,
  TEARDOWN_HCA_FORCE_CLOSE = 1,
  TEARDOWN_HCA_PREPARE_FAST_TEARDOWN = 2,
};

// Register ids for ACCESS_REG.
enum RegisterId : uint16_t { REG_HOST_ENDIANNESS = 0x7004 };

// mkc access mode: access_mode_4_2 << 2 | access_mode_1_0.
enum MkeyAccessMode : uint8_t {
  MKC_ACCESS_MODE_PA = 0x0,
  MKC_ACCESS_MODE_MTT = 0x1,
  MKC_ACCESS_MODE_KLMS = 0x2,
  MKC_ACCESS_MODE_KSM = 0x3,
  MKC_ACCESS_MODE_SW_ICM = 0x4,
  MKC_ACCESS_MODE_MEMIC = 0x5,
};

// General object types (CREATE_GENERAL_OBJECT obj_type; bit N of cmd_hca_cap.general_obj_types).
enum GeneralObjectType : uint16_t { GENERAL_OBJECT_TYPES_SW_ICM = 0x0008 };

// The SW ICM areas of device_mem_cap, numbered as the kernel's enum mlx5_sw_icm_type. A sw_icm
// object carries no type: its sw_icm_start_addr says which area it lies in.
enum SwIcmType : uint8_t {
  SW_ICM_TYPE_STEERING = 0,
  SW_ICM_TYPE_HEADER_MODIFY = 1,
  SW_ICM_TYPE_HEADER_MODIFY_PATTERN = 2,
  SW_ICM_TYPE_SW_ENCAP = 3,
};

// QP states (qpc.state).
enum QpState : uint8_t {
  QP_STATE_RST = 0x0,
  QP_STATE_INIT = 0x1,
  QP_STATE_RTR = 0x2,
  QP_STATE_RTS = 0x3,
  QP_STATE_SQER = 0x4,
  QP_STATE_SQD = 0x5,
  QP_STATE_ERR = 0x6,
};

// QP transport service types (qpc.st).
enum QpServiceType : uint8_t {
  QP_ST_RC = 0x0,
  QP_ST_UC = 0x1,
  QP_ST_UD = 0x2,
  QP_ST_XRC = 0x3,
  QP_ST_MLX = 0x4,
  QP_ST_DCI = 0x5,
  QP_ST_QP0 = 0x7,
  QP_ST_QP1 = 0x8,
  QP_ST_RAW_ETHERTYPE = 0x9,
  QP_ST_RAW_IPV6 = 0xa,
  QP_ST_SNIFFER = 0xb,
  QP_ST_REG_UMR = 0xc,
};

// Where a QP's receives come from (qpc.rq_type).
enum QpRqType : uint8_t {
  NON_ZERO_RQ = 0x0,
  SRQ_RQ = 0x1,
  CRQ_RQ = 0x2,
  ZERO_LEN_RQ = 0x3,
};

// qpc.pm_state (path migration).
enum QpPmState : uint8_t { QP_PM_ARMED = 0x0, QP_PM_REARM = 0x1, QP_PM_MIGRATED = 0x3 };

// The optional fields a QP transition takes (*_qp_in.opt_param_mask).
enum QpOptParam : uint32_t {
  QP_OPTPAR_ALT_ADDR_PATH = 1u << 0,
  QP_OPTPAR_RRE = 1u << 1,
  QP_OPTPAR_RAE = 1u << 2,
  QP_OPTPAR_RWE = 1u << 3,
  QP_OPTPAR_PKEY_INDEX = 1u << 4,
  QP_OPTPAR_Q_KEY = 1u << 5,
  QP_OPTPAR_RNR_TIMEOUT = 1u << 6,
  QP_OPTPAR_PRIMARY_ADDR_PATH = 1u << 7,
  QP_OPTPAR_SRA_MAX = 1u << 8,
  QP_OPTPAR_RRA_MAX = 1u << 9,
  QP_OPTPAR_PM_STATE = 1u << 10,
  QP_OPTPAR_RETRY_COUNT = 1u << 12,
  QP_OPTPAR_RNR_RETRY = 1u << 13,
  QP_OPTPAR_ACK_TIMEOUT = 1u << 14,
  QP_OPTPAR_LAG_TX_AFF = 1u << 15,
  QP_OPTPAR_PRI_PORT = 1u << 16,
  QP_OPTPAR_RMPN_XRQN = 1u << 18,
  QP_OPTPAR_CQN_RCV = 1u << 19,
  QP_OPTPAR_DC_HS = 1u << 20,
  QP_OPTPAR_DC_KEY = 1u << 21,
  QP_OPTPAR_COUNTER_SET_ID = 1u << 25,
};

// SRQ states (srqc.state).
// Ethernet work queues (the SQ and RQ objects a raw packet QP is built of): sqc.state, rqc.state
// and the current state in MODIFY_SQ / MODIFY_RQ (sq_state, rq_state); wq.wq_type; rqc.mem_rq_type;
// tirc.disp_type.
enum SqcState : uint8_t { SQC_STATE_RST = 0x0, SQC_STATE_RDY = 0x1, SQC_STATE_ERR = 0x3 };
enum RqcState : uint8_t { RQC_STATE_RST = 0x0, RQC_STATE_RDY = 0x1, RQC_STATE_ERR = 0x3 };
enum WqType : uint8_t { WQ_TYPE_LINKED_LIST = 0x0, WQ_TYPE_CYCLIC = 0x1 };
enum RqMemType : uint8_t { RQC_MEM_RQ_TYPE_MEMORY_RQ_INLINE = 0x0, RQC_MEM_RQ_TYPE_MEMORY_RQ_RMP = 0x1 };
enum TirDispType : uint8_t { TIRC_DISP_TYPE_DIRECT = 0x0, TIRC_DISP_TYPE_INDIRECT = 0x1 };

enum SrqState : uint8_t { SRQ_STATE_GOOD = 0x0, SRQ_STATE_ERROR = 0x1 };

// ARM_RQ op_mod: which kind of receive queue srq_number names.
enum ArmRqOpMod : uint16_t { ARM_RQ_IN_OP_MOD_SRQ = 0x1 };
// ARM_XRC_SRQ op_mod (MLX5_ARM_XRC_SRQ_IN_OP_MOD_XRC_SRQ).
enum ArmXrcSrqOpMod : uint16_t { ARM_XRC_SRQ_IN_OP_MOD_XRC_SRQ = 0x1 };

// Atomic capability bits (atomic_caps.atomic_operations, atomic_size_qp).
enum AtomicOperations : uint16_t {
  ATOMIC_OPS_CMP_SWAP = 1u << 0,
  ATOMIC_OPS_FETCH_ADD = 1u << 1,
  ATOMIC_OPS_EXTENDED_CMP_SWAP = 1u << 2,
  ATOMIC_OPS_EXTENDED_FETCH_ADD = 1u << 3,
};
enum AtomicSizeQp : uint16_t { ATOMIC_SIZE_QP_8BYTES = 1u << 3 };

// EQ and CQ states (eqc.st, cqc.st).
enum QueueArmState : uint8_t {
  CQ_STATE_SOLICITED_ARMED = 0x6,
  EQ_CQ_STATE_ARMED = 0x9,
  EQ_CQ_STATE_FIRED = 0xa,
  EQ_STATE_ALWAYS_ARMED = 0xb,
};

// MODIFY_CQ: op_mod 0 modifies the fields modify_field_select names, op_mod 1 resizes.
enum ModifyCqOpMod : uint16_t { CQ_OPMOD_MODIFY = 0, CQ_OPMOD_RESIZE = 1 };
enum ModifyCqFieldSelect : uint32_t {
  CQ_MODIFY_PERIOD = 1u << 0,
  CQ_MODIFY_COUNT = 1u << 1,
  CQ_MODIFY_OVERRUN = 1u << 2,
  CQ_MODIFY_EQN = 1u << 3,
  CQ_MODIFY_PERIOD_MODE = 1u << 4,
};
// MODIFY_CQ op_mod 1: the context fields the resize takes (resize_field_select).
enum ResizeCqFieldSelect : uint32_t {
  MLX5_MODIFY_CQ_MASK_LOG_SIZE = 1u << 0,
  MLX5_MODIFY_CQ_MASK_PG_OFFSET = 1u << 1,
  MLX5_MODIFY_CQ_MASK_PG_SIZE = 1u << 2,
};

// A RoCE address table entry (roce_addr_layout), as mlx5_ifc.h / mlx5_core's gid.c name them:
// roce_version says RoCE v1 or v2, roce_l3_type the v2 entry's IP version.
enum RoceVersion : uint8_t { MLX5_ROCE_VERSION_1 = 0, MLX5_ROCE_VERSION_2 = 2 };
enum RoceL3Type : uint8_t { MLX5_ROCE_L3_TYPE_IPV4 = 0, MLX5_ROCE_L3_TYPE_IPV6 = 1 };

// The command queue entry's transport type (cmd_queue_entry.type).
inline constexpr uint8_t PCI_CMD_XPORT = 0x7;
// Command interface revision the driver and the device speak (initial_seg.cmd_interface_rev).
inline constexpr uint16_t CMD_IF_REV = 5;
// Adapter page size: MANAGE_PAGES pages, UAR pages, mkey log_page_size base.
inline constexpr uint64_t ADAPTER_PAGE_SIZE = 4096;

}  // namespace onchip::prm
