// The CPU's rounds over merged rows (tree::RowGroups). Rows of equal bins reach the same leaf of
// every tree, so they always hold the same scores, and those that also share their label and
// weight (a "class" of rows here) share every gradient and hessian: the objective runs once per
// class. The trees grow on one row per group of equal bins, whose cell sums its members'
// quantized gradients, each still rounded with its own row's draw as CpuRoundTrainer rounds
// it, and whose fixed-point gradient sums theirs. Integer sums do not depend on how they are
// grouped, so the trees, leaf values and model bytes are those of the unmerged rounds.
#include <algorithm>
#include <bit>
#include <cmath>
#include <tuple>
#include <utility>

#include "core/portable_math.h"
#include "core/random.h"
#include "models/gbm/gbm_rounds.h"

namespace tabforge::gbm {
namespace {

class MergedRoundTrainer final : public RoundTrainer {
 public:
  MergedRoundTrainer(const RoundSetup& setup, tree::RowGroups groups)
      : setup_(setup),
        params_(*setup.params),
        rows_(setup.bins->num_rows),
        outputs_(setup.outputs),
        groups_(std::move(groups)),
        grower_(groups_.bins, *setup.mapper, setup.grower, setup.threads),
        cells_(static_cast<std::size_t>(groups_.num_groups())),
        fixed_gradients_(cells_.size()),
        in_bag_(setup.bagging ? static_cast<std::size_t>(rows_) : 0, 1) {
    // Each group's members ordered by (label, weight, row); runs of equal label and weight bits
    // are its classes.
    auto label_bits = [&](std::int32_t row) { return std::bit_cast<std::uint64_t>(Label(row)); };
    auto weight_bits = [&](std::int32_t row) { return std::bit_cast<std::uint64_t>(Weight(row)); };
    const std::int64_t groups_count = groups_.num_groups();
    group_classes_.assign(static_cast<std::size_t>(groups_count) + 1, 0);
    for (std::int64_t group = 0; group < groups_count; ++group) {
      const auto first = groups_.members.begin() + groups_.begin[group];
      const auto last = groups_.members.begin() + groups_.begin[group + 1];
      std::sort(first, last, [&](std::int32_t a, std::int32_t b) {
        const auto key_a = std::tuple(label_bits(a), weight_bits(a), a);
        const auto key_b = std::tuple(label_bits(b), weight_bits(b), b);
        return key_a < key_b;
      });
      for (auto at = first; at != last; ++at) {
        if (at == first || label_bits(*at) != label_bits(at[-1]) ||
            weight_bits(*at) != weight_bits(at[-1])) {
          class_begin_.push_back(at - groups_.members.begin());
        }
      }
      group_classes_[group + 1] = static_cast<std::int64_t>(class_begin_.size());
    }
    class_begin_.push_back(rows_);
    const std::size_t classes = class_begin_.size() - 1;
    scores_.resize(classes * outputs_);
    gradients_.resize(classes * outputs_);
    hessians_.resize(classes * outputs_);
    for (int k = 0; k < outputs_; ++k) {
      std::fill(scores_.begin() + k * classes, scores_.begin() + (k + 1) * classes,
                static_cast<float>(setup_.init_score[k]));
    }
  }

