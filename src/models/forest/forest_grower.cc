#include "models/forest/forest_grower.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <queue>

#include "core/context.h"
#include "core/error.h"
#include "core/random.h"
#include "models/forest/forest_split.h"
#include "models/tree/grower_loop.h"

namespace tabforge::forest {
namespace {

// Extremely randomized trees: nodes of at most this many rows send rows left by their bins'
// smallest values and search for the cut's bin only for the node's chosen split.
constexpr std::int64_t kSearchedNodeRows = 64;

using kernels::ChildNodeKey;
using kernels::kFeatureOrderStream;
using kernels::kThresholdStream;
constexpr double kPureEpsilon = 1e-12;

void SetBit(std::vector<std::uint32_t>& bits, int bin) {
  const auto word = static_cast<std::size_t>(bin / 32);
  if (bits.size() <= word) bits.resize(word + 1, 0);
  bits[word] |= 1u << (bin % 32);
}

bool TestBit(const std::vector<std::uint32_t>& bits, int bin) {
  const auto word = static_cast<std::size_t>(bin / 32);
  return word < bits.size() && ((bits[word] >> (bin % 32)) & 1u);
}

// One feature's bins, by row.
class BinColumn {
 public:
  BinColumn(const ColumnBins& bins, int feature)
      : narrow_(bins.wide() ? nullptr : bins.bins8.data() + Offset(bins, feature)),
        wide_(bins.wide() ? bins.bins16.data() + Offset(bins, feature) : nullptr) {}
  int operator()(std::int32_t row) const { return narrow_ != nullptr ? narrow_[row] : wide_[row]; }

  static std::size_t Offset(const ColumnBins& bins, int feature) {
    return static_cast<std::size_t>(feature) * static_cast<std::size_t>(bins.num_rows);
  }

