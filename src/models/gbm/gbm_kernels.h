// The GBM's CUDA kernels (gbm_kernels.cu), called by the CUDA rounds (gbm_cuda.cc). Plain
// C++17 (the kernels' dialect): device pointers, sizes and POD parameters only.
#pragma once

#include <cstddef>
#include <cstdint>

#include "models/gbm/gbm_objective.h"
#include "models/tree/histogram.h"

namespace tabforge::tree::kernels {
struct RoundScales;
}

namespace tabforge::gbm::kernels {

using tree::kernels::RoundScales;

// A tree node as the routing kernel reads it (Tree::LeafOfBins's fields).
struct RouteNode {
  int feature;
  int categorical;
  int default_left;
  int threshold_bin;
  int missing_bin;
  int bitset_begin;
  int bitset_end;
  int left;
  int right;
};

// Gradients and fixed hessians of every row (RowGradients): single output into the pairs'
// hessians with the largest |gradient| as float bits in *max_bits; multiclass into
// `class_hessians` (output-major, as the gradients).
void ComputeGradients(const RowGradientParams& objective, const float* scores, const double* labels,
                      const double* weights, float* gradients, std::uint32_t* class_hessians,
                      tree::GradientPair* pairs, std::int64_t rows, unsigned int* max_bits);

// The largest |gradient| of `rows` gradients, as float bits into *max_bits (zeroed first).
void MaxAbsGradient(const float* gradients, std::int64_t rows, unsigned int* max_bits);

// The round's scales from the largest |gradient| (*max_bits, as float bits): gradients are
// quantized to integers in [-level, level], hessians are fixed point at 1 / hessian_fixed.
void ComputeScales(const unsigned int* max_bits, std::int64_t level, double hessian_fixed,
                   RoundScales* scales);

// pairs[r].gradient = QuantizeGradient(...) at scales->gradient_scale; with class_hessians,
// pairs[r].hessian too.
void Quantize(const float* gradients, const std::uint32_t* class_hessians,
              const RoundScales* scales, std::int64_t level, std::uint64_t seed,
              std::uint64_t stream, tree::GradientPair* pairs, std::int64_t rows);

// in_bag[r] = the row is in the round's bag; `bag` receives the bagged rows in order and
// *bag_count their number (device).
std::size_t BagScratchBytes(std::int64_t rows);
void DrawBag(std::uint64_t seed, std::uint64_t stream, double fraction, std::uint8_t* in_bag,
             std::int32_t* bag, int* bag_count, std::int64_t rows, void* scratch,
             std::size_t scratch_bytes);

// Adds leaf values times `learning_rate` to the scores of the rows grouped by leaf (positions
// ranges[2l, 2l + 1) of `order`, `rows` in all), for output `output` of `outputs`; `chunks` is
// the grower's work list over them (DeviceTreeGrower::device_leaf_chunks), `leaf_count` the
// leaves' count on the device, at most `most_leaves`.
void AddLeafScores(const std::int32_t* order, const long long* ranges, const int* chunks,
                   const int* leaf_count, int most_leaves, std::int64_t rows, const double* values,
                   double learning_rate, float* scores, int outputs, int output);

// Routes the rows outside the bag through the tree by their bins and adds their leaf's value.
void AddOutOfBagScores(const std::uint8_t* bins8, const std::uint16_t* bins16, int stride,
                       const std::uint8_t* in_bag, const RouteNode* nodes,
                       const std::uint32_t* bitsets, const double* values, float* scores,
                       int outputs, int output, std::int64_t rows);

// scores[i] = init[i % outputs].
void InitScores(float* scores, const float* init, int outputs, std::int64_t count);

}  // namespace tabforge::gbm::kernels