  void TrainRound(int round, std::vector<tree::Tree>& trees) override {
    const int threads = setup_.threads;
    const std::int64_t classes = num_classes();
    const int outputs = outputs_;
    if (setup_.bagging && round % params_.bagging_freq == 0) DrawBag(round);
      // Gradients and fixed-point hessians of each class, output-major.
#pragma omp parallel num_threads(threads) if (rows_ >= kParallelRows)
    {
      std::vector<double> exps(static_cast<std::size_t>(outputs));
      std::vector<float> class_scores(static_cast<std::size_t>(outputs));
#pragma omp for schedule(static)
      for (std::int64_t at = 0; at < classes; ++at) {
        const std::int32_t row = groups_.members[class_begin_[at]];
        for (int k = 0; k < outputs; ++k) class_scores[k] = scores_[k * classes + at];
        RowGradients(setup_.objective, class_scores.data(), Label(row), Weight(row),
                     gradients_.data() + at, hessians_.data() + at, classes, exps.data());
      }
    }
    const std::vector<std::uint8_t> active = SampleTreeFeatures(
        setup_.mapper->num_features(), params_.feature_fraction, params_.seed, round);
    for (int k = 0; k < outputs; ++k) {
      const float* class_gradient = gradients_.data() + k * classes;
      double max_gradient = 0;
      for (std::int64_t at = 0; at < classes; ++at) {
        max_gradient = std::max(max_gradient, std::fabs(double(class_gradient[at])));
      }
      tree::QuantizedGradients quantized;
      quantized.gradient_scale = max_gradient > 0 ? max_gradient / double(setup_.level) : 1.0;
      quantized.hessian_scale = 1.0 / setup_.objective.hessian_fixed;
      quantized.max_abs_gradient = max_gradient;
      MergeGradients(k, kQuantizeStream + std::uint64_t(round) * outputs + k, quantized);
      tree::Tree tree = grower_.Grow(setup_.bagging ? &group_bag_ : nullptr, quantized, active,
                                     params_.seed ^ (std::uint64_t(round) * outputs + k));
      const int num_leaves = tree.num_leaves();
      float* class_scores = scores_.data() + k * classes;
      if (const double quantile = RenewalQuantile(params_); quantile > 0) {
        for (int leaf = 0; leaf < num_leaves; ++leaf) {
          std::vector<std::pair<double, double>> residuals;
          for (std::int32_t group : grower_.LeafRows(leaf)) {
            ForEachClass(group, [&](std::int64_t at) {
              for (std::int64_t index = class_begin_[at]; index < class_begin_[at + 1]; ++index) {
                const std::int32_t row = groups_.members[index];
                if (setup_.bagging && !in_bag_[row]) continue;
                residuals.push_back({Label(row) - class_scores[at], Weight(row)});
              }
            });
          }
          if (!residuals.empty()) tree.leaf_values()[leaf] = WeightedQuantile(residuals, quantile);
        }
      }
      for (double& value : tree.leaf_values()) value *= params_.learning_rate;
      const std::vector<double>& leaf_values = tree.leaf_values();
      // Groups in the tree take their leaf's value from the grower; the rest (out of the bag)
      // are routed through the tree by their bins.
      for (int leaf = 0; leaf < num_leaves; ++leaf) {
        for (std::int32_t group : grower_.LeafRows(leaf)) {
          ForEachClass(group, [&](std::int64_t at) {
            class_scores[at] = AddToScore(class_scores[at], leaf_values[leaf]);
          });
        }
      }
      if (setup_.bagging) {
        std::size_t next = 0;
        for (std::int64_t group = 0; group < groups_.num_groups(); ++group) {
          if (next < group_bag_.size() && group_bag_[next] == group) {
            ++next;
            continue;
          }
          const double value = leaf_values[tree.LeafOfBins(groups_.bins, group)];
          ForEachClass(group, [&](std::int64_t at) {
            class_scores[at] = AddToScore(class_scores[at], value);
          });
        }
      }
      trees.push_back(std::move(tree));
    }
  }

 private:
  double Label(std::int32_t row) const { return setup_.labels[row]; }
  double Weight(std::int32_t row) const {
    return setup_.weights.empty() ? 1.0 : setup_.weights[row];
  }
  std::int64_t num_classes() const { return static_cast<std::int64_t>(class_begin_.size()) - 1; }
  template <typename Visit>
  void ForEachClass(std::int64_t group, Visit visit) const {
    for (std::int64_t at = group_classes_[group]; at < group_classes_[group + 1]; ++at) visit(at);
  }

  // The round's bag, drawn per row as CpuRoundTrainer draws it, and the groups with a member
  // in it.
  void DrawBag(int round) {
    bag_rows_ = 0;
    for (std::int64_t row = 0; row < rows_; ++row) {
      in_bag_[row] = RandomUniform(params_.seed, kBagStream + std::uint64_t(round), row) <
                     params_.bagging_fraction;
      bag_rows_ += in_bag_[row];
    }
    group_bag_.clear();
    for (std::int64_t group = 0; group < groups_.num_groups(); ++group) {
      for (std::int64_t at = groups_.begin[group]; at < groups_.begin[group + 1]; ++at) {
        if (in_bag_[groups_.members[at]]) {
          group_bag_.push_back(static_cast<std::int32_t>(group));
          break;
        }
      }
    }
  }

