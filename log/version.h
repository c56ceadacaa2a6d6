// The commit onchip was built from ("7adde42", "7adde42-dirty", "unknown" outside git), stamped
// at build time (tools/build/workspace_status.sh; the genrule in log/BUILD): what the daemon's
// --version and the provider's debug line print, the same words as `tools/onchip --version`.
#pragma once

namespace onchip::log {

const char* Version();

}  // namespace onchip::log
