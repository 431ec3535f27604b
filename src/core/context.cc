#include "core/context.h"

#include <thread>

namespace tabforge {

int Context::Threads() const {
  if (num_threads > 0) return num_threads;
  // Asked once: glibc reads /sys for it on every call, and a single-row prediction asks once
  // per model (hundreds of times in a bagged stack).
  static const unsigned hardware = std::thread::hardware_concurrency();
  return hardware == 0 ? 1 : static_cast<int>(hardware);
}

}  // namespace tabforge
