// The syndromes the software ConnectX (tools/sim) reports, one per failed check, in one table.
//
// A real ConnectX answers a refused command with a PRM status (byte 0 of the output) and a
// firmware-specific 32-bit syndrome (bytes 4..7). The software ConnectX does the same, and its
// syndromes are stable: each names exactly one check, so tests assert the check that fired and
// the driver's error messages can print a name (SyndromeName) instead of a number. Each row also
// gives the status firmware answers with it (SyndromeStatus), so a handler refuses with the
// syndrome alone (tools/sim/outcome.h Refuse). They live in uapi/ because the driver may not
// include tools/sim. Values carry the prefix 0x51 ("sim") in the top byte so they are never
// mistaken for a hardware syndrome; a syndrome injected by a test's fault injector is whatever
// the test chose.
#pragma once

#include <cstdint>

#include "uapi/cmd_status.h"

namespace onchip::sim {

// X(name, value, PRM status) per syndrome; the comment after a row is the check it names.
#define ONCHIP_SIM_SYNDROMES(X) \
  X(OK, 0, OK)                                                                                     \
  /* Any command. */                                                                               \
  X(BAD_OPCODE, 0x51000101, BAD_OP_ERR) /* opcode not implemented */                               \
  X(BAD_OP_MOD, 0x51000102, BAD_PARAM_ERR) /* op_mod not defined for this opcode */                \
  X(INPUT_TOO_SHORT, 0x51000103, BAD_INP_LEN_ERR) /* input shorter than the command's layout */    \
  X(OUTPUT_TOO_SHORT, 0x51000104, BAD_OUTP_LEN_ERR) /* output shorter than the command's layout */ \
  X(RESERVED_NOT_ZERO, 0x51000105, BAD_PARAM_ERR) /* a reserved bit of the input is set */         \
  X(WRONG_STATE, 0x51000107, BAD_SYS_STATE_ERR) /* not allowed in the HCA's current state */       \
  /* HCA bring-up and teardown. */                                                                 \
  X(BAD_FUNCTION, 0x51000201, BAD_PARAM_ERR) /* function_id / embedded_cpu_function not 0 */       \
  X(ISSI_UNSUPPORTED, 0x51000202, BAD_PARAM_ERR) /* SET_ISSI to an ISSI not supported */           \
  X(PAGE_UNALIGNED, 0x51000204, BAD_PARAM_ERR) /* MANAGE_PAGES address not 4 KiB aligned */        \
  X(PAGE_UNMAPPED, 0x51000205, BAD_PARAM_ERR) /* MANAGE_PAGES page not mapped in the IOMMU */      \
  X(PAGE_DUPLICATE, 0x51000206, BAD_PARAM_ERR) /* page given twice */                              \
  X(PAGES_LIMIT, 0x51000207, NO_RES_ERR) /* more pages than the device holds */                    \
  X(PAGES_MISSING, 0x51000208, BAD_SYS_STATE_ERR) /* INIT_HCA before boot + init pages */          \
  X(CAP_TYPE_UNSUPPORTED, 0x51000209, BAD_PARAM_ERR) /* capability type not implemented */         \
  X(CAP_OTHER_FUNCTION, 0x5100020a, BAD_PARAM_ERR) /* other_function / function_id set */          \
  X(CAP_NOT_SETTABLE, 0x5100020b, BAD_PARAM_ERR)                                                   \
  /* SET_HCA_CAP of a type with no writable field */                                               \
  X(CAP_ABOVE_MAX, 0x5100020c, BAD_PARAM_ERR) /* writable field above the MAX capability */        \
  X(REGISTER_UNSUPPORTED, 0x5100020d, BAD_PARAM_ERR) /* ACCESS_REG register_id not implemented */  \
  X(REGISTER_ARGUMENT, 0x5100020e, BAD_PARAM_ERR) /* ACCESS_REG argument not 0 */                  \
  X(TEARDOWN_PROFILE, 0x5100020f, BAD_PARAM_ERR) /* TEARDOWN_HCA profile not supported */          \
  X(TEARDOWN_BUSY, 0x51000210, RES_BUSY) /* graceful TEARDOWN_HCA with objects alive */            \
  X(SW_VHCA_ID_UNSUPPORTED, 0x51000211, BAD_PARAM_ERR) /* INIT_HCA sw_vhca_id without the cap */   \
  X(PORT_NOT_IB, 0x51000212, BAD_PARAM_ERR) /* QUERY_HCA_VPORT_* on an Ethernet port */            \
  X(PORT_NUM, 0x51000213, BAD_PARAM_ERR) /* port_num neither 0 nor 1..num_ports */                 \
  X(VPORT_GID_INDEX, 0x51000214, BAD_PARAM_ERR) /* gid_index not below the port's GID table */     \
  X(PORT_NOT_ETH, 0x51000215, BAD_PARAM_ERR) /* QUERY_ROCE_ADDRESS on an InfiniBand port */        \
  X(ROCE_ADDRESS_INDEX, 0x51000216, BAD_PARAM_ERR) /* roce_address_index not below the table */    \
  /* UAR, PD, transport domain; ownership. */                                                      \
  X(UAR_EXHAUSTED, 0x51000301, NO_RES_ERR)                                                         \
  X(UAR_UNKNOWN, 0x51000302, BAD_RES_ERR) /* no such UAR */                                        \
  X(NOT_OWNER, 0x51000303, BAD_RES_ERR) /* object exists but belongs to another uid */             \
  X(PD_EXHAUSTED, 0x51000304, NO_RES_ERR)                                                          \
  X(PD_UNKNOWN, 0x51000305, BAD_RES_ERR) /* no such PD */                                          \
  X(PD_BUSY, 0x51000306, RES_BUSY) /* DEALLOC_PD with mkeys, QPs or SRQs alive on it */            \
  X(TD_EXHAUSTED, 0x51000307, NO_RES_ERR)                                                          \
  X(TD_UNKNOWN, 0x51000308, BAD_RES_ERR) /* no such transport domain */                            \
  X(TD_BUSY, 0x51000309, RES_BUSY) /* DEALLOC_TRANSPORT_DOMAIN while a TIS or TIR names it */      \
  X(XRCD_EXHAUSTED, 0x5100030a, NO_RES_ERR) /* every XRC domain number (2^log_max_xrcd) in use */  \
  X(XRCD_UNKNOWN, 0x5100030b, BAD_RES_ERR) /* no such XRC domain */                                \
  X(XRCD_BUSY, 0x5100030c, RES_BUSY) /* DEALLOC_XRCD while an XRC SRQ or XRC QP names it */        \
  /* MEMIC. */                                                                                     \
  X(MEMIC_UNSUPPORTED, 0x51000401, BAD_OP_ERR) /* device_mem_cap.memic is 0 */                     \
  X(MEMIC_SIZE, 0x51000402, BAD_PARAM_ERR) /* memic_size 0, not a multiple of 64, too big */       \
  X(MEMIC_ALIGNMENT, 0x51000403, BAD_PARAM_ERR) /* log_memic_addr_alignment above the cap */       \
  X(MEMIC_RANGE, 0x51000404, BAD_PARAM_ERR) /* range outside the MEMIC window or < size */         \
  X(MEMIC_FULL, 0x51000405, NO_RES_ERR) /* no free aligned run inside the range */                 \
  X(MEMIC_UNKNOWN, 0x51000406, BAD_PARAM_ERR) /* DEALLOC_MEMIC of no allocation (addr + size) */   \
  X(MEMIC_BUSY, 0x51000407, RES_BUSY) /* DEALLOC_MEMIC with mkeys alive over it */                 \
  X(MEMIC_OPERATION_UNSUPPORTED, 0x51000408, BAD_PARAM_ERR) /* memic_operations is 0 */            \
  /* General objects, SW ICM. */                                                                   \
  X(OBJECT_TYPE_UNSUPPORTED, 0x51000501, BAD_PARAM_ERR) /* obj_type not in general_obj_types */    \
  X(OBJECT_ID, 0x51000509, BAD_PARAM_ERR) /* obj_id set on CREATE */                               \
  X(SW_ICM_SIZE, 0x51000502, BAD_PARAM_ERR)                                                        \
  /* log_sw_icm_size below the block or above the area */                                          \
  X(SW_ICM_ADDRESS, 0x51000503, BAD_PARAM_ERR) /* start not block aligned or outside every area */ \
  X(SW_ICM_OVERLAP, 0x51000504, BAD_PARAM_ERR) /* range overlaps a live SW ICM object */           \
  X(SW_ICM_UNKNOWN, 0x51000505, BAD_RES_ERR) /* no such object */                                  \
  X(SW_ICM_BUSY, 0x51000506, RES_BUSY) /* DESTROY with mkeys alive over it */                      \
  X(OBJECT_PARAM, 0x51000507, BAD_PARAM_ERR)                                                       \
  /* alias_object, log_obj_range, vhca_tunnel_id, or modify_field_select set */                    \
  X(SW_ICM_EXHAUSTED, 0x51000508, NO_RES_ERR) /* object table full */                              \
  /* Mkeys. */                                                                                     \
  X(MKEY_ACCESS_MODE, 0x51000601, BAD_PARAM_ERR)                                                   \
  /* access mode not PA, MTT, KLMS, SW_ICM, MEMIC */                                               \
  X(MKEY_QPN, 0x51000603, BAD_PARAM_ERR) /* qpn not 0xffffff */                                    \
  X(MKEY_FREE_WITHOUT_UMR, 0x51000604, BAD_PARAM_ERR) /* free = 1 but umr_en = 0 */                \
  X(MKEY_TRANSLATIONS, 0x51000605, BAD_PARAM_ERR) /* translation sizes inconsistent */             \
  X(MKEY_PAGE_SIZE, 0x51000606, BAD_PARAM_ERR) /* log_page_size out of range */                    \
  X(MKEY_MTT_ENTRY, 0x51000607, BAD_PARAM_ERR) /* MTT entry not page aligned */                    \
  X(MKEY_KLM_ENTRY, 0x51000608, BAD_PARAM_ERR) /* KLM names no live mkey */                        \
  X(MKEY_MEMIC_RANGE, 0x51000609, BAD_PARAM_ERR) /* MEMIC mkey outside one live allocation */      \
  X(MKEY_SW_ICM_RANGE, 0x5100060a, BAD_PARAM_ERR) /* SW_ICM mkey outside one live object */        \
  X(MKEY_TPH, 0x5100060b, BAD_PARAM_ERR) /* TPH fields without mkey_pcie_tph, or bad index */      \
  X(MKEY_UNSUPPORTED, 0x5100060c, BAD_PARAM_ERR)                                                   \
  /* bsf_en, umem, data_direct, pg_access, crossing */                                             \
  X(MKEY_EXHAUSTED, 0x5100060d, NO_RES_ERR)                                                        \
  X(MKEY_UNKNOWN, 0x5100060e, BAD_RES_ERR) /* no such mkey */                                      \
  X(MKEY_BUSY, 0x5100060f, RES_BUSY) /* mkey referenced by a live KLM mkey */                      \
  X(MKEY_LENGTH, 0x51000610, BAD_PARAM_ERR) /* len above 2^log_max_mrw_sz, or length64 misuse */   \
  X(MKEY_PA_NOT_PRIVILEGED, 0x51000611, BAD_PARAM_ERR) /* PA mode with a non-zero uid */           \
  X(MKEY_PD_UNKNOWN, 0x51000612, BAD_RES_ERR) /* mkc.pd names no live PD */                        \
  X(MKEY_MTT_UNMAPPED, 0x51000613, BAD_PARAM_ERR)                                                  \
  /* a user context's MTT entry reaches memory not mapped for its uid */                           \
  /* Event queues. */                                                                              \
  X(EQ_SIZE, 0x51000701, BAD_PARAM_ERR) /* log_eq_size above log_max_eq_sz */                      \
  X(EQ_UAR_UNKNOWN, 0x51000702, BAD_RES_ERR) /* eqc.uar_page names no allocated UAR */             \
  X(EQ_INTR, 0x51000703, BAD_PARAM_ERR) /* eqc.intr not below the interrupt vectors modelled */    \
  X(EQ_PAGE_SIZE, 0x51000704, BAD_PARAM_ERR) /* eqc.log_page_size above the largest page */        \
  X(EQ_PAGE_OFFSET, 0x51000705, BAD_PARAM_ERR) /* eqc.page_offset not 0 */                         \
  X(EQ_PAS_COUNT, 0x51000706, BAD_PARAM_ERR)                                                       \
  /* pas[] entries differ from the pages the EQ needs */                                           \
  X(EQ_PAS_ENTRY, 0x51000707, BAD_PARAM_ERR) /* a pas[] entry not aligned to the page size */      \
  X(EQ_PAS_UNMAPPED, 0x51000708, BAD_PARAM_ERR) /* a pas[] page not mapped in the IOMMU */         \
  X(EQ_STATE, 0x51000709, BAD_PARAM_ERR) /* eqc.st not 0, ARMED or ALWAYS_ARMED, or status set */  \
  X(EQ_UNSUPPORTED, 0x5100070a, BAD_PARAM_ERR) /* eqc.ec (event collapse) set */                   \
  X(EQ_EXHAUSTED, 0x5100070b, NO_RES_ERR) /* every EQ number in use */                             \
  X(EQ_UNKNOWN, 0x5100070c, BAD_RES_ERR) /* no such EQ */                                          \
  X(EQ_BUSY, 0x5100070d, RES_BUSY) /* DESTROY_EQ while a CQ reports to it */                       \
  /* Completion queues. */                                                                         \
  X(CQ_CQE_SIZE, 0x51000801, BAD_PARAM_ERR) /* cqc.cqe_sz not 0 (64 B) or 1 (128 B) */             \
  X(CQ_SIZE, 0x51000802, BAD_PARAM_ERR) /* log_cq_size above log_max_cq_sz */                      \
  X(CQ_UAR_UNKNOWN, 0x51000803, BAD_RES_ERR) /* cqc.uar_page names no allocated UAR */             \
  X(CQ_EQ_UNKNOWN, 0x51000804, BAD_RES_ERR) /* cqc.c_eqn_or_apu_element names no live EQ */        \
  X(CQ_PAGE_SIZE, 0x51000805, BAD_PARAM_ERR) /* cqc.log_page_size above the largest page */        \
  X(CQ_PAGE_OFFSET, 0x51000806, BAD_PARAM_ERR) /* cqc.page_offset not 0 */                         \
  X(CQ_DBR_ALIGNMENT, 0x51000807, BAD_PARAM_ERR) /* cqc.dbr_addr not 8-byte aligned */             \
  X(CQ_DBR_UNMAPPED, 0x51000808, BAD_PARAM_ERR) /* the doorbell record not mapped in the IOMMU */  \
  X(CQ_PAS_COUNT, 0x51000809, BAD_PARAM_ERR)                                                       \
  /* pas[] entries differ from the pages the CQ needs */                                           \
  X(CQ_PAS_ENTRY, 0x5100080a, BAD_PARAM_ERR) /* a pas[] entry not aligned to the page size */      \
  X(CQ_PAS_UNMAPPED, 0x5100080b, BAD_PARAM_ERR) /* a pas[] page not mapped in the IOMMU */         \
  X(CQ_STATE, 0x5100080c, BAD_PARAM_ERR) /* cqc.st or cqc.status set at creation */                \
  X(CQ_UNSUPPORTED, 0x5100080d, BAD_PARAM_ERR)                                                     \
  /* compression, APU, UMEM, oi, cc, scqe break, cq_period_mode 1 (caps this device does not */    \
  /* advertise) */                                                                                 \
  X(CQ_EXHAUSTED, 0x5100080e, NO_RES_ERR) /* every CQ number in use */                             \
  X(CQ_UNKNOWN, 0x5100080f, BAD_RES_ERR) /* no such CQ */                                          \
  X(CQ_BUSY, 0x51000810, RES_BUSY) /* DESTROY_CQ while a QP or SRQ uses it */                      \
  X(CQ_RESIZE_UNSUPPORTED, 0x51000811, BAD_PARAM_ERR) /* MODIFY_CQ resize (cq_resize is 0) */      \
  X(CQ_MODIFY_FIELD, 0x51000812, BAD_PARAM_ERR)                                                    \
  /* modify_field_select names a field not modifiable */                                           \
  X(CQ_RESIZE_OUTSTANDING, 0x51000813, BAD_SIZE_OUTS_CQES_ERR)                                     \
  /* resize to fewer CQEs than are unpolled, or the old ring has no slot left for the resize */    \
  /* CQE */                                                                                        \
  X(CQ_RESIZE_STATE, 0x51000814, BAD_PARAM_ERR) /* resize of a CQ in error (overflowed) */         \
  /* Queue pairs. */                                                                               \
  X(QP_ST_UNSUPPORTED, 0x51000901, BAD_PARAM_ERR) /* qpc.st not RC, UC, UD or REG_UMR */           \
  X(QP_UNSUPPORTED, 0x51000902, BAD_PARAM_ERR)                                                     \
  /* a feature not advertised (qpc_ext, input_qpn, UMEM, ECE, offloads, signatures, counter */     \
  /* sets, alternate path, ...) */                                                                 \
  X(QP_STATE, 0x51000903, BAD_PARAM_ERR) /* qpc.state or a device counter set at creation */       \
  X(QP_SQ_SIZE, 0x51000904, BAD_PARAM_ERR) /* log_sq_size above log_max_qp_sz */                   \
  X(QP_RQ_SIZE, 0x51000905, BAD_PARAM_ERR) /* log_rq_size above log_max_qp_sz */                   \
  X(QP_RQ_STRIDE, 0x51000906, BAD_PARAM_ERR) /* receive WQE larger than max_wqe_sz_rq */           \
  X(QP_RQ_TYPE, 0x51000907, BAD_PARAM_ERR)                                                         \
  /* rq_type not regular, SRQ or zero-length, or no ring at all */                                 \
  X(QP_PAGE_SIZE, 0x51000908, BAD_PARAM_ERR) /* qpc.log_page_size above the largest page */        \
  X(QP_PAGE_OFFSET, 0x51000909, BAD_PARAM_ERR) /* qpc.page_offset not 0 */                         \
  X(QP_DBR_ALIGNMENT, 0x5100090a, BAD_PARAM_ERR) /* qpc.dbr_addr not 8-byte aligned */             \
  X(QP_DBR_UNMAPPED, 0x5100090b, BAD_PARAM_ERR) /* the doorbell record not mapped in the IOMMU */  \
  X(QP_PAS_COUNT, 0x5100090c, BAD_PARAM_ERR)                                                       \
  /* pas[] entries differ from the pages the buffer needs */                                       \
  X(QP_PAS_ENTRY, 0x5100090d, BAD_PARAM_ERR) /* a pas[] entry not aligned to the page size */      \
  X(QP_PAS_UNMAPPED, 0x5100090e, BAD_PARAM_ERR) /* a pas[] page not mapped in the IOMMU */         \
  X(QP_PD_UNKNOWN, 0x5100090f, BAD_RES_ERR) /* qpc.pd names no live PD */                          \
  X(QP_CQ_UNKNOWN, 0x51000910, BAD_RES_ERR) /* cqn_snd or cqn_rcv names no live CQ */              \
  X(QP_UAR_UNKNOWN, 0x51000911, BAD_RES_ERR) /* qpc.uar_page names no allocated UAR */             \
  X(QP_SRQ_UNKNOWN, 0x51000912, BAD_RES_ERR)                                                       \
  /* rq_type SRQ and srqn_rmpn_xrqn names no live SRQ */                                           \
  X(QP_EXHAUSTED, 0x51000913, NO_RES_ERR) /* every QP number in use */                             \
  X(QP_UNKNOWN, 0x51000914, BAD_RES_ERR) /* no such QP */                                          \
  X(QP_BAD_STATE, 0x51000915, BAD_QP_STATE_ERR)                                                    \
  /* the QP is not in the state the transition starts from */                                      \
  X(QP_OPT_PARAM, 0x51000916, BAD_PARAM_ERR)                                                       \
  /* opt_param_mask names a field this transition does not take for this transport */              \
  X(QP_PKEY_INDEX, 0x51000917, BAD_PARAM_ERR) /* pkey_index not below the P_Key table size */      \
  X(QP_PORT, 0x51000918, BAD_PARAM_ERR) /* vhca_port_num not 1..num_ports */                       \
  X(QP_MTU, 0x51000919, BAD_PARAM_ERR) /* mtu not 256..4096 (1..5) */                              \
  X(QP_MSG_SIZE, 0x5100091a, BAD_PARAM_ERR) /* log_msg_max above log_max_msg */                    \
  X(QP_GID_INDEX, 0x5100091b, BAD_PARAM_ERR) /* src_addr_index not below the GID table size */     \
  X(QP_RRA_MAX, 0x5100091c, BAD_PARAM_ERR) /* log_rra_max above log_max_ra_res_qp */               \
  X(QP_SRA_MAX, 0x5100091d, BAD_PARAM_ERR) /* log_sra_max above log_max_ra_req_qp */               \
  X(QP_REG_UMR_USER, 0x5100091e, BAD_PARAM_ERR) /* a REG_UMR QP asked for by a uid other than 0 */ \
  X(QP_XRCD_UNKNOWN, 0x5100091f, BAD_RES_ERR) /* qpc.xrcd of an XRC QP names no live XRC domain */ \
  X(QP_SRQ_TYPE, 0x51000920, BAD_RES_ERR)                                                          \
  /* rq_type SRQ names an XRC SRQ (those take no QP's receives) */                                 \
  /* Shared receive queues. */                                                                     \
  X(SRQ_SIZE, 0x51000a01, BAD_PARAM_ERR) /* log_srq_size above log_max_srq_sz */                   \
  X(SRQ_STRIDE, 0x51000a02, BAD_PARAM_ERR) /* WQE stride above max_wqe_sz_rq */                    \
  X(SRQ_PAGE_SIZE, 0x51000a03, BAD_PARAM_ERR) /* srqc.log_page_size above the largest page */      \
  X(SRQ_PAGE_OFFSET, 0x51000a04, BAD_PARAM_ERR) /* srqc.page_offset not 0 */                       \
  X(SRQ_DBR_ALIGNMENT, 0x51000a05, BAD_PARAM_ERR) /* srqc.dbr_addr not 4-byte aligned */           \
  X(SRQ_DBR_UNMAPPED, 0x51000a06, BAD_PARAM_ERR) /* the doorbell record not mapped in the IOMMU */ \
  X(SRQ_PAS_COUNT, 0x51000a07, BAD_PARAM_ERR)                                                      \
  /* pas[] entries differ from the pages the SRQ needs */                                          \
  X(SRQ_PAS_ENTRY, 0x51000a08, BAD_PARAM_ERR) /* a pas[] entry not aligned to the page size */     \
  X(SRQ_PAS_UNMAPPED, 0x51000a09, BAD_PARAM_ERR) /* a pas[] page not mapped in the IOMMU */        \
  X(SRQ_STATE, 0x51000a0a, BAD_PARAM_ERR) /* srqc.state or wqe_cnt set at creation */              \
  X(SRQ_UNSUPPORTED, 0x51000a0b, BAD_PARAM_ERR)                                                    \
  /* wq_signature, cont_srq or rlky (not advertised) */                                            \
  X(SRQ_XRC, 0x51000a0c, BAD_PARAM_ERR)                                                            \
  /* CREATE_SRQ with srqc.xrcd or srqc.cqn set: that is CREATE_XRC_SRQ's SRQ */                    \
  X(SRQ_PD_UNKNOWN, 0x51000a0d, BAD_RES_ERR) /* srqc.pd names no live PD */                        \
  X(SRQ_EXHAUSTED, 0x51000a0e, NO_RES_ERR) /* every SRQ number in use */                           \
  X(SRQ_UNKNOWN, 0x51000a0f, BAD_RES_ERR) /* no such SRQ */                                        \
  X(SRQ_BUSY, 0x51000a10, RES_BUSY) /* DESTROY_SRQ while a QP receives from it */                  \
  X(SRQ_LWM, 0x51000a11, BAD_PARAM_ERR) /* ARM_RQ limit not below the SRQ's WQE count */           \
  X(SRQ_XRCD_UNKNOWN, 0x51000a12, BAD_RES_ERR) /* xrc_srqc.xrcd names no live XRC domain */        \
  X(SRQ_CQ_UNKNOWN, 0x51000a13, BAD_RES_ERR) /* xrc_srqc.cqn names no live CQ */                   \
  X(SRQ_TYPE, 0x51000a14, BAD_RES_ERR)                                                             \
  /* an SRQ command on the other kind (DESTROY_SRQ on an XRC SRQ, QUERY_XRC_SRQ on a plain */      \
  /* one, ...) */                                                                                  \
  /* Ethernet work queues and transport objects (SQ, RQ, TIS, TIR) a raw packet QP is built */     \
  /* of. */                                                                                        \
  X(WQ_UNSUPPORTED, 0x51000b01, BAD_PARAM_ERR)                                                     \
  /* an SQ/RQ feature not advertised (hairpin, umem, striding, signatures, ...) */                 \
  X(WQ_TYPE, 0x51000b02, BAD_PARAM_ERR) /* wq.wq_type not cyclic */                                \
  X(WQ_SIZE, 0x51000b03, BAD_PARAM_ERR) /* wq.log_wq_sz above log_max_wq_sz */                     \
  X(WQ_STRIDE, 0x51000b04, BAD_PARAM_ERR)                                                          \
  /* wq.log_wq_stride not 64 bytes (SQ) or not 16..max_wqe_sz_rq (RQ) */                           \
  X(WQ_PAGE_SIZE, 0x51000b05, BAD_PARAM_ERR) /* wq.log_wq_pg_sz above the largest page */          \
  X(WQ_PAGE_OFFSET, 0x51000b06, BAD_PARAM_ERR) /* wq.page_offset not 0 */                          \
  X(WQ_DBR_ALIGNMENT, 0x51000b07, BAD_PARAM_ERR) /* wq.dbr_addr not 8-byte aligned */              \
  X(WQ_DBR_UNMAPPED, 0x51000b08, BAD_PARAM_ERR) /* the doorbell record not mapped in the IOMMU */  \
  X(WQ_PAS_COUNT, 0x51000b09, BAD_PARAM_ERR)                                                       \
  /* pas[] entries differ from the pages the WQ needs */                                           \
  X(WQ_PAS_ENTRY, 0x51000b0a, BAD_PARAM_ERR) /* a pas[] entry not aligned to the page size */      \
  X(WQ_PAS_UNMAPPED, 0x51000b0b, BAD_PARAM_ERR) /* a pas[] page not mapped in the IOMMU */         \
  X(WQ_PD_UNKNOWN, 0x51000b0c, BAD_RES_ERR) /* wq.pd names no live PD */                           \
  X(WQ_CQ_UNKNOWN, 0x51000b0d, BAD_RES_ERR) /* sqc.cqn / rqc.cqn names no live CQ */               \
  X(WQ_UAR_UNKNOWN, 0x51000b0e, BAD_RES_ERR) /* the SQ's wq.uar_page names no allocated UAR */     \
  X(WQ_STATE, 0x51000b0f, BAD_PARAM_ERR) /* a state or a device counter set at creation */         \
  X(WQ_EXHAUSTED, 0x51000b10, NO_RES_ERR)                                                          \
  /* every queue number in use (SQs and RQs share the QP numbers) */                               \
  X(SQ_TIS, 0x51000b11, BAD_PARAM_ERR) /* sqc.tis_lst_sz not 1 */                                  \
  X(SQ_TIS_UNKNOWN, 0x51000b12, BAD_RES_ERR) /* sqc.tis_num_0 names no live TIS */                 \
  X(SQ_UNKNOWN, 0x51000b13, BAD_RES_ERR) /* no such SQ */                                          \
  X(RQ_UNKNOWN, 0x51000b14, BAD_RES_ERR) /* no such RQ */                                          \
  X(RQ_MEM_TYPE, 0x51000b15, BAD_PARAM_ERR) /* rqc.mem_rq_type not inline (no RMPs) */             \
  X(RQ_BUSY, 0x51000b16, RES_BUSY) /* DESTROY_RQ while a TIR dispatches to it */                   \
  X(WQ_BAD_STATE, 0x51000b17, BAD_RES_STATE_ERR)                                                   \
  /* MODIFY_SQ/RQ current state is not the queue's */                                              \
  X(WQ_TRANSITION, 0x51000b18, BAD_PARAM_ERR)                                                      \
  /* MODIFY_SQ/RQ to a state the current one cannot reach */                                       \
  X(WQ_MODIFY_BITMASK, 0x51000b19, BAD_PARAM_ERR)                                                  \
  /* modify_bitmask names a field not advertised */                                                \
  X(TIS_UNSUPPORTED, 0x51000b1a, BAD_PARAM_ERR)                                                    \
  /* a TIS feature not advertised (TLS, LAG affinity, prio, underlay QP) */                        \
  X(TIS_TD_UNKNOWN, 0x51000b1b, BAD_RES_ERR)                                                       \
  /* tisc.transport_domain names no live transport domain */                                       \
  X(TIS_EXHAUSTED, 0x51000b1c, NO_RES_ERR) /* every TIS number in use */                           \
  X(TIS_UNKNOWN, 0x51000b1d, BAD_RES_ERR) /* no such TIS */                                        \
  X(TIS_BUSY, 0x51000b1e, RES_BUSY) /* DESTROY_TIS while an SQ sends through it */                 \
  X(TIR_UNSUPPORTED, 0x51000b1f, BAD_PARAM_ERR)                                                    \
  /* a TIR feature not advertised (LRO, TLS, hashing, tunneled offload) */                         \
  X(TIR_INDIRECT, 0x51000b20, BAD_PARAM_ERR) /* tirc.disp_type indirect (no RQ tables) */          \
  X(TIR_RQ_UNKNOWN, 0x51000b21, BAD_RES_ERR) /* tirc.inline_rqn names no live RQ */                \
  X(TIR_TD_UNKNOWN, 0x51000b22, BAD_RES_ERR)                                                       \
  /* tirc.transport_domain names no live transport domain */                                       \
  X(TIR_EXHAUSTED, 0x51000b23, NO_RES_ERR) /* every TIR number in use */                           \
  X(TIR_UNKNOWN, 0x51000b24, BAD_RES_ERR) /* no such TIR */

enum class Syndrome : uint32_t {
#define ONCHIP_SIM_SYNDROME_VALUE(name, value, status) name = value,
  ONCHIP_SIM_SYNDROMES(ONCHIP_SIM_SYNDROME_VALUE)
#undef ONCHIP_SIM_SYNDROME_VALUE
};

// The table as values: one row per syndrome, in the list's order.
struct SyndromeRow {
  Syndrome syndrome;
  const char* name;
  prm::CommandStatus status;
};
inline constexpr SyndromeRow kSyndromes[] = {
#define ONCHIP_SIM_SYNDROME_ROW(name, value, status) \
  {Syndrome::name, #name, prm::CommandStatus::status},
    ONCHIP_SIM_SYNDROMES(ONCHIP_SIM_SYNDROME_ROW)
#undef ONCHIP_SIM_SYNDROME_ROW
};

// The row of `s`, or nullptr (a hardware or an injected syndrome).
constexpr const SyndromeRow* FindSyndrome(uint32_t s) {
  for (const SyndromeRow& r : kSyndromes)
    if (static_cast<uint32_t>(r.syndrome) == s) return &r;
  return nullptr;
}

// "MKEY_UNKNOWN", or "UNKNOWN" for a value no row has.
constexpr const char* SyndromeName(uint32_t s) {
  const SyndromeRow* r = FindSyndrome(s);
  return r != nullptr ? r->name : "UNKNOWN";
}

// The PRM command status firmware answers together with `s`.
constexpr prm::CommandStatus SyndromeStatus(Syndrome s) {
  const SyndromeRow* r = FindSyndrome(static_cast<uint32_t>(s));
  return r != nullptr ? r->status : prm::CommandStatus::INT_ERR;
}

}  // namespace onchip::sim
