// Reads this process's own machine code back with objdump, so that tests can assert which
// instructions a function really executes (a fence the compiler kept, a store it did not sink),
// not what the source says it should.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace onchip::mmio::testing {

struct Insn {
  uint64_t address = 0;     // file address, as objdump prints it
  std::string mnemonic;     // "sfence", "movq", "call", "vmovdqa64" (prefixes such as "rep" kept)
  std::string operands;     // AT&T order: the destination is the last operand
  std::string target_name;  // for calls and jumps: "<symbol+off>" text without the brackets
  std::optional<uint64_t> target;  // for direct calls and jumps
};

struct Function {
  std::string name;  // demangled
  uint64_t start = 0;
  uint64_t end = 0;  // one past the last instruction's address (the next symbol)
  std::vector<Insn> insns;
};

// The disassembly of the object file holding code address `fn` (the executable or a shared
// library), indexed by file start address. `fn` is a function pointer converted to uintptr_t.
class Disassembly {
 public:
  // Runs objdump over the whole file that contains `code`; error text on failure.
  static std::optional<Disassembly> Of(const void* code, std::string* error);

  // The function containing the runtime address `code`, or nullptr.
  const Function* At(const void* code) const;
  // The function starting exactly at file address `address`, or nullptr.
  const Function* Starting(uint64_t address) const;

 private:
  uintptr_t load_bias_ = 0;  // runtime address minus file address
  std::map<uint64_t, Function> functions_;
};

// True when the instruction writes memory outside the stack frame (a store the device or
// another thread could see): any memory destination not based on %rsp/%rbp, MOVDIR64B, string
// stores, and sanitizer write hooks.
bool IsStore(const Insn& insn);
bool IsFence(const Insn& insn, const std::string& fence);  // e.g. "sfence"
// A store that is weakly ordered even on write-back memory: non-temporal (MOVNT*) and MOVDIR64B.
bool IsWeaklyOrderedStore(const Insn& insn);

// Whether every way out of `fn` (ret, or a jump/call chain out of it) passes `fence` after the
// last store, following calls and tail jumps into functions of the same file. A callee that
// itself ends fenced counts as a fence; any other call counts as a store (it may write). Also
// false when `fn` contains no store at all (the check would be vacuous). `why` says what failed.
// `is_store` picks the stores that count (IsStore: every store; IsWeaklyOrderedStore).
bool EndsWithFenceAfterLastStore(const Disassembly& dis, const Function& fn,
                                 const std::string& fence, std::string* why,
                                 bool (*is_store)(const Insn&) = IsStore);

// Whether `fence` appears in `fn` or in any function of the same file that `fn` calls or jumps
// to, transitively. `where` names the first one found.
bool ReachesFence(const Disassembly& dis, const Function& fn, const std::string& fence,
                  std::string* where);

}  // namespace onchip::mmio::testing
