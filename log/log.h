// onchip's one way to say something on stderr: the library (driver, alloc, mmio, the provider)
// prints nothing unless the user asks with ONCHIP_LOG.
//
//   ONCHIP_LOG unset, empty or "off"  nothing (the default: a verbs library is silent)
//   ONCHIP_LOG=warn                   what went wrong without failing a call: a free that was
//                                     refused, a teardown that left objects behind
//   ONCHIP_LOG=info                   also what fell back (hugepages unavailable, memfd used)
//   ONCHIP_LOG=debug                  also every failure a verbs call returns, with its context,
//                                     and DPDK's EAL's own messages
//
//   if (log::Enabled(log::Level::kInfo)) ...;       // a test before costly formatting
//   log::Say(log::Level::kWarn, "onchip alloc: %s", why.c_str());
//
// The level is read from the environment once per process, on first use. Each message is one
// line, written with one write(2) so that lines of several threads do not interleave. The one
// exception to silence is Fatal: the words printed just before the library aborts the process.
// Never on a hot path: a disabled Say costs a load and a compare, an enabled one formats.
#pragma once

#include <cstdint>
#include <string_view>

namespace onchip::log {

enum class Level : uint8_t { kOff, kWarn, kInfo, kDebug };

// The level ONCHIP_LOG asks for: "off", "warn", "info" or "debug" (an unknown word is kOff).
Level Threshold();
// The level a value of ONCHIP_LOG names; nullptr or "" is kOff. Pure, for tests.
Level ParseLevel(const char* value);
std::string_view LevelName(Level level);

inline bool Enabled(Level level) { return level != Level::kOff && level <= Threshold(); }

// One line on stderr (a newline is added) when `level` is enabled.
[[gnu::format(printf, 2, 3)]] void Say(Level level, const char* format, ...);
// One line on stderr whatever the level: only right before the caller aborts.
[[gnu::format(printf, 1, 2)]] void Fatal(const char* format, ...);

}  // namespace onchip::log
