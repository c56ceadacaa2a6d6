// Waiting on a condition instead of sleeping for a guessed time: polls `done` every millisecond
// until it holds or a generous deadline passes. Generous, because the software ConnectX shares
// two cores with sanitizers and other builds; a test asserts the result, so it neither flakes
// on a slow machine nor passes without the condition having happened.
#pragma once

#include <chrono>
#include <thread>

namespace onchip::testing {

inline constexpr std::chrono::seconds kConditionDeadline{10};

template <class Done>
bool WaitUntil(Done&& done, std::chrono::milliseconds deadline = kConditionDeadline) {
  const auto end = std::chrono::steady_clock::now() + deadline;
  while (!done()) {
    if (std::chrono::steady_clock::now() > end) return done();
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

}  // namespace onchip::testing
