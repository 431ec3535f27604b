// Dot products for the KNN search: a small matrix product (queries x dims times dims x
// references) with few dimensions, where general matrix kernels spend much of their time
// packing. Every dot product sums its dims terms in order with fused multiply-adds, so the
// vector path (AVX2 with FMA, picked at run time) and the portable path give the same bits.
#pragma once

#include <cstdint>

namespace tabforge::knn {

// out[i * width + j] = sum over d of query[i * dims + d] * columns[d * stride + j], for i <
// count and j < width: queries row-major, references column-major (a dimension's values for
// consecutive references are consecutive, `stride` apart from one dimension to the next).
void Dots(const float* query, std::int64_t count, int dims, const float* columns,
          std::int64_t stride, std::int64_t width, float* out);

// sum over d of values[d]^2, in order with fused multiply-adds (Dots' arithmetic).
float SquaredNorm(const float* values, int dims);

// Whether Dots takes its AVX2 path on this processor.
bool DotsUseAvx2();

// Dots without vector instructions, as processors without AVX2 run it (for tests).
void PortableDots(const float* query, std::int64_t count, int dims, const float* columns,
                  std::int64_t stride, std::int64_t width, float* out);

}  // namespace tabforge::knn
