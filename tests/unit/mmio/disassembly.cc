#include "tests/unit/mmio/disassembly.h"

#include <dlfcn.h>
#include <elf.h>
#include <limits.h>
#include <stdlib.h>

#include <cctype>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>

namespace onchip::mmio::testing {
namespace {

bool StartsWith(const std::string& s, const char* prefix) {
  return s.compare(0, std::strlen(prefix), prefix) == 0;
}

// The mnemonic without its prefixes ("rep stos" -> "stos", "notrack jmp" -> "jmp").
std::string BaseMnemonic(const Insn& insn) {
  const std::string& m = insn.mnemonic;
  const auto space = m.rfind(' ');
  return space == std::string::npos ? m : m.substr(space + 1);
}

// Instruction prefixes objdump prints as separate words before the mnemonic.
bool IsPrefix(const std::string& w) {
  static const std::set<std::string> k{"rep",  "repz", "repe",  "repnz", "repne", "lock",
                                       "notrack", "bnd", "data16", "cs",  "ds",   "es",
                                       "fs",   "gs",   "ss",    "addr32"};
  return k.count(w) != 0;
}

std::string Realpath(const std::string& path) {
  char buf[PATH_MAX];
  return ::realpath(path.c_str(), buf) ? std::string(buf) : path;
}

// ET_EXEC files are linked at their run addresses; ET_DYN (PIE, shared libraries) are moved.
bool IsPositionIndependent(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  Elf64_Ehdr h{};
  f.read(reinterpret_cast<char*>(&h), sizeof h);
  return f && h.e_type == ET_DYN;
}

bool IsSanitizerHook(const std::string& name) {
  return StartsWith(name, "__asan_") || StartsWith(name, "__ubsan_") ||
         StartsWith(name, "__tsan_") || StartsWith(name, "__sanitizer_") ||
         StartsWith(name, "__msan_");
}

// A call after which the path never returns (sanitizer reports with recovery off).
bool NeverReturns(const std::string& name) {
  return IsSanitizerHook(name) &&
         (name.find("report") != std::string::npos || name.find("_abort") != std::string::npos);
}

// Hex digits at `pos` (at least one); `*end` is one past them.
bool ParseHex(const std::string& s, std::size_t pos, uint64_t* value, std::size_t* end) {
  std::size_t i = pos;
  uint64_t v = 0;
  for (; i < s.size() && std::isxdigit(static_cast<unsigned char>(s[i])); ++i)
    v = v * 16 + static_cast<uint64_t>(std::isdigit(static_cast<unsigned char>(s[i]))
                                           ? s[i] - '0'
                                           : std::tolower(static_cast<unsigned char>(s[i])) - 'a' + 10);
  if (i == pos || i - pos > 16) return false;
  *value = v;
  *end = i;
  return true;
}

// Name without "+0x..." and without "@plt".
// A jump the assembler put over the padding up to an aligned next function (it does so when
// told to keep branches off 32-byte boundaries): it targets the function's end and only NOPs
// follow it. Control never reaches it (what precedes it ends in a jump, a return or a call that
// does not return), so it is no way out; a real tail call to the next function has no padding
// after it.
bool PadsToEnd(const std::vector<Insn>& in, std::size_t i, uint64_t end) {
  if (!in[i].target || *in[i].target != end || i + 1 == in.size()) return false;
  for (std::size_t k = i + 1; k < in.size(); ++k)
    if (!StartsWith(BaseMnemonic(in[k]), "nop")) return false;
  return true;
}

std::string BareName(const std::string& target_name) {
  std::string n = target_name;
  if (auto plus = n.rfind("+0x"); plus != std::string::npos) n.resize(plus);
  if (auto plt = n.find("@plt"); plt != std::string::npos) n.resize(plt);
  return n;
}

}  // namespace

std::optional<Disassembly> Disassembly::Of(const void* code, std::string* error) {
  Dl_info info{};
  if (::dladdr(code, &info) == 0 || info.dli_fbase == nullptr) {
    *error = "dladdr found no object for the address";
    return std::nullopt;
  }
  std::string path = info.dli_fname ? info.dli_fname : "";
  const std::string self = Realpath("/proc/self/exe");
  if (path.empty() || Realpath(path) == self) path = self;
  Disassembly d;
  d.load_bias_ = IsPositionIndependent(path) ? reinterpret_cast<uintptr_t>(info.dli_fbase) : 0;

  const std::string command = "objdump -d -C -w --no-show-raw-insn '" + path + "' 2>&1";
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) {
    *error = "cannot run objdump";
    return std::nullopt;
  }
  Function* current = nullptr;
  char buf[8192];
  while (std::fgets(buf, sizeof buf, pipe) != nullptr) {
    std::string l(buf);
    while (!l.empty() && (l.back() == '\n' || l.back() == '\r')) l.pop_back();
    uint64_t address = 0;
    std::size_t used = 0;
    // "0000000000003a60 <name>:" opens a function.
    if (ParseHex(l, 0, &address, &used) && l.compare(used, 2, " <") == 0 && l.size() >= used + 4 &&
        l.compare(l.size() - 2, 2, ">:") == 0) {
      current = &d.functions_[address];
      current->name = l.substr(used + 2, l.size() - used - 4);
      current->start = current->end = address;
      continue;
    }
    // "    3a60:\tmov    %rdi,%rax" is one instruction.
    const std::size_t first = l.find_first_not_of(' ');
    if (current == nullptr || first == std::string::npos || !ParseHex(l, first, &address, &used) ||
        used >= l.size() || l[used] != ':')
      continue;
    const std::string text = l.substr(used + 1);
    if (text.find_first_not_of(" \t") == std::string::npos) continue;
    Insn insn;
    insn.address = address;
    std::istringstream words(text);
    std::string w;
    while (words >> w && IsPrefix(w)) insn.mnemonic += w + " ";
    insn.mnemonic += w;
    std::getline(words, insn.operands);
    while (!insn.operands.empty() && insn.operands.front() == ' ') insn.operands.erase(0, 1);
    if (auto hash = insn.operands.find('#'); hash != std::string::npos) {
      insn.operands.resize(hash);  // "# 1234 <sym>" comments of RIP-relative operands
      while (!insn.operands.empty() && insn.operands.back() == ' ') insn.operands.pop_back();
    }
    // Direct calls and jumps: "3ab0 <name+0x50>".
    uint64_t target = 0;
    if ((StartsWith(w, "j") || StartsWith(w, "call")) && ParseHex(insn.operands, 0, &target, &used) &&
        insn.operands.compare(used, 2, " <") == 0 && insn.operands.back() == '>') {
      insn.target = target;
      insn.target_name = insn.operands.substr(used + 2, insn.operands.size() - used - 3);
    }
    current->insns.push_back(std::move(insn));
    current->end = current->insns.back().address + 1;
  }
  const int status = ::pclose(pipe);
  if (status != 0 || d.functions_.empty()) {
    *error = "objdump failed on " + path;
    return std::nullopt;
  }
  return d;
}

