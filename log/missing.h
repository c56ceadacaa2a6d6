// The one line a verb onchip does not implement prints (README.md, "What does not work yet"):
//
//   log::Missing("ibv_create_flow", "flow steering");  // then the caller answers EOPNOTSUPP
//
// prints "onchip: ibv_create_flow: flow steering is not implemented by onchip" when ONCHIP_LOG
// is set (warn and up), once per feature and process, so a loop that keeps trying does not flood
// stderr. Silent otherwise, as all of the library. `feature` must be a string literal (it is
// remembered by address).
#pragma once

namespace onchip::log {

void Missing(const char* verb, const char* feature);

}  // namespace onchip::log
