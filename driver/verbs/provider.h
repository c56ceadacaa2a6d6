// What tells onchip's verbs objects from another provider's: the calls libonchip exports under
// upstream names (exported_calls.cc) are reachable from any context an application holds, and
// must act only on the ones this provider opened.
#pragma once

#include <infiniband/mlx5dv.h>
#include <infiniband/verbs.h>

namespace onchip::driver::verbs {

// True when `context` was opened through onchip's provider (its device carries onchip's
// verbs_device_ops); false for null and for every other provider's context.
bool IsOnchipContext(const ibv_context* context);
// The same for a listed device: libibverbs gave it onchip's verbs_device_ops.
bool IsOnchipDevice(const ibv_device* device);

// mlx5dv_query_device for an onchip context (attributes.h DvAttributes), from the capabilities
// read at open: no command, so a forked child may ask too. EINVAL for a null `out`.
int DvQueryDevice(ibv_context* context, mlx5dv_context* out);

// ibv_import_device for a dup of an onchip context's command fd (*ours set): a second context of
// the same uverbs file, which owns `cmd_fd` from then on and shares the original's objects
// (Device::SameFile; ibv_import_pd/mr/dm find them by handle). NULL with errno on failure. For
// any other fd *ours is false and nothing happened. libibverbs 44's own ibv_import_device needs
// the kernel (it allocates the async fd with an ioctl on cmd_fd), so the plugin interposes on it.
ibv_context* ImportDevice(int cmd_fd, bool* ours);

// For an onchip context: 0 when this process may command its device, else the errno. In the
// process that opened it, always 0; in a forked child, the child's own session on the same
// function is opened on first use when the function is a device daemon's (0, or the errno of
// that open), and it is ENODEV for a device the child cannot reach (an in-process software
// ConnectX runs as threads of the opener; a VFIO function is the opener's). See provider.cc.
int ServeThisProcess(ibv_context* context);

}  // namespace onchip::driver::verbs
