#include "models/tree/histogram.h"

#include <algorithm>


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
// Rows per thread below which a parallel build costs more than it saves.
constexpr std::int64_t kRowsPerThread = 8192;

// cell += pair as one 128-bit load, add and store where SSE2 exists (x86-64 always has it).
#ifdef TFG_HISTOGRAM_SSE2
using Pair = __m128i;
inline Pair LoadPair(const HistogramBin* pair) {
  return _mm_loadu_si128(reinterpret_cast<const __m128i*>(pair));
}
inline void AddPair(HistogramBin* cell, Pair pair) {
  __m128i* at = reinterpret_cast<__m128i*>(cell);
  _mm_storeu_si128(at, _mm_add_epi64(_mm_loadu_si128(at), pair));
}
#else
using Pair = HistogramBin;
inline Pair LoadPair(const HistogramBin* pair) { return *pair; }
inline void AddPair(HistogramBin* cell, const Pair& pair) { *cell += pair; }
#endif

// One pass over the rows, each adding its pair to one cell per feature (the row's bins are
// contiguous, so each row costs one cache line of bins and one pair).
template <typename Bin, bool kAllFeatures>
void AccumulateRows(const Bin* matrix, int num_features, const std::int64_t* offsets,
                    const int* features, int listed, const std::int32_t* rows,
                    std::int64_t num_rows, const HistogramBin* pairs, HistogramBin* out) {
  for (std::int64_t index = 0; index < num_rows; ++index) {
    if (index + kPrefetchDistance < num_rows) {
      const std::int32_t ahead = rows[index + kPrefetchDistance];
      TFG_PREFETCH(matrix + static_cast<std::size_t>(ahead) * num_features);
      TFG_PREFETCH(pairs + ahead);
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
  }
}

template <typename Bin>
void AccumulateMatrix(const Bin* matrix, int num_features, const std::int64_t* offsets,
                      const std::vector<int>& features, const std::int32_t* rows,
                      std::int64_t num_rows, const HistogramBin* pairs, HistogramBin* out) {
  const int listed = static_cast<int>(features.size());
  if (listed == num_features) {
    AccumulateRows<Bin, true>(matrix, num_features, offsets, nullptr, 0, rows, num_rows, pairs,
                              out);
  } else {
    AccumulateRows<Bin, false>(matrix, num_features, offsets, features.data(), listed, rows,
                               num_rows, pairs, out);
  }
}

void Accumulate(const BinMatrix& bins, const HistogramLayout& layout,
                const std::vector<int>& features, const std::int32_t* rows,
                std::int64_t num_rows, const HistogramBin* pairs, HistogramBin* out) {
  const std::int64_t* offsets = layout.offsets.data();
  if (bins.wide()) {
    AccumulateMatrix(bins.bins16.data(), bins.num_features, offsets, features, rows, num_rows,
                     pairs, out);
  } else {
    AccumulateMatrix(bins.bins8.data(), bins.num_features, offsets, features, rows, num_rows,
                     pairs, out);
  }
}

}  // namespace

void BuildHistogram(const BinMatrix& bins, const HistogramLayout& layout,
                    const std::vector<int>& features, const std::int32_t* rows,
                    std::int64_t num_rows, const HistogramBin* pairs,
                    HistogramBin* histogram, HistogramScratch& scratch, int threads) {
  const std::int64_t total_bins = layout.total_bins();
  const int chunks = static_cast<int>(
      std::clamp<std::int64_t>(num_rows / kRowsPerThread, 1, std::max(threads, 1)));
  if (chunks == 1) {
    std::fill(histogram, histogram + total_bins, HistogramBin{});
    Accumulate(bins, layout, features, rows, num_rows, pairs, histogram);
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
      HistogramBin* out = chunk == 0 ? histogram
                                     : scratch.partials.data() +
                                           static_cast<std::size_t>(chunk - 1) * total_bins;
      std::fill(out, out + total_bins, HistogramBin{});
      const std::int64_t begin = num_rows * chunk / chunks;
      const std::int64_t end = num_rows * (chunk + 1) / chunks;
      Accumulate(bins, layout, features, rows + begin, end - begin, pairs, out);
    }
#pragma omp for schedule(static)
    for (std::int64_t bin = 0; bin < total_bins; ++bin) {
      for (int chunk = 1; chunk < chunks; ++chunk) {
        histogram[bin] += scratch.partials[static_cast<std::size_t>(chunk - 1) * total_bins + bin];
      }
    }
  }
}

void SubtractHistogram(const HistogramBin* parent, const HistogramBin* smaller,
                       HistogramBin* larger, std::int64_t total_bins) {
  for (std::int64_t bin = 0; bin < total_bins; ++bin) larger[bin] = parent[bin] - smaller[bin];
}

}  // namespace tabforge::tree