const Function* Disassembly::At(const void* code) const {
  const uint64_t address = reinterpret_cast<uintptr_t>(code) - load_bias_;
  auto it = functions_.upper_bound(address);
  if (it == functions_.begin()) return nullptr;
  --it;
  return address < it->second.end ? &it->second : nullptr;
}

const Function* Disassembly::Starting(uint64_t address) const {
  auto it = functions_.find(address);
  return it == functions_.end() ? nullptr : &it->second;
}

bool IsStore(const Insn& insn) {
  const std::string& m = insn.mnemonic;
  const std::string base = BaseMnemonic(insn);
  if (StartsWith(base, "movdir64b")) return true;
  if (StartsWith(base, "stos") || StartsWith(base, "movs") ) {
    if (m.find("rep") != std::string::npos || insn.operands.find("%es:") != std::string::npos)
      return true;
  }
  if (StartsWith(base, "j") || StartsWith(base, "call") || StartsWith(base, "ret") ||
      StartsWith(base, "push") || StartsWith(base, "cmp") || StartsWith(base, "test") ||
      StartsWith(base, "nop") || StartsWith(base, "prefetch") || StartsWith(base, "ucomi") ||
      StartsWith(base, "comi") || StartsWith(base, "ptest") || StartsWith(base, "vptest") ||
      StartsWith(base, "clflush") || StartsWith(base, "lea") || base == "bt" || base == "btl" ||
      base == "btq")
    return false;
  // AT&T: the last operand is the destination; a memory operand has parentheses.
  const std::string& ops = insn.operands;
  const auto comma = ops.rfind(',');
  const std::string dest = comma == std::string::npos ? ops : ops.substr(comma + 1);
  // "(%rax,%rbx,8)" splits at its own commas: take the last operand as the text after the
  // comma that closes the previous operand.
  std::string last = dest;
  if (dest.find(')') != std::string::npos && dest.find('(') == std::string::npos) {
    const auto open = ops.rfind('(');
    auto start = ops.rfind(',', open);
    last = ops.substr(start == std::string::npos ? 0 : start + 1);
  }
  if (last.find('(') == std::string::npos) return false;
  if (comma == std::string::npos && last == ops) {
    // One operand: incs, negs, sets and pops to memory write it; everything else listed above.
    if (!(StartsWith(base, "inc") || StartsWith(base, "dec") || StartsWith(base, "neg") ||
          StartsWith(base, "not") || StartsWith(base, "set") || StartsWith(base, "pop")))
      return false;
  }
  return last.find("(%rsp") == std::string::npos && last.find("(%rbp") == std::string::npos;
}

