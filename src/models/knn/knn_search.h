// The CUDA twin of NearestNeighbors (knn.h), declared for the KNN model: distances from a fused
// kernel (rows of up to 64 values) or from cuBLAS products over tiles of reference rows, each
// query keeping its k nearest (ties to the lower reference row, as on the CPU). Distances are
// computed in float on either device with different summation orders, so neighbours whose
// distances agree to rounding may come back in another order; every other neighbour is the
// CPU's. In CPU-only builds
// (knn_no_cuda.cc) it returns false and says why.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tabforge::knn {

// The most neighbours the CUDA search keeps per query; more are searched on the CPU.
constexpr int kMaxDeviceNeighbors = 64;

// Same contract as NearestNeighbors, on CUDA device `device_id` using at most
// `memory_fraction` of its free memory. Returns false (and `why`, the reason in words) when
// the search did not run there: no CUDA build, no usable device, k above
// kMaxDeviceNeighbors, or the reference rows do not fit. `device_name` gets "cuda:ID NAME".
bool DeviceNearestNeighbors(const std::vector<float>& reference, std::int64_t references,
                            const std::vector<float>& query, std::int64_t queries, int dims, int k,
                            bool skip_self, int device_id, double memory_fraction,
                            std::vector<std::int32_t>& indices, std::vector<float>& distances,
                            std::string& why, std::string& device_name);

}  // namespace tabforge::knn
