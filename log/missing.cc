#include "log/missing.h"

#include <array>
#include <mutex>

#include "log/log.h"

namespace onchip::log {

void Missing(const char* verb, const char* feature) {
  if (!Enabled(Level::kWarn)) return;
  static std::mutex mu;
  static std::array<const char*, 32> said{};
  {
    const std::lock_guard lock(mu);
    for (const char*& slot : said) {
      if (slot == feature) return;
      if (slot == nullptr) {
        slot = feature;
        break;
      }
    }
  }
  Say(Level::kWarn, "onchip: %s: %s is not implemented by onchip", verb, feature);
}

}  // namespace onchip::log