  // Output k's cell of each group: its bagged members' gradients quantized with their own
  // rows' draws, and its class hessians; and the sum of their exact gradients in fixed point on
  // the scale the grower gives the bag's rows.
  void MergeGradients(int k, std::uint64_t stream, tree::QuantizedGradients& quantized) {
    const std::int64_t classes = num_classes();
    const float* class_gradient = gradients_.data() + k * classes;
    const std::uint32_t* class_hessian = hessians_.data() + k * classes;
    const double fixed =
        tree::FixedPointScale(quantized.max_abs_gradient, setup_.bagging ? bag_rows_ : rows_);
    // The member positions are cut into one equal range per thread (a group can hold most of
    // the rows). A range writes the sums of the groups that start in it; the part of a group
    // that started in an earlier range is carried and added after.
    const int chunks = rows_ >= kParallelRows ? std::max(setup_.threads, 1) : 1;
    const std::uint64_t key = StreamKey(params_.seed, stream);
    const std::int64_t level = setup_.level;
    std::vector<std::int64_t> carried_group(static_cast<std::size_t>(chunks), -1);
    std::vector<tree::HistogramBin> carried_cell(static_cast<std::size_t>(chunks));
    std::vector<std::int64_t> carried_sum(static_cast<std::size_t>(chunks), 0);
#pragma omp parallel for num_threads(chunks) schedule(static, 1)
    for (int chunk = 0; chunk < chunks; ++chunk) {
      const std::int64_t first = rows_ * chunk / chunks;
      const std::int64_t last = rows_ * (chunk + 1) / chunks;
      if (first == last) continue;
      std::int64_t at = std::upper_bound(class_begin_.begin(), class_begin_.end(), first) -
                        class_begin_.begin() - 1;
      std::int64_t group = groups_.group_of[groups_.members[first]];
      bool carried = groups_.begin[group] < first;
      tree::HistogramBin cell;
      std::int64_t sum = 0;
      auto store = [&]() {
        if (carried) {
          carried_group[chunk] = group;
          carried_cell[chunk] = cell;
          carried_sum[chunk] = sum;
        } else {
          cells_[group] = cell;
          fixed_gradients_[group] = sum;
        }
        cell = {};
        sum = 0;
        carried = false;
      };
      for (std::int64_t index = first; index < last;) {
        const float gradient = class_gradient[at];
        const std::uint32_t hessian = class_hessian[at];
        const std::int64_t fixed_gradient = RoundToInteger(double(gradient) * fixed);
        const double scaled = gradient / quantized.gradient_scale;
        const std::int64_t end = std::min(class_begin_[at + 1], last);
        for (; index < end; ++index) {
          const std::int32_t row = groups_.members[index];
          if (setup_.bagging && !in_bag_[row]) continue;
          cell += tree::HistogramBin::Row(
              QuantizeScaledGradient(scaled, level, key, static_cast<std::uint64_t>(row)), hessian);
          sum += fixed_gradient;
        }
        if (index < class_begin_[at + 1]) break;  // the range ends inside this class
        if (++at == group_classes_[group + 1]) {
          store();
          ++group;
        }
      }
      if (group < groups_.num_groups() && groups_.begin[group] < last &&
          groups_.begin[group + 1] > last) {
        store();  // the last group goes on into the next range
      }
    }
    for (int chunk = 0; chunk < chunks; ++chunk) {
      if (carried_group[chunk] < 0) continue;
      cells_[carried_group[chunk]] += carried_cell[chunk];
      fixed_gradients_[carried_group[chunk]] += carried_sum[chunk];
    }
    quantized.cells = cells_.data();
    quantized.fixed_gradients = fixed_gradients_.data();
    quantized.gradient_fixed = fixed;
  }

  const RoundSetup& setup_;
  const GbmParams& params_;
  std::int64_t rows_;
  int outputs_;
  tree::RowGroups groups_;
  tree::TreeGrower grower_;
  std::vector<std::int64_t> class_begin_;      // class c's rows: members[begin[c], begin[c + 1])
  std::vector<std::int64_t> group_classes_;    // group g's classes: [at[g], at[g + 1])
  std::vector<float> scores_;                  // per output and class, output-major
  std::vector<float> gradients_;               // per output and class
  std::vector<std::uint32_t> hessians_;        // fixed point, per output and class
  std::vector<tree::HistogramBin> cells_;      // per group
  std::vector<std::int64_t> fixed_gradients_;  // per group
  std::vector<std::uint8_t> in_bag_;           // per row
  std::int64_t bag_rows_ = 0;
  std::vector<std::int32_t> group_bag_;  // groups with a member in the bag, ascending
};

}  // namespace

std::unique_ptr<RoundTrainer> MakeMergedRoundTrainer(const RoundSetup& setup,
                                                     tree::RowGroups groups) {
  return std::make_unique<MergedRoundTrainer>(setup, std::move(groups));
}

}  // namespace tabforge::gbm
