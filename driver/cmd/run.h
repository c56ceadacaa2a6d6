// The typed way to issue a command: a prm::Message in, a prm::Message of the output layout out.
//
//   prm::Message<prm::alloc_pd_in> in;
//   in.set(prm::alloc_pd_in::opcode, prm::ALLOC_PD);
//   ONCHIP_TRY(auto out, cmd::Run<prm::alloc_pd_out>(commander, in));
//   uint32_t pd = out.get(prm::alloc_pd_out::pd);
//
// A message that refused a field value (ok() false) is never sent: EINVAL before any I/O.
#pragma once

#include <cerrno>
#include <cstddef>

#include "driver/cmd/commander.h"
#include "uapi/prm/field.h"

namespace onchip::driver::cmd {

template <class Out, class In>
Result<prm::Message<Out>> Run(Commander& commander, const prm::Message<In>& in,
                              std::size_t out_extra_bytes = 0) {
  if (!in.ok()) return Fail(EINVAL, "command not sent: a field value does not fit its PRM field");
  prm::Message<Out> out(out_extra_bytes);
  ONCHIP_CHECK(commander.Exec(in.bytes(), out.bytes()));
  return out;
}

}  // namespace onchip::driver::cmd
