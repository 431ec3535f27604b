// Kernels of the CUDA neighbour search (knn_kernels.cu); pointers are device memory, launched
// on the default stream.
#pragma once

#include <cstdint>

namespace tabforge::knn::kernels {

// out[row] = |rows[row]|^2 for row-major `count` x `dims` rows.
void SquaredNorms(const float* rows, std::int64_t count, int dims, float* out);

// Lists per query kept while the tiles are searched: each takes a part of every tile's
// columns, so kListParts threads search for one query (MergeNeighbors joins them).
inline constexpr int kListParts = 8;

// Every query's list: k slots of distance +infinity and index -1.
void ResetNeighbors(std::int64_t queries, int k, float* best_distances, std::int32_t* best_indices);

// Merges one tile into the lists: dots[query + column * queries] = q . r for reference row
// first_reference + column (column < width); query q of this block is global query
// first_query + q, skipped against the reference of the same number when skip_self. Lists are
// kListParts blocks (one per part of the columns) of row-major queries x k, each ascending,
// ties to the lower reference.
void SelectNeighbors(const float* dots, std::int64_t queries, std::int64_t width,
                     const float* query_norms, const float* reference_norms,
                     std::int64_t first_reference, std::int64_t first_query, bool skip_self, int k,
                     float* best_distances, std::int32_t* best_indices);

// The most lists per query MergeNeighbors joins.
inline constexpr int kMaxListParts = 32;

// best = each query's k nearest from its `parts` lists (part-major, as SelectNeighbors and
// FusedSearch keep them): row-major queries x k, ascending, ties to the lower reference.
void MergeNeighbors(const float* part_distances, const std::int32_t* part_indices,
                    std::int64_t queries, int k, int parts, float* best_distances,
                    std::int32_t* best_indices);

// The widest rows FusedSearch takes (a query row is held in registers), and its queries per
// block (one per thread).
inline constexpr int kMaxFusedDims = 64;
inline constexpr int kFusedThreads = 128;

// Without a product matrix: each query's k nearest among all `references` rows (row-major,
// dims <= kMaxFusedDims) into `parts` lists (part p searches the p-th of `parts` equal runs of
// references), written part-major as SelectNeighbors writes them. Query q of this block is
// global query first_query + q, skipped against the reference of the same number when
// skip_self.
void FusedSearch(const float* query_rows, std::int64_t queries, int dims, const float* query_norms,
                 const float* reference, const float* reference_norms, std::int64_t references,
                 std::int64_t first_query, bool skip_self, int k, int parts, float* part_distances,
                 std::int32_t* part_indices);

}  // namespace tabforge::knn::kernels