bool IsFence(const Insn& insn, const std::string& fence) { return insn.mnemonic == fence; }

bool IsWeaklyOrderedStore(const Insn& insn) {
  const std::string base = BaseMnemonic(insn);
  if (StartsWith(base, "movdir64b")) return true;
  // MOVNTDQA is a load (its destination is a register, which IsStore rejects).
  return (StartsWith(base, "movnt") || StartsWith(base, "vmovnt")) && IsStore(insn);
}

namespace {

struct Checker {
  const Disassembly& dis;
  const std::string& fence;
  bool (*is_store)(const Insn&);
  std::map<uint64_t, int> memo;  // 1 ends fenced, 0 not (or in progress)

  // Whether the code at `start`, entered with (entry_dirty) or without counted stores pending,
  // returns with none pending on every way out.
  bool EndsFenced(uint64_t start, bool entry_dirty) {
    const uint64_t key = start * 2 + (entry_dirty ? 1 : 0);
    if (auto it = memo.find(key); it != memo.end()) return it->second == 1;
    memo[key] = 0;
    const Function* fn = dis.Starting(start);
    bool saw_store = false;
    std::string ignored;
    const bool ok = fn != nullptr && Check(*fn, entry_dirty, &saw_store, &ignored);
    memo[key] = ok ? 1 : 0;
    return ok;
  }