 private:
  const std::uint8_t* narrow_;
  const std::uint16_t* wide_;
};

}  // namespace

ColumnBins ColumnBins::Of(const tree::BinMatrix& bins, int threads) {
  ColumnBins columns;
  columns.num_rows = bins.num_rows;
  columns.num_features = bins.num_features;
  const auto rows = static_cast<std::size_t>(bins.num_rows);
  const auto features = static_cast<std::size_t>(bins.num_features);
  // By blocks of rows: each block's rows are read once, in order, and written to every column.
  constexpr std::size_t kBlockRows = 4096;
  auto transpose = [&](const auto& from, auto& to) {
    to.resize(rows * features);
    const auto blocks = static_cast<std::int64_t>((rows + kBlockRows - 1) / kBlockRows);
    Context context;
    context.num_threads = threads;
#pragma omp parallel for num_threads(context.Threads()) schedule(static)
    for (std::int64_t block = 0; block < blocks; ++block) {
      const std::size_t first = static_cast<std::size_t>(block) * kBlockRows;
      const std::size_t last = std::min(rows, first + kBlockRows);
      for (std::size_t row = first; row < last; ++row) {
        for (std::size_t feature = 0; feature < features; ++feature) {
          to[feature * rows + row] = from[row * features + feature];
        }
      }
    }
  };
  if (bins.wide()) {
    transpose(bins.bins16, columns.bins16);
  } else {
    transpose(bins.bins8, columns.bins8);
  }
  return columns;
}

std::vector<std::vector<double>> BinLowestValues(const features::FeatureMatrix& features,
                                                 const tree::BinMatrix& bins,
                                                 const tree::BinMapper& mapper, int threads) {
  Context context;
  context.num_threads = threads;
  std::vector<std::vector<double>> lows(static_cast<std::size_t>(mapper.num_features()));
  const int numeric = features.num_numeric();
#pragma omp parallel for num_threads(context.Threads()) schedule(dynamic, 1)
  for (int feature = 0; feature < numeric; ++feature) {
    const tree::FeatureBins& feature_bins = mapper.feature(feature);
    std::vector<double>& feature_lows = lows[static_cast<std::size_t>(feature)];
    feature_lows.assign(static_cast<std::size_t>(feature_bins.num_bins),
                        std::numeric_limits<double>::infinity());
    auto column = [&](std::int64_t row) { return bins.Bin(feature, row); };
    const float* values = features.NumericColumn(feature);
    for (std::int64_t row = 0; row < features.num_rows; ++row) {
      if (std::isnan(values[row])) continue;
      // Infinite values count as the largest finite floats, so every draw stays finite.
      const double value =
          std::clamp(double(values[row]), -double(std::numeric_limits<float>::max()),
                     double(std::numeric_limits<float>::max()));
      double& low = feature_lows[static_cast<std::size_t>(column(row))];
      low = std::min(low, value);
    }
    for (int bin = 0; bin < feature_bins.missing_bin(); ++bin) {
      if (!std::isinf(feature_lows[bin])) continue;
      feature_lows[bin] = feature_bins.upper_bounds[std::max(bin - 1, 0)];
    }
  }
  return lows;
}

struct ForestTreeGrower::Candidate {
  tree::LeafSplit split;  // feature < 0: none
  double improvement = -std::numeric_limits<double>::infinity();
  std::int64_t left_rows = 0;  // distinct rows going left
  // Extremely randomized trees on a small node: the cut bin of the drawn threshold is searched
  // for once, for the node's best split, not for every feature that beats the best so far.
  const double* cut_lows = nullptr;  // non-null: split.threshold_bin is still to be searched
  int cut_low_bin = 0;
  int cut_high_bin = 0;
  double cut_drawn = 0;
};

// Per leaf of the tree being grown: its rows [begin, end) of order_, depth and pending split.
struct ForestTreeGrower::Leaf {
  std::int64_t begin = 0;
  std::int64_t end = 0;
  int depth = 0;
  std::uint64_t key = 0;  // the node's path from the root (ChildNodeKey)
  Candidate candidate;
  ConstantFlags constant;  // per feature: one value in this leaf (pending leaves only)
};

ForestTreeGrower::~ForestTreeGrower() = default;

ForestTreeGrower::ForestTreeGrower(const TrainingRows& data, const TreeSpec& spec)
    : data_(data), spec_(spec) {
  width_ = spec_.criterion == Criterion::kSquaredError ? 2 : spec_.num_classes;
  TFG_CHECK(data_.targets == nullptr || data_.target_units != nullptr,
            "regression rows need their targets in units");
  const int max_bins = data_.mapper->MaxBins();
  histogram_.assign(static_cast<std::size_t>(max_bins) * width_, 0.0);
  bin_rows_.assign(static_cast<std::size_t>(max_bins), 0);
  spare_histogram_.assign(histogram_.size(), 0.0);
  spare_bin_rows_.assign(bin_rows_.size(), 0);
  used_bits_.assign((static_cast<std::size_t>(max_bins) + 63) / 64, 0);
  left_.resize(static_cast<std::size_t>(width_));
  class_counts_.resize(static_cast<std::size_t>(width_));
  parent_missing_.resize(static_cast<std::size_t>(width_));
  right_.resize(static_cast<std::size_t>(width_));
  feature_order_.resize(static_cast<std::size_t>(data_.mapper->num_features()));
}

double ForestTreeGrower::Score(const double* sums) const {
  switch (spec_.criterion) {
    case Criterion::kSquaredError:
      return sums[0] > 0 ? sums[1] * sums[1] / sums[0] : 0.0;
    case Criterion::kGini: {
      double total = 0, squares = 0;
      for (int k = 0; k < width_; ++k) {
        total += sums[k];
        squares += sums[k] * sums[k];
      }
      return total > 0 ? squares / total : 0.0;
    }
    case Criterion::kEntropy: {
      double total = 0, terms = 0;
      for (int k = 0; k < width_; ++k) {
        if (sums[k] > 0) terms += sums[k] * std::log(sums[k]);
        total += sums[k];
      }
      return total > 0 ? terms - total * std::log(total) : 0.0;
    }
  }
  return 0.0;
}

void ForestTreeGrower::NodeSums(std::int64_t begin, std::int64_t end, double* sums) const {
  std::fill(sums, sums + width_, 0.0);
  for (std::int64_t at = begin; at < end; ++at) {
    const std::int32_t row = order_[at];
    const double weight = weights_[row];
    if (data_.targets != nullptr) {
      const double target = data_.targets[row];
      sums[0] += weight;
      sums[1] += weight * target;
    } else {
      sums[data_.classes[row]] += weight;
    }
  }
}

bool ForestTreeGrower::Keep(const double* left, std::int64_t left_rows, const double* parent,
                            double parent_score, int feature, bool categorical, bool default_left,
                            Candidate& best) {
  double* right = right_.data();
  for (int k = 0; k < width_; ++k) right[k] = parent[k] - left[k];
  const double improvement = Score(left) + Score(right) - parent_score;
  if (!(improvement > best.improvement)) return false;
  best.improvement = improvement;
  best.left_rows = left_rows;
  best.cut_lows = nullptr;
  tree::LeafSplit& split = best.split;
  split.gain = improvement;
  split.feature = feature;
  split.categorical = categorical;
  split.default_left = default_left;
  split.left_bins.clear();
  return true;
}

double ForestTreeGrower::TwoRowCeiling(const double* parent, double parent_score) {
  // Each row alone on the left, its sums as TryExtraTreesOf's sweep forms them when no row
  // is missing, scored as Keep scores them.
  double* left = left_.data();
  double* right = right_.data();
  double ceiling = -std::numeric_limits<double>::infinity();
  for (int index = 0; index < 2; ++index) {
    std::fill(left, left + width_, 0.0);
    const std::uint32_t weight = node_count_[static_cast<std::size_t>(index)];
    if (data_.targets != nullptr) {
      left[0] = static_cast<double>(std::uint64_t(weight));
      left[1] =
          static_cast<double>(node_units_[static_cast<std::size_t>(index)]) * data_.value_unit;
    } else {
      const std::int32_t label = node_class_[static_cast<std::size_t>(index)];
      if (width_ == 2) {
        const std::uint64_t ones = std::uint64_t(weight) * std::uint64_t(label != 0);
        left[0] = static_cast<double>(std::uint64_t(weight) - ones);
        left[1] = static_cast<double>(ones);
      } else {
        left[label] = static_cast<double>(std::uint64_t(weight));
      }
    }
    for (int k = 0; k < width_; ++k) right[k] = parent[k] - left[k];
    ceiling = std::max(ceiling, Score(left) + Score(right) - parent_score);
  }
  return ceiling;
}

bool ForestTreeGrower::RowsMissing(int feature, std::int64_t begin, std::int64_t end) const {
  const tree::FeatureBins& feature_bins = data_.mapper->feature(feature);
  if (feature_bins.categorical) return false;  // missing is a category of its own
  const int missing_bin = feature_bins.missing_bin();
  const BinColumn column(*data_.bins, feature);
  for (std::int64_t at = begin; at < end; ++at) {
    if (column(order_[at]) == missing_bin) return true;
  }
  return false;
}

bool ForestTreeGrower::TryExtraTrees(int feature, std::int64_t begin, std::int64_t end,
                                     const double* parent, double parent_score,
                                     std::uint64_t node_key, Candidate& best) {
  const ColumnBins& bins = *data_.bins;
  const std::size_t offset = BinColumn::Offset(bins, feature);
  // The passes read the node's bins through local pointers, one instantiation per cell width.
  return bins.wide() ? TryExtraTreesOf(bins.bins16.data() + offset, feature, begin, end, parent,
                                       parent_score, node_key, best)
                     : TryExtraTreesOf(bins.bins8.data() + offset, feature, begin, end, parent,
                                       parent_score, node_key, best);
}

template <typename Bin>
bool ForestTreeGrower::TryExtraTreesOf(const Bin* column_bins, int feature, std::int64_t begin,
                                       std::int64_t end, const double* parent, double parent_score,
                                       std::uint64_t node_key, Candidate& best) {
  const tree::FeatureBins& feature_bins = data_.mapper->feature(feature);
  const bool categorical = feature_bins.categorical;
  const int width = width_;
  const bool regression = data_.targets != nullptr;
  const std::int32_t* rows = order_.data() + begin;
  const std::uint32_t* counts = node_count_.data();
  const double* values = node_value_.data();
  const std::int32_t* classes = node_class_.data();
  const std::int64_t count = end - begin;
  // The first pass gathers the node's bins into node_bins_, which the second reads in order.
  std::uint16_t* node_bins = node_bins_.data();
  auto bin_at = [&](std::int64_t index) -> int { return node_bins[index]; };
  // The node's smallest and largest value bins: no histogram is needed, only one threshold. A
  // categorical feature's bins are all values (missing is a category: its last bin).
  const int missing_bin = categorical ? -1 : feature_bins.missing_bin();
  int low_bin = feature_bins.num_bins, high_bin = -1;
  std::int64_t missing_rows = 0;
  for (std::int64_t index = 0; index < count; ++index) {
    const int bin = column_bins[rows[index]];
    node_bins[index] = static_cast<std::uint16_t>(bin);
    if (bin == missing_bin) {
      ++missing_rows;
    } else {
      low_bin = std::min(low_bin, bin);
      high_bin = std::max(high_bin, bin);
    }
  }
  // One value with missing ones is not constant: scikit-learn's RandomSplitter draws the
  // missing side and splits them from the values when it is the right.
  const bool has_values = high_bin >= 0;
  if (!has_values || (low_bin == high_bin && missing_rows == 0)) return false;
  // A threshold drawn uniformly between the node's smallest and largest value (scikit-learn's
  // draw; the values are the bins' smallest training values), cutting after the first bin whose
  // next bin's smallest value reaches it; with one value, values against missing.
  int threshold = high_bin;
  const double* lows = nullptr;
  double drawn = 0;
  bool threshold_known = true;
  if (categorical) {
    // Categories at or below a code drawn between the node's smallest and largest go left.
    threshold = kernels::DrawnCategoryBin(
        low_bin, high_bin, KeyedUniform(threshold_key_, node_key * 4099 + std::uint64_t(feature)));
  } else if (low_bin < high_bin) {
    lows = (*data_.bin_lows)[static_cast<std::size_t>(feature)].data();
    const double low = lows[low_bin];
    const double high = lows[high_bin];
    drawn =
        low + (high - low) * KeyedUniform(threshold_key_, node_key * 4099 + std::uint64_t(feature));
    // The search for the cut's bin is a chain of dependent loads: a small node instead sends
    // each row left by its own bin's smallest value (bin b > low_bin is at most the cut exactly
    // when lows[b] is below the draw, the smallest values rising with the bins), and the cut is
    // searched for only for the split the node chooses (FindSplit).
    if (count > kSearchedNodeRows) {
      threshold = kernels::DrawnCutBin(lows, low_bin, high_bin, drawn);
    } else {
      threshold_known = false;
    }
  }
  auto sweep = [&](auto goes_left) {
    double* left = left_.data();
    double* missing = parent_missing_.data();
    std::fill(left, left + width, 0.0);
    std::fill(missing, missing + width, 0.0);
    std::int64_t left_rows = 0;
    if (missing_rows == 0 && regression) {
      // Without branches on the drawn threshold (they would be mispredicted about half the
      // time). The weights are whole bootstrap counts and the weighted targets whole counts of
      // units (QuantizeTargets): both sums are kept in integers (one-cycle adds, no chain of
      // floating-point latencies), whose doubles equal the floating-point sums exactly.
      const std::int64_t* units = node_units_.data();
      std::uint64_t left_weight = 0;
      std::int64_t left_units = 0;
      for (std::int64_t index = 0; index < count; ++index) {
        const bool to_left = goes_left(bin_at(index));
        const std::int64_t take = -static_cast<std::int64_t>(to_left);  // all ones or zero
        left_rows += to_left;
        left_weight += std::uint64_t(counts[index]) * to_left;
        left_units += units[index] & take;
      }
      left[0] = static_cast<double>(left_weight);
      left[1] = static_cast<double>(left_units) * data_.value_unit;
    } else if (missing_rows == 0 && width == 2) {
      // Two classes, branch-free: the weights are whole bootstrap counts, summed as integers
      // (their doubles are the same numbers), and class 0's is the total less class 1's.
      std::uint64_t left_weight = 0, left_ones = 0;
      for (std::int64_t index = 0; index < count; ++index) {
        const bool to_left = goes_left(bin_at(index));
        const std::uint64_t weight = std::uint64_t(counts[index]) * to_left;
        left_rows += to_left;
        left_weight += weight;
        left_ones += weight * std::uint64_t(classes[index] != 0);
      }
      left[0] = static_cast<double>(left_weight - left_ones);
      left[1] = static_cast<double>(left_ones);
    } else if (missing_rows == 0) {
      // Per-class bootstrap counts as integers, as above.
      std::uint64_t* class_counts = class_counts_.data();
      std::fill(class_counts, class_counts + width, 0);
      for (std::int64_t index = 0; index < count; ++index) {
        const bool to_left = goes_left(bin_at(index));
        left_rows += to_left;
        class_counts[classes[index]] += std::uint64_t(counts[index]) * to_left;
      }
      for (int k = 0; k < width; ++k) left[k] = static_cast<double>(class_counts[k]);
    } else {
      for (std::int64_t index = 0; index < count; ++index) {
        const int bin = bin_at(index);
        const bool to_left = bin != missing_bin && goes_left(bin);
        double* into = bin == missing_bin ? missing : to_left ? left : nullptr;
        if (into == nullptr) continue;
        left_rows += to_left;
        const double weight = counts[index];
        if (regression) {
          into[0] += weight;
          into[1] += weight * values[index];
        } else {
          into[classes[index]] += weight;
        }
      }
    }
    return left_rows;
  };
  std::int64_t left_rows = threshold_known
                               ? sweep([threshold](int bin) { return bin <= threshold; })
                               : sweep([lows, low_bin, drawn](int bin) {
                                   return (bin == low_bin) | (lows[bin] < drawn);
                                 });
  double* left = left_.data();
  double* missing = parent_missing_.data();
  // Missing values go to a side drawn at random (scikit-learn's rule: a coin toss, not the better
  // side; with one value and missing values left, every row is on one side); without any, rows
  // missing at prediction follow the larger side.
  bool missing_left = false;
  if (missing_rows > 0) {
    missing_left = kernels::MissingGoLeft(threshold_key_, node_key * 4099 + std::uint64_t(feature));
    if (missing_left) {
      for (int k = 0; k < width; ++k) left[k] += missing[k];
      left_rows += missing_rows;
    }
  } else if (!categorical) {
    missing_left = left_rows > count - left_rows;
  }
  if (left_rows < spec_.min_samples_leaf || count - left_rows < spec_.min_samples_leaf ||
      !Keep(left, left_rows, parent, parent_score, feature, categorical, missing_left, best)) {
    return true;
  }
  if (categorical) {
    // The left set: the node's categories at or below the cut (others go right).
    std::uint64_t* bits = used_bits_.data();
    for (std::int64_t index = 0; index < count; ++index) {
      const int bin = bin_at(index);
      bits[bin >> 6] |= std::uint64_t(bin <= threshold) << (bin & 63);
    }
    const int words = threshold / 64 + 1;
    for (int word = 0; word < words; ++word) {
      for (std::uint64_t set = bits[word]; set != 0; set &= set - 1) {
        SetBit(best.split.left_bins, word * 64 + std::countr_zero(set));
      }
      bits[word] = 0;
    }
    best.split.threshold_bin = 0;
  } else if (threshold_known) {
    best.split.threshold_bin = threshold;
  } else {
    best.cut_lows = lows;
    best.cut_low_bin = low_bin;
    best.cut_high_bin = high_bin;
    best.cut_drawn = drawn;
  }
  return true;
}

bool ForestTreeGrower::TryFeature(int feature, std::int64_t begin, std::int64_t end,
                                  const double* parent, double parent_score, Candidate& best) {
  const tree::FeatureBins& feature_bins = data_.mapper->feature(feature);
  const int width = width_;
  const bool regression = data_.targets != nullptr;
  const BinColumn column(*data_.bins, feature);
  double* histogram = histogram_.data();
  std::int64_t* bin_rows = bin_rows_.data();
  used_.clear();
  const std::int64_t count = end - begin;
  const int num_bins = feature_bins.num_bins;
  auto bin_at = [&](std::int64_t index) { return column(order_[begin + index]); };
  if (count >= 32 && count >= 2 * std::int64_t(num_bins)) {
    // Large nodes: alternate rows go to two copies of the sums, so consecutive rows of one bin
    // do not wait on each other's stores; the copies are merged, and the bins in use found, by
    // one scan of the feature's bins.
    double* spare = spare_histogram_.data();
    std::int64_t* spare_rows = spare_bin_rows_.data();
    auto add = [&](std::int64_t index, double* sums, std::int64_t* rows_of) {
      const int bin = bin_at(index);
      ++rows_of[bin];
      const double weight = node_count_[index];
      if (regression) {
        sums[bin * 2] += weight;
        sums[bin * 2 + 1] += weight * node_value_[index];
      } else {
        sums[bin * width + node_class_[index]] += weight;
      }
    };
    std::int64_t index = 0;
    for (; index + 1 < count; index += 2) {
      add(index, histogram, bin_rows);
      add(index + 1, spare, spare_rows);
    }
    if (index < count) add(index, histogram, bin_rows);
    for (int bin = 0; bin < num_bins; ++bin) {
      if (spare_rows[bin] != 0) {
        bin_rows[bin] += spare_rows[bin];
        spare_rows[bin] = 0;
        for (int k = 0; k < width; ++k) {
          histogram[bin * width + k] += spare[bin * width + k];
          spare[bin * width + k] = 0.0;
        }
      }
      if (bin_rows[bin] != 0) used_.push_back(bin);
    }
  } else {
    // The bins in use as bits, read back in ascending order: sorting them cost as much as the
    // search on deep nodes of many bins (California housing RF at 4095 bins: std::sort 17% of
    // the fit).
    std::uint64_t* bits = used_bits_.data();
    for (std::int64_t index = 0; index < count; ++index) {
      const int bin = bin_at(index);
      ++bin_rows[bin];
      bits[bin >> 6] |= std::uint64_t(1) << (bin & 63);
      const double weight = node_count_[index];
      if (regression) {
        histogram[bin * 2] += weight;
        histogram[bin * 2 + 1] += weight * node_value_[index];
      } else {
        histogram[bin * width + node_class_[index]] += weight;
      }
    }
    const int words = (num_bins + 63) / 64;
    for (int word = 0; word < words; ++word) {
      std::uint64_t set = bits[word];
      bits[word] = 0;
      while (set != 0) {
        used_.push_back(word * 64 + std::countr_zero(set));
        set &= set - 1;
      }
    }
  }
  int missing_bin = -1;  // set aside below; cleared with the others
  auto clear = [&]() {
    auto zero = [&](int bin) {
      bin_rows[bin] = 0;
      std::fill(histogram + bin * width, histogram + (bin + 1) * width, 0.0);
    };
    for (int bin : used_) zero(bin);
    if (missing_bin >= 0) zero(missing_bin);
  };
  if (used_.size() < 2) {
    clear();
    return false;
  }
  // The node's bins in sweep order; a numeric feature's missing bin is set aside (it goes to
  // whichever side gains more).
  const bool categorical = feature_bins.categorical;
  // used_ is in bin order either way. Categories are cut in their bins' order (sorted by
  // value: BinningOptions::categories_sorted), anywhere: what scikit-learn's forests do with
  // ordinal codes, and AutoGluon's forests with its category codes. Ordering them by the node's
  // target mean instead finds the best of all subsets (Breiman et al. 1984), but those splits
  // generalised worse (Adult RF test AUC 0.9052 against 0.9062, XT 0.8843 against 0.8876, in
  // frequency order).
  if (!categorical) {
    if (used_.back() == feature_bins.missing_bin()) {
      missing_bin = used_.back();
      used_.pop_back();
    }
  }
  const int values = static_cast<int>(used_.size());
  // Cut points: after used_[cut] for cut in [0, last]; with missing values, "every value left,
  // missing right" is a cut too.
  const int last = missing_bin >= 0 ? values - 1 : values - 2;
  const std::int64_t missing_rows = missing_bin >= 0 ? bin_rows[missing_bin] : 0;
  double* left = left_.data();
  for (int missing_left = 0; missing_left < (missing_bin >= 0 ? 2 : 1); ++missing_left) {
    std::fill(left, left + width, 0.0);
    std::int64_t left_rows = 0;
    if (missing_left) {
      for (int k = 0; k < width; ++k) left[k] = histogram[missing_bin * width + k];
      left_rows = missing_rows;
    }
    for (int cut = 0; cut <= last; ++cut) {
      if (cut < values) {
        const int bin = used_[cut];
        for (int k = 0; k < width; ++k) left[k] += histogram[bin * width + k];
        left_rows += bin_rows[bin];
      }
      // Every row on one side is no split.
      if (cut == values - 1 && missing_left) break;
      if (left_rows < spec_.min_samples_leaf) continue;
      if (count - left_rows < spec_.min_samples_leaf) break;
      if (Keep(left, left_rows, parent, parent_score, feature, categorical, missing_left, best)) {
        tree::LeafSplit& split = best.split;
        if (categorical) {
          for (int at = 0; at <= cut; ++at) SetBit(split.left_bins, used_[at]);
          split.threshold_bin = 0;
        } else if (cut + 1 < values) {
          // Midway (in bins) between the node's values on either side, as scikit-learn
          // splits midway between values.
          split.threshold_bin = (used_[cut] + used_[cut + 1] - 1) / 2;
          split.threshold_bin = std::max(split.threshold_bin, used_[cut]);
        } else {
          split.threshold_bin = used_[cut];
        }
      }
    }
  }
  clear();
  return true;
}

ForestTreeGrower::Candidate ForestTreeGrower::FindSplit(std::int64_t begin, std::int64_t end,
                                                        int depth, std::uint64_t node_key,
                                                        ConstantFlags& constant) {
  Candidate best;
  const std::int64_t count = end - begin;
  if (count < spec_.min_samples_split || count < 2 * spec_.min_samples_leaf) return best;
  if (spec_.max_depth > 0 && depth >= spec_.max_depth) return best;
  // The node's weights and classes (or targets) in row order, read once per feature tried,
  // and its sums.
  parent_.assign(static_cast<std::size_t>(width_), 0.0);
  double* parent = parent_.data();
  node_count_.resize(static_cast<std::size_t>(count));
  if (data_.targets != nullptr) {
    node_value_.resize(static_cast<std::size_t>(count));
    node_units_.resize(static_cast<std::size_t>(count));
    // The sums in local integers: kept in memory they would wait on each other's stores (the
    // compiler cannot tell the node arrays from them), and in doubles on each other's additions.
    // The targets are whole counts of a unit (QuantizeTargets), so the integer sums' doubles are
    // the floating-point sums exactly, and a node is pure when its targets are all one count.
    std::uint64_t total_weight = 0;
    std::int64_t total_units = 0;
    long long lowest = data_.target_units[order_[begin]], highest = lowest;
    for (std::int64_t index = 0; index < count; ++index) {
      const std::int32_t row = order_[begin + index];
      const std::uint32_t weight = weights_[row];
      const long long units = data_.target_units[row];
      node_count_[index] = weight;
      node_value_[index] = data_.targets[row];
      node_units_[index] = std::int64_t(weight) * units;
      total_weight += weight;
      total_units += std::int64_t(weight) * units;
      lowest = std::min(lowest, units);
      highest = std::max(highest, units);
    }
    parent[0] = static_cast<double>(total_weight);
    parent[1] = static_cast<double>(total_units) * data_.value_unit;
    if (lowest == highest) return best;
  } else {
    node_class_.resize(static_cast<std::size_t>(count));
    if (width_ == 2) {
      // Two classes: whole bootstrap counts summed as integers (one-cycle adds, no chain
      // through memory), which the double sums equal exactly.
      std::uint64_t total = 0, ones = 0;
      for (std::int64_t index = 0; index < count; ++index) {
        const std::int32_t row = order_[begin + index];
        const std::uint32_t weight = weights_[row];
        const std::int32_t label = data_.classes[row];
        node_count_[index] = weight;
        node_class_[index] = label;
        total += weight;
        ones += label != 0 ? weight : 0u;
      }
      parent[0] = static_cast<double>(total - ones);
      parent[1] = static_cast<double>(ones);
    } else {
      for (std::int64_t index = 0; index < count; ++index) {
        const std::int32_t row = order_[begin + index];
        const double weight = weights_[row];
        node_count_[index] = weights_[row];
        node_class_[index] = data_.classes[row];
        parent[data_.classes[row]] += weight;
      }
    }
    double total_weight = 0, largest = 0;
    for (int k = 0; k < width_; ++k) {
      total_weight += parent[k];
      largest = std::max(largest, parent[k]);
    }
    if (largest >= total_weight) return best;  // pure
  }
  const double parent_score = Score(parent);
  // Features in a random order (Fisher-Yates, drawn as far as needed). As in scikit-learn,
  // max_features counts the features drawn, constant ones included; the search goes on past it
  // until a valid split is found.
  const int features = static_cast<int>(feature_order_.size());
  for (int feature = 0; feature < features; ++feature) feature_order_[feature] = feature;
  // Extremely randomized trees on a node of two rows: a split sends one row each way, and
  // without missing values its improvement is one of two numbers (which row goes left). Once
  // the best split reaches the larger, no feature both rows hold a value of can beat it: those
  // are not tried. (The features' constant flags would only serve the children, which are
  // leaves.)
  const bool two_rows = spec_.extra_trees && count == 2;
  const double two_row_ceiling =
      two_rows ? TwoRowCeiling(parent, parent_score) : std::numeric_limits<double>::infinity();
  for (int at = 0; at < features; ++at) {
    if (at >= spec_.features_per_node && best.split.valid()) break;
    const std::uint64_t pick =
        at + KeyedBelow(order_key_, node_key * 65537 + at, std::uint64_t(features - at));
    std::swap(feature_order_[at], feature_order_[pick]);
    const int feature = feature_order_[at];
    if (constant[feature]) continue;
    if (two_rows && best.split.valid() && !(two_row_ceiling > best.improvement) &&
        !RowsMissing(feature, begin, end)) {
      continue;
    }
    const bool varies =
        spec_.extra_trees ? TryExtraTrees(feature, begin, end, parent, parent_score, node_key, best)
                          : TryFeature(feature, begin, end, parent, parent_score, best);
    if (!varies) constant.Set(feature);
  }
  if (best.split.valid() && best.cut_lows != nullptr) {
    best.split.threshold_bin =
        kernels::DrawnCutBin(best.cut_lows, best.cut_low_bin, best.cut_high_bin, best.cut_drawn);
    best.cut_lows = nullptr;
  }
  if (best.split.valid()) {
    // scikit-learn's min_impurity_decrease: the weighted impurity decrease per root weight;
    // its entropy is in bits.
    double decrease = best.improvement / root_weight_;
    if (spec_.criterion == Criterion::kEntropy) decrease /= std::log(2.0);
    if (decrease + kPureEpsilon < spec_.min_impurity_decrease) best = Candidate{};
  }
  return best;
}

tree::Tree ForestTreeGrower::Grow(std::vector<std::int32_t>& rows, const std::uint32_t* weights,
                                  std::uint64_t seed, std::uint64_t tree_index,
                                  std::vector<double>& leaf_outputs) {
  seed_ = seed;
  tree_index_ = tree_index;
  order_key_ = StreamKey(seed, kFeatureOrderStream ^ Mix64(tree_index));
  threshold_key_ = StreamKey(seed, kThresholdStream ^ Mix64(tree_index));
  weights_ = weights;
  order_.swap(rows);
  spare_.resize(order_.size());
  node_bins_.resize(order_.size());
  const auto num_rows = static_cast<std::int64_t>(order_.size());
  {
    std::vector<double> sums(static_cast<std::size_t>(width_));
    NodeSums(0, num_rows, sums.data());
    root_weight_ = data_.targets != nullptr ? sums[0] : 0.0;
    if (data_.targets == nullptr) {
      for (double value : sums) root_weight_ += value;
    }
  }
  tree::Tree tree(0.0);
  // The leaves' records live in scratch kept across trees: with a leaf limit, room for the
  // limit's leaves is made once per grower, not per tree.
  std::vector<Leaf>& leaves = leaves_;
  leaves.clear();
  leaves.emplace_back();
  if (spec_.max_leaf_nodes > 0) {
    leaves.reserve(
        static_cast<std::size_t>(std::min<std::int64_t>(spec_.max_leaf_nodes, num_rows)));
  }
  leaves[0].end = num_rows;
  leaves[0].constant = ConstantFlags(static_cast<int>(feature_order_.size()));
  leaves[0].candidate = FindSplit(0, num_rows, 0, leaves[0].key, leaves[0].constant);
  // Depth-first without a leaf limit (a stack); best-first with one (largest improvement,
  // ties to the lower leaf).
  const bool best_first = spec_.max_leaf_nodes > 0;
  // The queue holds (improvement, leaf): a leaf's improvement is fixed while it waits, and the
  // heap compares without reaching into the leaves.
  using Pending = std::pair<double, int>;
  auto before = [](const Pending& a, const Pending& b) {
    return a.first < b.first || (a.first == b.first && a.second > b.second);
  };
  std::priority_queue<Pending, std::vector<Pending>, decltype(before)> queue(before);
  std::vector<int> stack;
  auto push = [&](int leaf) {
    if (!leaves[leaf].candidate.split.valid()) return;
    if (best_first) {
      queue.push({leaves[leaf].candidate.improvement, leaf});
    } else {
      stack.push_back(leaf);
    }
  };
  push(0);
  while (best_first ? !queue.empty() : !stack.empty()) {
    if (best_first && tree.num_leaves() >= spec_.max_leaf_nodes) break;
    int chosen;
    if (best_first) {
      chosen = queue.top().second;
      queue.pop();
    } else {
      chosen = stack.back();
      stack.pop_back();
    }
    const tree::LeafSplit split = std::move(leaves[chosen].candidate.split);
    const tree::FeatureBins& feature_bins = data_.mapper->feature(split.feature);
    const int missing_bin = feature_bins.missing_bin();
    // Stable partition: left rows stay in front, in order; right rows follow.
    const std::int64_t begin = leaves[chosen].begin;
    const std::int64_t end = leaves[chosen].end;
    std::int64_t left_write = begin;
    std::int64_t right_write = 0;
    const BinColumn column(*data_.bins, split.feature);
    // Branch-free: each row is written to both sides' next slots and only its side's count
    // advances (left writes never pass the read position).
    auto partition = [&](auto goes_left) {
      for (std::int64_t at = begin; at < end; ++at) {
        const std::int32_t row = order_[at];
        const bool left = goes_left(column(row));
        order_[left_write] = row;
        spare_[right_write] = row;
        left_write += left;
        right_write += !left;
      }
    };
    if (split.categorical) {
      partition([&](int bin) { return TestBit(split.left_bins, bin); });
    } else {
      const int threshold = split.threshold_bin;
      const bool default_left = split.default_left;
      partition([&](int bin) { return bin == missing_bin ? default_left : bin <= threshold; });
    }
    std::copy(spare_.begin(), spare_.begin() + right_write, order_.begin() + left_write);
    TFG_CHECK(left_write - begin == leaves[chosen].candidate.left_rows,
              "forest partition sent {} rows left, the split's counts say {}", left_write - begin,
              leaves[chosen].candidate.left_rows);
    const int new_leaf = tree::CommitSplit(tree, chosen, split, *data_.mapper);
    Leaf right;
    right.begin = left_write;
    right.end = end;
    right.depth = leaves[chosen].depth + 1;
    right.key = ChildNodeKey(leaves[chosen].key, 1);
    right.constant = leaves[chosen].constant;
    leaves[chosen].end = left_write;
    leaves[chosen].depth += 1;
    leaves[chosen].key = ChildNodeKey(leaves[chosen].key, 0);
    leaves.push_back(std::move(right));
    leaves[chosen].candidate = FindSplit(begin, left_write, leaves[chosen].depth,
                                         leaves[chosen].key, leaves[chosen].constant);
    leaves[new_leaf].candidate = FindSplit(left_write, end, leaves[new_leaf].depth,
                                           leaves[new_leaf].key, leaves[new_leaf].constant);
    // Only pending leaves need their flags.
    if (!leaves[chosen].candidate.split.valid()) leaves[chosen].constant = ConstantFlags();
    if (!leaves[new_leaf].candidate.split.valid()) {
      leaves[new_leaf].constant = ConstantFlags();
    }
    // Depth-first: the left child is split next.
    push(new_leaf);
    push(chosen);
  }
  // Leaf outputs from the leaves' rows (room made once: letter's 26 classes make these
  // megabytes a tree).
  leaf_outputs.reserve(leaf_outputs.size() +
                       leaves.size() * (data_.targets != nullptr ? 1 : std::size_t(width_)));
  std::vector<double> sums(static_cast<std::size_t>(width_));
  for (const Leaf& leaf : leaves) {
    NodeSums(leaf.begin, leaf.end, sums.data());
    if (data_.targets != nullptr) {
      leaf_outputs.push_back(sums[0] > 0 ? sums[1] / sums[0] : 0.0);
    } else {
      double total = 0;
      for (double value : sums) total += value;
      for (double value : sums) leaf_outputs.push_back(total > 0 ? value / total : 0.0);
    }
  }
  order_.swap(rows);
  tree.Compact();
  return tree;
}

}  // namespace tabforge::forest
