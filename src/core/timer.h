// Wall-clock timing: a stopwatch for measurements and a deadline for time budgets.
#pragma once

#include <chrono>

namespace tabforge {

// Measures elapsed wall time from construction (or the last Reset) on a monotonic clock.
class Stopwatch {
 public:
  Stopwatch() : start_(Clock::now()) {}
  void Reset() { start_ = Clock::now(); }
  // Seconds since start.
  double Seconds() const { return std::chrono::duration<double>(Clock::now() - start_).count(); }

 private:
  using Clock = std::chrono::steady_clock;
  Clock::time_point start_;
};

// A point in time after which work should stop. Default-constructed: never expires.
class Deadline {
 public:
  Deadline() = default;
  // Expires `seconds` from now; a non-positive value is already expired.
  static Deadline In(double seconds) {
    Deadline deadline;
    deadline.has_limit_ = true;
    deadline.at_ = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                      std::chrono::duration<double>(seconds));
    return deadline;
  }
  bool Expired() const { return has_limit_ && Clock::now() >= at_; }
  // Seconds left (negative once expired); a very large number when there is no limit.
  double SecondsLeft() const {
    if (!has_limit_) return 1e300;
    return std::chrono::duration<double>(at_ - Clock::now()).count();
  }

 private:
  using Clock = std::chrono::steady_clock;
  bool has_limit_ = false;
  Clock::time_point at_{};
};

}  // namespace tabforge
