// What tells onchip's verbs objects from another provider's: the calls libonchip exports under
// upstream names (exported_calls.cc) are reachable from any context an application holds, and
// must act only on the ones this provider opened.
#pragma once

#include <infiniband/verbs.h>

namespace onchip::driver::verbs {

// True when `context` was opened through onchip's provider (its device carries onchip's
// verbs_device_ops); false for null and for every other provider's context.
bool IsOnchipContext(const ibv_context* context);

// For an onchip context: true in the process that opened it. Its software ConnectX runs as that
// process's threads, so a forked child has no device: calls that command it answer ENODEV there.
bool OpenedInThisProcess(const ibv_context* context);

}  // namespace onchip::driver::verbs
