#include "models/tree/histogram.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "core/error.h"

#if defined(__SSE2__) || defined(_M_X64)
#include <emmintrin.h>
#define TFG_HISTOGRAM_SSE2 1
#endif

#if defined(__GNUC__) || defined(__clang__)
#define TFG_PREFETCH(address) __builtin_prefetch(address)
#else
#define TFG_PREFETCH(address) ((void)(address))
#endif

namespace tabforge::tree {

double RowHessianScale(double max_abs) {
  if (!(max_abs > 0)) return 1.0;
  const int exponent = static_cast<int>(std::floor(std::log2(4294967295.0 / max_abs)));
  double scale = std::ldexp(1.0, exponent);
  while (max_abs * scale >= 4294967295.0) scale *= 0.5;  // rounding at the boundary
  return scale;
}

std::int64_t MaxGradientLevel(std::int64_t rows) {
  return ((std::int64_t(1) << 31) - 1) / std::max<std::int64_t>(rows, 1);
}

HistogramLayout::HistogramLayout(const BinMapper& mapper) {
  offsets.assign(static_cast<std::size_t>(mapper.num_features()) + 1, 0);
  for (int feature = 0; feature < mapper.num_features(); ++feature) {
    offsets[feature + 1] = offsets[feature] + mapper.feature(feature).num_bins;
  }
}

namespace {

// Rows ahead whose bins and pairs are prefetched (the rows of a leaf are scattered).
constexpr std::int64_t kPrefetchDistance = 16;
// Rows per thread below which splitting the rows costs more than it saves (each chunk zeroes
// and adds up a whole partial histogram).
constexpr std::int64_t kRowsPerThread = 2048;
// Rows below which even splitting the features among threads (no partials) does not pay.
constexpr std::int64_t kMinFeatureSplitRows = 256;

// cell += pair as one 128-bit load, add and store where SSE2 exists (x86-64 always has it).
#ifdef TFG_HISTOGRAM_SSE2
using Pair = __m128i;
inline Pair LoadPair(const GradientPair* pair) {
  return _mm_set_epi64x(static_cast<long long>(pair->hessian),
                        static_cast<long long>(pair->gradient) * (1LL << 32) + 1);
}
inline Pair LoadPair(const HistogramBin* cell) {
  return _mm_loadu_si128(reinterpret_cast<const __m128i*>(cell));
}
inline void AddPair(HistogramBin* cell, Pair pair) {
  __m128i* at = reinterpret_cast<__m128i*>(cell);
  _mm_storeu_si128(at, _mm_add_epi64(_mm_loadu_si128(at), pair));
}
#else
using Pair = HistogramBin;
inline Pair LoadPair(const GradientPair* pair) { return pair->Cell(); }
inline Pair LoadPair(const HistogramBin* cell) { return *cell; }
inline void AddPair(HistogramBin* cell, const Pair& pair) { *cell += pair; }
#endif

// One pass over the rows, each adding its pair to one cell per dense feature (the row's bins
// are contiguous, so each row costs one cache line of bins and one pair) and to the cells of
// its sparse entries.
template <typename Bin, bool kAllFeatures, bool kSparse, typename Cells>
void AccumulateRows(const Bin* matrix, int num_features, const std::int64_t* offsets,
                    const int* features, int listed, const std::int64_t* sparse_begin,
                    const std::uint32_t* sparse_cells, const std::int32_t* rows,
                    std::int64_t num_rows, const Cells* pairs, HistogramBin* out) {
  for (std::int64_t index = 0; index < num_rows; ++index) {
    if (index + kPrefetchDistance < num_rows) {
      const std::int32_t ahead = rows[index + kPrefetchDistance];
      TFG_PREFETCH(matrix + static_cast<std::size_t>(ahead) * num_features);
      TFG_PREFETCH(pairs + ahead);
      if constexpr (kSparse) TFG_PREFETCH(sparse_begin + ahead);
    }
    const std::int32_t row = rows[index];
    const Bin* row_bins = matrix + static_cast<std::size_t>(row) * num_features;
    const Pair pair = LoadPair(pairs + row);
    if constexpr (kAllFeatures) {
      for (int feature = 0; feature < num_features; ++feature) {
        AddPair(out + offsets[feature] + row_bins[feature], pair);
      }
    } else {
      for (int at = 0; at < listed; ++at) {
        const int feature = features[at];
        AddPair(out + offsets[feature] + row_bins[feature], pair);
      }
    }
    if constexpr (kSparse) {
      for (std::int64_t at = sparse_begin[row]; at < sparse_begin[row + 1]; ++at) {
        AddPair(out + sparse_cells[at], pair);
      }
    }
  }
}

template <typename Bin, typename Cells>
void AccumulateMatrix(const Bin* matrix, const HistogramSource& source, const int* features,
                      int listed, bool with_sparse, const std::int32_t* rows, std::int64_t num_rows,
                      const Cells* pairs, HistogramBin* out) {
  const int num_features = source.bins->num_features;
  const std::int64_t* offsets = source.layout->offsets.data();
  const std::int64_t* begin = source.profile->sparse_begin.data();
  const std::uint32_t* cells = source.profile->sparse_cells.data();
  if (with_sparse) {
    AccumulateRows<Bin, false, true>(matrix, num_features, offsets, features, listed, begin, cells,
                                     rows, num_rows, pairs, out);
  } else if (listed == num_features) {
    AccumulateRows<Bin, true, false>(matrix, num_features, offsets, features, listed, begin, cells,
                                     rows, num_rows, pairs, out);
  } else {
    AccumulateRows<Bin, false, false>(matrix, num_features, offsets, features, listed, begin, cells,
                                      rows, num_rows, pairs, out);
  }
}

// Sums the rows into `out` for the dense features [features, features + listed) and, when
// `with_sparse`, for all the sparse ones.
template <typename Cells>
void Accumulate(const HistogramSource& source, const int* features, int listed, bool with_sparse,
                const std::int32_t* rows, std::int64_t num_rows, const Cells* pairs,
                HistogramBin* out) {
  if (source.bins->wide()) {
    AccumulateMatrix(source.bins->bins16.data(), source, features, listed, with_sparse, rows,
                     num_rows, pairs, out);
  } else {
    AccumulateMatrix(source.bins->bins8.data(), source, features, listed, with_sparse, rows,
                     num_rows, pairs, out);
  }
}

template <typename Cells>
void Accumulate(const HistogramSource& source, const std::int32_t* rows, std::int64_t num_rows,
                const Cells* pairs, HistogramBin* out) {
  Accumulate(source, source.dense_features.data(), static_cast<int>(source.dense_features.size()),
             !source.sparse_features.empty(), rows, num_rows, pairs, out);
}

// The sparse features' dominant bins: the total minus the feature's other bins.
void CompleteSparse(const HistogramSource& source, const HistogramBin& total,
                    HistogramBin* histogram) {
  for (int feature : source.sparse_features) {
    HistogramBin* cells = histogram + source.layout->offsets[feature];
    const int bins =
        static_cast<int>(source.layout->offsets[feature + 1] - source.layout->offsets[feature]);
    const int dominant = source.profile->most_frequent[feature];
    HistogramBin rest;
    for (int bin = 0; bin < bins; ++bin) {
      if (bin != dominant) rest += cells[bin];
    }
    cells[dominant] = total - rest;
  }
}

}  // namespace

BinProfile BinProfile::Analyze(const BinMatrix& bins, const HistogramLayout& layout) {
  const int features = bins.num_features;
  const std::int64_t rows = bins.num_rows;
  BinProfile profile;
  profile.splittable.assign(static_cast<std::size_t>(features), 0);
  profile.most_frequent.assign(static_cast<std::size_t>(features), -1);
  std::vector<std::int64_t> counts(static_cast<std::size_t>(layout.total_bins()), 0);
  for (std::int64_t row = 0; row < rows; ++row) {
    for (int feature = 0; feature < features; ++feature) {
      ++counts[layout.offsets[feature] + bins.Bin(feature, row)];
    }
  }
  std::vector<std::uint8_t> sparse(static_cast<std::size_t>(features), 0);
  for (int feature = 0; feature < features; ++feature) {
    const auto first = counts.begin() + layout.offsets[feature];
    const auto last = counts.begin() + layout.offsets[feature + 1];
    const auto dominant = std::max_element(first, last);
    profile.splittable[feature] = *dominant < rows;
    if (profile.splittable[feature] && 2 * *dominant >= rows) {
      sparse[feature] = 1;
      profile.most_frequent[feature] = static_cast<int>(dominant - first);
    }
  }
  if (std::find(sparse.begin(), sparse.end(), 1) == sparse.end()) return profile;
  TFG_CHECK(layout.total_bins() <= std::int64_t(UINT32_MAX), "histogram of {} cells",
            layout.total_bins());
  profile.sparse_begin.assign(static_cast<std::size_t>(rows) + 1, 0);
  for (std::int64_t row = 0; row < rows; ++row) {
    std::int64_t entries = 0;
    for (int feature = 0; feature < features; ++feature) {
      entries += sparse[feature] && bins.Bin(feature, row) != profile.most_frequent[feature];
    }
    profile.sparse_begin[row + 1] = profile.sparse_begin[row] + entries;
  }
  profile.sparse_cells.resize(static_cast<std::size_t>(profile.sparse_begin[rows]));
  std::size_t at = 0;
  for (std::int64_t row = 0; row < rows; ++row) {
    for (int feature = 0; feature < features; ++feature) {
      const int bin = bins.Bin(feature, row);
      if (sparse[feature] && bin != profile.most_frequent[feature]) {
        profile.sparse_cells[at++] = static_cast<std::uint32_t>(layout.offsets[feature] + bin);
      }
    }
  }
  if (profile.sparse_cells.empty()) profile.sparse_begin.clear();
  return profile;
}

namespace {

template <typename Cells>
void BuildHistogramOf(const HistogramSource& source, const std::int32_t* rows,
                      std::int64_t num_rows, const Cells* pairs, const HistogramBin& total,
                      HistogramBin* histogram, HistogramScratch& scratch, int threads) {
  const std::int64_t total_bins = source.layout->total_bins();
  const int chunks = static_cast<int>(
      std::clamp<std::int64_t>(num_rows / kRowsPerThread, 1, std::max(threads, 1)));
  if (chunks == 1) {
    std::fill(histogram, histogram + total_bins, HistogramBin{});
    const int listed = static_cast<int>(source.dense_features.size());
    const int groups = static_cast<int>(std::min<std::int64_t>(std::max(threads, 1), listed));
    if (groups < 2 || num_rows < kMinFeatureSplitRows) {
      Accumulate(source, rows, num_rows, pairs, histogram);
    } else {
      // Too few rows for partial histograms: the threads share the features instead, each
      // summing every row into its own features' cells (the sparse ones go with the first).
#pragma omp parallel for num_threads(groups) schedule(static, 1)
      for (int group = 0; group < groups; ++group) {
        const int first = listed * group / groups;
        const int last = listed * (group + 1) / groups;
        Accumulate(source, source.dense_features.data() + first, last - first,
                   group == 0 && !source.sparse_features.empty(), rows, num_rows, pairs, histogram);
      }
    }
    CompleteSparse(source, total, histogram);
    return;
  }
  // Chunk 0 sums into `histogram`, chunk c > 0 into partial c - 1; then the partials are
  // added in, in parallel over bins.
  const std::size_t partial_cells = static_cast<std::size_t>(chunks - 1) * total_bins;
  if (scratch.partials.size() < partial_cells) scratch.partials.resize(partial_cells);
#pragma omp parallel num_threads(chunks)
  {
#pragma omp for schedule(static, 1)
    for (int chunk = 0; chunk < chunks; ++chunk) {
      HistogramBin* out =
          chunk == 0 ? histogram
                     : scratch.partials.data() + static_cast<std::size_t>(chunk - 1) * total_bins;
      std::fill(out, out + total_bins, HistogramBin{});
      const std::int64_t begin = num_rows * chunk / chunks;
      const std::int64_t end = num_rows * (chunk + 1) / chunks;
      Accumulate(source, rows + begin, end - begin, pairs, out);
    }
#pragma omp for schedule(static)
    for (std::int64_t bin = 0; bin < total_bins; ++bin) {
      for (int chunk = 1; chunk < chunks; ++chunk) {
        histogram[bin] += scratch.partials[static_cast<std::size_t>(chunk - 1) * total_bins + bin];
      }
    }
  }
  CompleteSparse(source, total, histogram);
}

}  // namespace

void BuildHistogram(const HistogramSource& source, const std::int32_t* rows, std::int64_t num_rows,
                    const GradientPair* pairs, const HistogramBin& total, HistogramBin* histogram,
                    HistogramScratch& scratch, int threads) {
  BuildHistogramOf(source, rows, num_rows, pairs, total, histogram, scratch, threads);
}

void BuildHistogram(const HistogramSource& source, const std::int32_t* rows, std::int64_t num_rows,
                    const HistogramBin* cells, const HistogramBin& total, HistogramBin* histogram,
                    HistogramScratch& scratch, int threads) {
  BuildHistogramOf(source, rows, num_rows, cells, total, histogram, scratch, threads);
}

void SubtractHistogram(const HistogramBin* parent, const HistogramBin* smaller,
                       HistogramBin* larger, std::int64_t total_bins) {
  for (std::int64_t bin = 0; bin < total_bins; ++bin) larger[bin] = parent[bin] - smaller[bin];
}

}  // namespace tabforge::tree
