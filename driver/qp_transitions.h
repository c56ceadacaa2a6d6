// The rules of ibv_modify_qp, apart from any device: which attribute masks a transition takes
// (the kernel's ib_modify_qp_is_ok and its state table, with rdma-core's attribute bits), which
// mlx5 command carries a transition (none for RTS->SQD or SQD->SQD: mlx5 cannot), and which of
// the command's optional fields (opt_param_mask) an attribute mask turns into for that
// transition and transport (the kernel's MLX5_QP_OPTPAR table).
//
// Pure functions: driver/qp.cc applies them before any command, and the unit tests walk every
// state pair and every attribute bit.
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>
#include <optional>

namespace onchip::driver {

// ib_modify_qp_is_ok: IBV_QP_CUR_STATE only from RTR, RTS, SQD or SQE; the pair must be a valid
// transition; every required attribute present; nothing but required, optional and
// IBV_QP_STATE. `type` is RC, UC or UD (anything else: false).
bool ModifyQpIsOk(ibv_qp_state cur, ibv_qp_state next, ibv_qp_type type, int mask);

// The PRM command for cur -> next (RST2INIT_QP, ..., QP_2ERR, QP_2RST), or nullopt when mlx5 has
// none (EINVAL in mlx5_ib: RTS->SQD, SQD->SQD, and every pair the state table refuses).
std::optional<uint16_t> TransitionOpcode(ibv_qp_state cur, ibv_qp_state next);

// The QP state as the PRM numbers it (qpc.state) and back.
uint8_t PrmQpState(ibv_qp_state s);
ibv_qp_state VerbsQpState(uint8_t prm_state);

// prm::QP_OPTPAR_* bits an attribute mask means (ib_mask_to_mlx5_opt).
uint32_t OptParamsOf(int mask);
// The prm::QP_OPTPAR_* bits the transition `opcode` takes for `type`
// (uapi/prm/qp_optional_fields.h, the firmware's table too); 0 for RST2INIT (it takes its
// context whole) and for 2ERR / 2RST (no context).
uint32_t TransitionOptParams(uint16_t opcode, ibv_qp_type type);

}  // namespace onchip::driver
