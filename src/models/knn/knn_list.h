// The neighbour-list pieces the CPU search (knn.cc) and the CUDA kernels (knn_kernels.cu)
// share, so both devices compute the same distances and keep the same lists. Plain C++17.
#pragma once

#include <cstdint>

#include "core/host_device.h"

namespace tabforge::knn {

// Squared distance from the squared norms of a query and a reference and their dot product:
// |q|^2 + |r|^2 - 2 q.r, clamped at 0 (rounding can take it below).
TFG_HOST_DEVICE inline float SquaredDistance(float query_norm, float reference_norm, float dot) {
  const float value = (query_norm + reference_norm) - 2.0f * dot;
  return value > 0.0f ? value : 0.0f;
}

// Inserts `candidate` at `distance` into a list of k neighbours sorted by ascending distance
// (distances[k - 1] is the worst, which it must beat), shifting the worse ones down and
// dropping the last. Candidates arrive in ascending reference order, so an equal distance
// never displaces: ties stay with the lower reference.
TFG_HOST_DEVICE inline void InsertNeighbor(float* distances, std::int32_t* indices, int k,
                                           float distance, std::int64_t candidate) {
  int slot = k - 1;
  while (slot > 0 && distance < distances[slot - 1]) {
    distances[slot] = distances[slot - 1];
    indices[slot] = indices[slot - 1];
    --slot;
  }
  distances[slot] = distance;
  indices[slot] = static_cast<std::int32_t>(candidate);
}

}  // namespace tabforge::knn
