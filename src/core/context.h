// The explicit execution context passed to every operation: which device, how many threads,
// the seed. No global state: many fits may run side by side in one process, each with its own.
#pragma once

#include <cstdint>

namespace tabforge {

enum class Device { kCpu, kCuda };

struct Context {
  Device device = Device::kCpu;  // where the work runs
  int num_threads = 0;           // threads to use; 0 means all hardware threads
  std::uint64_t seed = 0;        // root of every random choice
  int gpu_id = 0;                // CUDA device ordinal when device == kCuda

  // The thread count to use: num_threads when positive, else the hardware's (at least 1).
  int Threads() const;
};

}  // namespace tabforge