  // Dataflow over the instructions: "dirty" = a store since the last fence on some path.
  bool Check(const Function& fn, bool entry_dirty, bool* saw_store, std::string* why) {
    const auto& in = fn.insns;
    std::map<uint64_t, std::size_t> index;
    for (std::size_t i = 0; i < in.size(); ++i) index[in[i].address] = i;
    enum State : int { kUnseen = 0, kClean = 1, kDirty = 2 };
    std::vector<int> state(in.size(), kUnseen);
    std::vector<std::size_t> work;
    auto flow = [&](std::size_t i, int s) {
      if (i >= in.size() || state[i] >= s) return;
      state[i] = s;
      work.push_back(i);
    };
    auto describe = [&](const Insn& insn) {
      std::ostringstream o;
      o << fn.name << " +0x" << std::hex << (insn.address - fn.start) << ": " << insn.mnemonic
        << " " << insn.operands;
      return o.str();
    };
    if (in.empty()) {
      *why = fn.name + ": no instructions";
      return false;
    }
    flow(0, entry_dirty ? kDirty : kClean);
    while (!work.empty()) {
      const std::size_t i = work.back();
      work.pop_back();
      const Insn& insn = in[i];
      int s = state[i];
      const std::string base = BaseMnemonic(insn);
      const bool inside = insn.target && index.count(*insn.target) != 0;
      if (StartsWith(base, "ret")) {
        if (s == kDirty) {
          *why = describe(insn) + " returns with a store after the last " + fence;
          return false;
        }
        continue;
      }
      if (base == "ud2" || base == "hlt" || base == "int3") continue;
      if (StartsWith(base, "call")) {
        const std::string callee = BareName(insn.target_name);
        if (NeverReturns(callee)) continue;
        if (IsSanitizerHook(callee)) {
          // A sanitizer's write hook stands for a plain store (the instruction follows it).
          if (is_store == &IsStore &&
              (callee.find("store") != std::string::npos || callee.find("write") != std::string::npos)) {
            s = kDirty;
            *saw_store = true;
          }
        } else if (insn.target && !insn.target_name.empty() &&
                   insn.target_name.find('+') == std::string::npos &&
                   insn.target_name.find("@plt") == std::string::npos) {
          // A callee of this file: clean after it when it returns with nothing pending.
          s = EndsFenced(*insn.target, s == kDirty) ? kClean : kDirty;
          if (s == kDirty) *saw_store = true;
        } else if (is_store == &IsStore) {
          s = kDirty;  // an unknown callee may store
          *saw_store = true;
        }  // else: a library callee (a sanitizer's runtime) issues no weakly ordered stores
        flow(i + 1, s);
        continue;
      }
      if (StartsWith(base, "j")) {
        const bool unconditional = base == "jmp";
        if (unconditional && PadsToEnd(in, i, fn.end)) continue;  // never executed
        if (!insn.target) {
          *why = describe(insn) + ": indirect jump, cannot follow";
          return false;
        }
        if (inside) {
          flow(index[*insn.target], s);
        } else if (insn.target_name.find('+') != std::string::npos) {
          *why = describe(insn) + " jumps into the middle of other code";
          return false;
        } else if (!EndsFenced(*insn.target, s == kDirty)) {
          // Leaving the function (a tail call, a cold clone): that code must end fenced.
          *why = describe(insn) + " leaves for code that does not always end with " + fence;
          return false;
        }
        if (!unconditional) flow(i + 1, s);
        continue;
      }
      if (IsFence(insn, fence)) {
        s = kClean;
      } else if (is_store(insn)) {
        s = kDirty;
        *saw_store = true;
      }
      flow(i + 1, s);
    }
    return true;
  }
};

}  // namespace

bool EndsWithFenceAfterLastStore(const Disassembly& dis, const Function& fn,
                                 const std::string& fence, std::string* why,
                                 bool (*is_store)(const Insn&)) {
  Checker c{dis, fence, is_store, {}};
  bool saw_store = false;
  c.memo[fn.start * 2] = c.memo[fn.start * 2 + 1] = 0;  // recursion into itself is no fence
  if (!c.Check(fn, /*entry_dirty=*/false, &saw_store, why)) return false;
  if (!saw_store) {
    *why = fn.name + ": no store found, nothing to check";
    return false;
  }
  return true;
}

bool ReachesFence(const Disassembly& dis, const Function& fn, const std::string& fence,
                  std::string* where) {
  std::set<uint64_t> seen{fn.start};
  std::vector<const Function*> todo{&fn};
  while (!todo.empty()) {
    const Function* f = todo.back();
    todo.pop_back();
    for (const Insn& insn : f->insns) {
      if (IsFence(insn, fence)) {
        std::ostringstream o;
        o << f->name << " +0x" << std::hex << (insn.address - f->start);
        *where = o.str();
        return true;
      }
      const std::string base = BaseMnemonic(insn);
      if (!insn.target || !(StartsWith(base, "j") || StartsWith(base, "call")))
        continue;
      // The assembler pads up to an aligned next function with a jump over the padding: it is
      // never executed, and it names the next function.
      if (*insn.target == f->end) continue;
      const Function* callee = dis.Starting(*insn.target);
      if (callee != nullptr && seen.insert(callee->start).second) todo.push_back(callee);
    }
  }
  return false;
}

}  // namespace onchip::mmio::testing
