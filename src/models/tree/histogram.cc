#include "models/tree/histogram.h"

#include <algorithm>

namespace tabforge::tree {

HistogramLayout::HistogramLayout(const BinMapper& mapper) {
  offsets.assign(static_cast<std::size_t>(mapper.num_features()) + 1, 0);
  for (int feature = 0; feature < mapper.num_features(); ++feature) {
    offsets[feature + 1] = offsets[feature] + mapper.feature(feature).num_bins;
  }
}

namespace {

template <typename Bin>
void AccumulateFeature(const Bin* column, const std::int32_t* rows, std::int64_t num_rows,
                       const std::int8_t* gradients, const std::int64_t* hessians,
                       HistogramBin* out) {
  for (std::int64_t index = 0; index < num_rows; ++index) {
    const std::int32_t row = rows[index];
    HistogramBin& bin = out[column[row]];
    bin.gradient += gradients[row];
    bin.hessian += hessians[row];
    bin.count += 1;
  }
}

}  // namespace

void BuildHistogram(const BinMatrix& bins, const HistogramLayout& layout,
                    const std::vector<std::uint8_t>& active, const std::int32_t* rows,
                    std::int64_t num_rows, const std::int8_t* gradients,
                    const std::int64_t* hessians, HistogramBin* histogram, int threads) {
  const int features = bins.num_features;
  // Small leaves are summed on one thread: a parallel region costs more than it saves there.
#pragma omp parallel for num_threads(threads) schedule(dynamic, 1) if (num_rows >= 20000)
  for (int feature = 0; feature < features; ++feature) {
    HistogramBin* out = histogram + layout.offsets[feature];
    std::fill(out, histogram + layout.offsets[feature + 1], HistogramBin{});
    if (!active[feature]) continue;
    const std::size_t column = static_cast<std::size_t>(feature) * bins.num_rows;
    if (bins.wide()) {
      AccumulateFeature(bins.bins16.data() + column, rows, num_rows, gradients, hessians, out);
    } else {
      AccumulateFeature(bins.bins8.data() + column, rows, num_rows, gradients, hessians, out);
    }
  }
}

void SubtractHistogram(const HistogramBin* parent, const HistogramBin* smaller,
                       HistogramBin* larger, std::int64_t total_bins) {
  for (std::int64_t bin = 0; bin < total_bins; ++bin) {
    larger[bin].gradient = parent[bin].gradient - smaller[bin].gradient;
    larger[bin].hessian = parent[bin].hessian - smaller[bin].hessian;
    larger[bin].count = parent[bin].count - smaller[bin].count;
  }
}

}  // namespace tabforge::tree
