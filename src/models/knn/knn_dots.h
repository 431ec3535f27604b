// The KNN search's arithmetic and its offers to the neighbour lists: dot products as a small
// matrix product (queries x dims times dims x references) with few dimensions, where general
// matrix kernels spend much of their time packing, and, with fewer dimensions still, squared
// distances summed directly. Every sum runs in dimension order with the same roundings on every
// path, so the vector path (AVX2, picked at run time) and the portable path give the same bits
// and the same lists; the vector path compares eight distances with a list's worst at once.
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

// The most dimensions DirectSearch takes.
inline constexpr int kMaxDirectDims = 10;

// Offers a query the references [0, width) of a block whose first reference is `start` (held
// column-major, `stride` apart from one dimension to the next), in order: a reference goes into
// the query's list of its `keep` nearest (squared distances ascending in `distances`, references
// in `indices`; knn_list.h's InsertNeighbor) when its squared distance is below the list's
// worst, reference `skip` (-1: none) excepted. Distances are summed directly: over d in order,
// (query[d] - reference[d])^2, each square and addition rounded on its own (no fused
// multiply-add), for 1 <= dims <= kMaxDirectDims. Every path gives the same lists.
void DirectSearch(const float* query, int dims, const float* columns, std::int64_t stride,
                  std::int64_t width, std::int64_t start, std::int64_t skip, int keep,
                  float* distances, std::int32_t* indices);

// DirectSearch without vector instructions (for tests).
void PortableDirectSearch(const float* query, int dims, const float* columns, std::int64_t stride,
                          std::int64_t width, std::int64_t start, std::int64_t skip, int keep,
                          float* distances, std::int32_t* indices);

// Offers a query the references [0, width) of a block whose first reference is `start`, in
// order, at the squared distances knn_list.h's SquaredDistance makes of the query's squared
// norm, the references' (`norms`) and their dot products (`dots`, from Dots): as DirectSearch
// does, into the query's list of its `keep` nearest, reference `skip` (-1: none) excepted.
// Every path gives the same lists.
void SearchFromDots(float query_norm, const float* norms, const float* dots, std::int64_t width,
                    std::int64_t start, std::int64_t skip, int keep, float* distances,
                    std::int32_t* indices);

// SearchFromDots without vector instructions (for tests).
void PortableSearchFromDots(float query_norm, const float* norms, const float* dots,
                            std::int64_t width, std::int64_t start, std::int64_t skip, int keep,
                            float* distances, std::int32_t* indices);

// Whether Dots, DirectSearch and SearchFromDots take their AVX2 paths on this processor.
bool DotsUseAvx2();

// Dots without vector instructions, as processors without AVX2 run it (for tests).
void PortableDots(const float* query, std::int64_t count, int dims, const float* columns,
                  std::int64_t stride, std::int64_t width, float* out);

}  // namespace tabforge::knn
