// onchip's one error model.
//
// Every fallible call inside onchip returns Result<T>: either the value or an Error that carries
// an errno (the number a verbs caller will eventually see) plus the context that explains it:
// what was being done and, when firmware refused a command, the opcode, op_mod, PRM status and
// syndrome. Nothing is allocated on either path; `what` points at a string literal.
//
//   Result<Pd> AllocPd(Context& ctx);
//   ...
//   auto pd = AllocPd(ctx);
//   if (!pd) return std::unexpected(pd.error());   // or: ONCHIP_TRY(pd, AllocPd(ctx));
//
// At the verbs boundary the errno is handed out exactly as rdma-core documents for that call
// (NULL + errno, or a returned errno); describe() is for logs and test failure messages.
#pragma once

#include <cstdint>
#include <expected>
#include <string>
#include <utility>

namespace onchip {

struct FirmwareContext {
  uint16_t opcode = 0;
  uint16_t op_mod = 0;
  uint8_t status = 0;     // PRM command status (0 = OK)
  uint32_t syndrome = 0;  // firmware's syndrome, identifies the failed check
};

class Error {
 public:
  // `what` must be a string with static storage duration (a literal).
  constexpr Error(int errno_value, const char* what) : errno_(errno_value), what_(what) {}
  constexpr Error(int errno_value, const char* what, FirmwareContext fw)
      : errno_(errno_value), what_(what), fw_(fw), has_fw_(true) {}

  constexpr int errno_value() const { return errno_; }
  constexpr const char* what() const { return what_; }
  constexpr bool from_firmware() const { return has_fw_; }
  constexpr const FirmwareContext& firmware() const { return fw_; }

  // "alloc_memic: ENOMEM (Cannot allocate memory); opcode 0x205 op_mod 0x0 status 0xf
  // (BAD_RES_STATE) syndrome 0x1234". Allocates: not for hot paths.
  std::string describe() const;

 private:
  int errno_;
  const char* what_;
  FirmwareContext fw_{};
  bool has_fw_ = false;
};

// std::expected with the error model's Error, and [[nodiscard]]: a result nobody looks at is a
// bug (an ignored failure), so the compiler refuses to drop one silently; `(void)` says "on
// purpose" where a failure truly changes nothing.
template <class T = void>
class [[nodiscard]] Result : public std::expected<T, Error> {
 public:
  using std::expected<T, Error>::expected;
  Result(const std::expected<T, Error>& e) : std::expected<T, Error>(e) {}  // NOLINT: implicit
  Result(std::expected<T, Error>&& e) : std::expected<T, Error>(std::move(e)) {}  // NOLINT
};

// Shorthand for the failure side: `return Fail(EINVAL, "alloc_dm: comp_mask");`
inline std::unexpected<Error> Fail(int errno_value, const char* what) {
  return std::unexpected<Error>(std::in_place, errno_value, what);
}
inline std::unexpected<Error> Fail(int errno_value, const char* what, FirmwareContext fw) {
  return std::unexpected<Error>(std::in_place, errno_value, what, fw);
}

}  // namespace onchip

// Propagates a failure to the caller, else binds the value: ONCHIP_TRY(auto pd, AllocPd(ctx));
#define ONCHIP_CONCAT_INNER(a, b) a##b
#define ONCHIP_CONCAT(a, b) ONCHIP_CONCAT_INNER(a, b)
#define ONCHIP_TRY(decl, expr) ONCHIP_TRY_IMPL(ONCHIP_CONCAT(onchip_try_, __LINE__), decl, expr)
#define ONCHIP_TRY_IMPL(tmp, decl, expr)                                  \
  auto tmp = (expr);                                                      \
  if (!tmp) return std::unexpected<::onchip::Error>(std::move(tmp).error()); \
  decl = std::move(*tmp)
// For Result<void>: ONCHIP_CHECK(DoThing());
#define ONCHIP_CHECK(expr)                                                        \
  do {                                                                            \
    if (auto onchip_check_result = (expr); !onchip_check_result)                  \
      return std::unexpected<::onchip::Error>(std::move(onchip_check_result).error()); \
  } while (0)
