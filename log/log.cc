#include "log/log.h"

#include <unistd.h>

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace onchip::log {
namespace {

void WriteLine(const char* format, va_list args) {
  va_list again;
  va_copy(again, args);
  char small[512];
  const int n = std::vsnprintf(small, sizeof small - 1, format, args);
  if (n < 0) {
    va_end(again);
    return;
  }
  std::string big;
  const char* text = small;
  std::size_t len = static_cast<std::size_t>(n);
  if (len >= sizeof small - 1) {  // did not fit: format again into a buffer of its size
    big.resize(len + 1);
    std::vsnprintf(big.data(), len + 1, format, again);
    big[len] = '\n';
    text = big.data();
  } else {
    small[len] = '\n';
  }
  va_end(again);
  // One write per line; a short write (a pipe, a signal) goes on with the rest.
  for (std::size_t done = 0, total = len + 1; done < total;) {
    const ssize_t w = ::write(STDERR_FILENO, text + done, total - done);
    if (w <= 0) break;
    done += static_cast<std::size_t>(w);
  }
}

}  // namespace

Level ParseLevel(const char* value) {
  if (value == nullptr) return Level::kOff;
  const std::string_view v(value);
  if (v == "warn") return Level::kWarn;
  if (v == "info") return Level::kInfo;
  if (v == "debug") return Level::kDebug;
  return Level::kOff;
}

std::string_view LevelName(Level level) {
  switch (level) {
    case Level::kOff: return "off";
    case Level::kWarn: return "warn";
    case Level::kInfo: return "info";
    case Level::kDebug: return "debug";
  }
  return "?";
}

Level Threshold() {
  static const Level level = ParseLevel(std::getenv("ONCHIP_LOG"));
  return level;
}

void Say(Level level, const char* format, ...) {
  if (!Enabled(level)) return;
  va_list args;
  va_start(args, format);
  WriteLine(format, args);
  va_end(args);
}

void Fatal(const char* format, ...) {
  va_list args;
  va_start(args, format);
  WriteLine(format, args);
  va_end(args);
}

}  // namespace onchip::log
