// What tells onchip's verbs objects from another provider's: the calls libonchip exports under
// upstream names (exported_calls.cc) are reachable from any context an application holds, and
// must act only on the ones this provider opened.
#pragma once

#include <infiniband/verbs.h>

namespace onchip::verbs {

// True when `context` was opened through onchip's provider (its device carries onchip's
// verbs_device_ops); false for null and for every other provider's context.
bool IsOnchipContext(const ibv_context* context);

}  // namespace onchip::verbs
