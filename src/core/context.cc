#include "core/context.h"

#include <thread>

namespace tabforge {

int Context::Threads() const {
  if (num_threads > 0) return num_threads;
  unsigned hardware = std::thread::hardware_concurrency();
  return hardware == 0 ? 1 : static_cast<int>(hardware);
}

}  // namespace tabforge
