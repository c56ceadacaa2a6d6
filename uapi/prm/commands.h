// The firmware commands onchip knows, one row each: PRM name, the HCA states the command is
// accepted in, whether a user-space client may issue it (the device daemon's filter, as the
// kernel's DEVX filter decides for a user context), whether its input carries a uid (the
// daemon stamps the client's), and whether the software ConnectX implements it. The driver's
// error text (CommandName), the software device's state check and the daemon's filter all
// read this table; tests/device/sim:command_table_test checks it against the software device's
// dispatch.
#pragma once

#include <cstdint>
#include <string_view>

#include "uapi/prm/opcodes.h"

namespace onchip::prm {

// HCA states as a mask: after reset, after ENABLE_HCA, after INIT_HCA.
enum HcaStateMask : uint8_t {
  kHcaDisabled = 1u << 0,
  kHcaEnabled = 1u << 1,
  kHcaInitialized = 1u << 2,
};

struct Command {
  Opcode opcode;
  std::string_view name;
  uint8_t states;  // HcaStateMask bits the command is accepted in (else BAD_SYS_STATE_ERR)
  bool user;       // a user-space client may issue it
  bool uid;        // its input's uid field names the issuing user context
  bool in_sim;     // the software ConnectX implements it (else BAD_OP_ERR there)
};

namespace commands_detail {
inline constexpr uint8_t kRes = kHcaInitialized;                // resource commands
inline constexpr uint8_t kBoot = kHcaEnabled;                   // bring-up only
inline constexpr uint8_t kUp = kHcaEnabled | kHcaInitialized;   // from ENABLE_HCA on
}  // namespace commands_detail

// clang-format off
inline constexpr Command kCommands[] = {
    // opcode                     name                         states                    user   uid    in_sim
    {QUERY_HCA_CAP,               "QUERY_HCA_CAP",             commands_detail::kUp,   true,  false, true},
    {QUERY_ADAPTER,               "QUERY_ADAPTER",             commands_detail::kRes,  true,  false, false},
    {INIT_HCA,                    "INIT_HCA",                  commands_detail::kBoot, false, false, true},
    {TEARDOWN_HCA,                "TEARDOWN_HCA",              commands_detail::kRes,  false, false, true},
    {ENABLE_HCA,                  "ENABLE_HCA",                kHcaDisabled,           false, false, true},
    {DISABLE_HCA,                 "DISABLE_HCA",               commands_detail::kBoot, false, false, true},
    {QUERY_PAGES,                 "QUERY_PAGES",               commands_detail::kUp,   false, false, true},
    {MANAGE_PAGES,                "MANAGE_PAGES",              commands_detail::kUp,   false, false, true},
    {SET_HCA_CAP,                 "SET_HCA_CAP",               commands_detail::kBoot, false, false, true},
    {QUERY_ISSI,                  "QUERY_ISSI",                commands_detail::kUp,   true,  false, true},
    {SET_ISSI,                    "SET_ISSI",                  commands_detail::kBoot, false, false, true},
    {SET_DRIVER_VERSION,          "SET_DRIVER_VERSION",        commands_detail::kUp,   false, false, true},
    {CREATE_MKEY,                 "CREATE_MKEY",               commands_detail::kRes,  true,  true,  true},
    {QUERY_MKEY,                  "QUERY_MKEY",                commands_detail::kRes,  true,  true,  true},
    {DESTROY_MKEY,                "DESTROY_MKEY",              commands_detail::kRes,  true,  true,  true},
    {QUERY_SPECIAL_CONTEXTS,      "QUERY_SPECIAL_CONTEXTS",    commands_detail::kRes,  true,  false, false},
    {ALLOC_MEMIC,                 "ALLOC_MEMIC",               commands_detail::kRes,  true,  false, true},
    {DEALLOC_MEMIC,               "DEALLOC_MEMIC",             commands_detail::kRes,  true,  false, true},
    {MODIFY_MEMIC,                "MODIFY_MEMIC",              commands_detail::kRes,  true,  true,  true},
    {CREATE_EQ,                   "CREATE_EQ",                 commands_detail::kRes,  true,  true,  true},
    {DESTROY_EQ,                  "DESTROY_EQ",                commands_detail::kRes,  true,  true,  true},
    {QUERY_EQ,                    "QUERY_EQ",                  commands_detail::kRes,  true,  true,  true},
    {CREATE_CQ,                   "CREATE_CQ",                 commands_detail::kRes,  true,  true,  true},
    {DESTROY_CQ,                  "DESTROY_CQ",                commands_detail::kRes,  true,  true,  true},
    {QUERY_CQ,                    "QUERY_CQ",                  commands_detail::kRes,  true,  true,  true},
    {MODIFY_CQ,                   "MODIFY_CQ",                 commands_detail::kRes,  true,  true,  true},
    {CREATE_QP,                   "CREATE_QP",                 commands_detail::kRes,  true,  true,  true},
    {DESTROY_QP,                  "DESTROY_QP",                commands_detail::kRes,  true,  true,  true},
    {RST2INIT_QP,                 "RST2INIT_QP",               commands_detail::kRes,  true,  true,  true},
    {INIT2RTR_QP,                 "INIT2RTR_QP",               commands_detail::kRes,  true,  true,  true},
    {RTR2RTS_QP,                  "RTR2RTS_QP",                commands_detail::kRes,  true,  true,  true},
    {RTS2RTS_QP,                  "RTS2RTS_QP",                commands_detail::kRes,  true,  true,  true},
    {SQERR2RTS_QP,                "SQERR2RTS_QP",              commands_detail::kRes,  true,  true,  true},
    {QP_2ERR,                     "QP_2ERR",                   commands_detail::kRes,  true,  true,  true},
    {QP_2RST,                     "QP_2RST",                   commands_detail::kRes,  true,  true,  true},
    {QUERY_QP,                    "QUERY_QP",                  commands_detail::kRes,  true,  true,  true},
    {SQD_RTS_QP,                  "SQD_RTS_QP",                commands_detail::kRes,  true,  true,  true},
    {INIT2INIT_QP,                "INIT2INIT_QP",              commands_detail::kRes,  true,  true,  true},
    {CREATE_SRQ,                  "CREATE_SRQ",                commands_detail::kRes,  true,  true,  true},
    {DESTROY_SRQ,                 "DESTROY_SRQ",               commands_detail::kRes,  true,  true,  true},
    {QUERY_SRQ,                   "QUERY_SRQ",                 commands_detail::kRes,  true,  true,  true},
    {ARM_RQ,                      "ARM_RQ",                    commands_detail::kRes,  true,  true,  true},
    {CREATE_XRC_SRQ,              "CREATE_XRC_SRQ",            commands_detail::kRes,  true,  true,  true},
    {DESTROY_XRC_SRQ,             "DESTROY_XRC_SRQ",           commands_detail::kRes,  true,  true,  true},
    {QUERY_XRC_SRQ,               "QUERY_XRC_SRQ",             commands_detail::kRes,  true,  true,  true},
    {ARM_XRC_SRQ,                 "ARM_XRC_SRQ",               commands_detail::kRes,  true,  true,  true},
    // Another vport's state or context needs a privilege no client has (other_vport refused).
    {QUERY_VPORT_STATE,           "QUERY_VPORT_STATE",         commands_detail::kRes,  true,  false, true},
    // A RoCE port's GID table, read the way DEVX lets any user read it.
    {QUERY_ROCE_ADDRESS,          "QUERY_ROCE_ADDRESS",        commands_detail::kRes,  true,  false, true},
    // An InfiniBand port's LID, SM LID and GIDs: what ibv_query_port and the GID table show.
    {QUERY_HCA_VPORT_CONTEXT,     "QUERY_HCA_VPORT_CONTEXT",   commands_detail::kRes,  true,  false, true},
    {QUERY_HCA_VPORT_GID,         "QUERY_HCA_VPORT_GID",       commands_detail::kRes,  true,  false, true},
    {ALLOC_PD,                    "ALLOC_PD",                  commands_detail::kRes,  true,  true,  true},
    {DEALLOC_PD,                  "DEALLOC_PD",                commands_detail::kRes,  true,  true,  true},
    {ALLOC_UAR,                   "ALLOC_UAR",                 commands_detail::kRes,  true,  true,  true},
    {DEALLOC_UAR,                 "DEALLOC_UAR",               commands_detail::kRes,  true,  true,  true},
    {ACCESS_REG,                  "ACCESS_REG",                commands_detail::kUp,   false, false, true},
    {NOP,                         "NOP",                       commands_detail::kUp,   true,  false, true},
    {ALLOC_XRCD,                  "ALLOC_XRCD",                commands_detail::kRes,  true,  true,  true},
    {DEALLOC_XRCD,                "DEALLOC_XRCD",              commands_detail::kRes,  true,  true,  true},
    {ALLOC_TRANSPORT_DOMAIN,      "ALLOC_TRANSPORT_DOMAIN",    commands_detail::kRes,  true,  true,  true},
    {DEALLOC_TRANSPORT_DOMAIN,    "DEALLOC_TRANSPORT_DOMAIN",  commands_detail::kRes,  true,  true,  true},
    {CREATE_TIR,                  "CREATE_TIR",                commands_detail::kRes,  true,  true,  true},
    {MODIFY_TIR,                  "MODIFY_TIR",                commands_detail::kRes,  false, false, false},
    {DESTROY_TIR,                 "DESTROY_TIR",               commands_detail::kRes,  true,  true,  true},
    {QUERY_TIR,                   "QUERY_TIR",                 commands_detail::kRes,  true,  true,  true},
    {CREATE_SQ,                   "CREATE_SQ",                 commands_detail::kRes,  true,  true,  true},
    {MODIFY_SQ,                   "MODIFY_SQ",                 commands_detail::kRes,  true,  true,  true},
    {DESTROY_SQ,                  "DESTROY_SQ",                commands_detail::kRes,  true,  true,  true},
    {QUERY_SQ,                    "QUERY_SQ",                  commands_detail::kRes,  true,  true,  true},
    {CREATE_RQ,                   "CREATE_RQ",                 commands_detail::kRes,  true,  true,  true},
    {MODIFY_RQ,                   "MODIFY_RQ",                 commands_detail::kRes,  true,  true,  true},
    {DESTROY_RQ,                  "DESTROY_RQ",                commands_detail::kRes,  true,  true,  true},
    {QUERY_RQ,                    "QUERY_RQ",                  commands_detail::kRes,  true,  true,  true},
    {CREATE_TIS,                  "CREATE_TIS",                commands_detail::kRes,  true,  true,  true},
    {MODIFY_TIS,                  "MODIFY_TIS",                commands_detail::kRes,  false, false, false},
    {DESTROY_TIS,                 "DESTROY_TIS",               commands_detail::kRes,  true,  true,  true},
    {QUERY_TIS,                   "QUERY_TIS",                 commands_detail::kRes,  true,  true,  true},
    {CREATE_RQT,                  "CREATE_RQT",                commands_detail::kRes,  false, false, false},
    {CREATE_GENERAL_OBJECT,       "CREATE_GENERAL_OBJECT",     commands_detail::kRes,  true,  true,  true},
    {MODIFY_GENERAL_OBJECT,       "MODIFY_GENERAL_OBJECT",     commands_detail::kRes,  true,  true,  false},
    {QUERY_GENERAL_OBJECT,        "QUERY_GENERAL_OBJECT",      commands_detail::kRes,  true,  true,  true},
    {DESTROY_GENERAL_OBJECT,      "DESTROY_GENERAL_OBJECT",    commands_detail::kRes,  true,  true,  true},
};
// clang-format on

// The row of `opcode`, or nullptr.
constexpr const Command* FindCommand(uint16_t opcode) {
  for (const Command& c : kCommands)
    if (c.opcode == opcode) return &c;
  return nullptr;
}

// The PRM name of `opcode`, or "UNKNOWN_OPCODE".
constexpr std::string_view CommandName(uint16_t opcode) {
  const Command* c = FindCommand(opcode);
  return c != nullptr ? c->name : std::string_view("UNKNOWN_OPCODE");
}

// Whether `opcode` only reads: a QUERY_* command (by its PRM name) changes no context.
constexpr bool ReadsOnly(uint16_t opcode) { return CommandName(opcode).starts_with("QUERY_"); }

}  // namespace onchip::prm
