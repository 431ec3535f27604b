#include "models/forest/forest.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <exception>
#include <memory>
#include <optional>
#include <thread>

#include "core/context.h"
#include "core/error.h"
#include "core/random.h"
#include "core/serialize.h"
#include "device/cuda_device.h"
#include "models/forest/forest_batch.h"
#include "models/forest/forest_grower.h"
#include "models/forest/forest_split.h"

namespace tabforge::forest {
namespace {

using kernels::kBootstrapStream;
constexpr std::string_view kModelMagic = "tabforge-forest";
constexpr std::uint32_t kModelVersion = 1;
// The trees of the GPU's first batch, grown alone under a time limit or a leaf limit (Fit).
constexpr int kPilotTrees = 4;

// The bootstrap of tree `tree_index`: `draws` rows drawn with replacement; counts[row] is how
// often row was drawn.
void Bootstrap(std::uint64_t seed, std::uint64_t tree_index, std::int64_t rows, std::int64_t draws,
               std::vector<std::uint32_t>& counts) {
  counts.assign(static_cast<std::size_t>(rows), 0);
  const std::uint64_t stream = kBootstrapStream ^ Mix64(tree_index);
  for (std::int64_t draw = 0; draw < draws; ++draw) {
    ++counts[RandomBelow(seed, stream, static_cast<std::uint64_t>(draw),
                         static_cast<std::uint64_t>(rows))];
  }
}

}  // namespace

ForestModel ForestModel::Fit(const features::FeatureMatrix& train, std::span<const double> labels,
                             int num_classes, const ForestParams& params, int threads,
                             const Deadline& deadline, std::vector<double>* out_of_bag) {
  params.Validate();
  const bool regression = num_classes <= 1;
  if (regression != (params.criterion == Criterion::kSquaredError)) {
    throw InvalidInput(
        regression ? "forest criterion gini/entropy is for classification; a regression forest "
                     "uses criterion squared_error"
                   : "forest criterion squared_error is for regression; a classification forest "
                     "uses gini or entropy");
  }
  const std::int64_t rows = train.num_rows;
  if (rows < 1) throw InvalidInput("a forest needs at least one training row");
  TFG_CHECK(static_cast<std::int64_t>(labels.size()) == rows, "{} labels for {} rows",
            labels.size(), rows);
  Context context;
  context.num_threads = threads;
  const int thread_count = context.Threads();

  ForestModel model;
  model.num_outputs_ = regression ? 1 : num_classes;
  // A fit that may use the GPU starts the CUDA runtime while the data is binned: its first call
  // on a device sets up the device's context (H100, 1M rows, 300 trees: device set-up 0.21-0.32 s
  // became 0.02 s, the fit 2.78 / 2.93 s became 2.57 / 2.64 s).
  std::optional<device::CudaWarmUp> warm_up;
  if (params.device != "cpu" && !params.extra_trees) warm_up.emplace(params.gpu_device_id);
  Stopwatch bin_watch;
  tree::BinningOptions binning;
  binning.max_bin = params.max_bin;
  binning.min_data_in_bin = params.min_data_in_bin;
  binning.seed = params.seed;
  binning.categories_sorted = true;
  model.mapper_ = tree::BinMapper::Fit(train, binning, thread_count);
  const tree::BinMatrix bins = tree::ApplyBins(model.mapper_, train, thread_count);
  const std::vector<std::vector<double>> bin_lows =
      params.extra_trees ? BinLowestValues(train, bins, model.mapper_, thread_count)
                         : std::vector<std::vector<double>>(
                               static_cast<std::size_t>(model.mapper_.num_features()));
  model.report_.bin_seconds = bin_watch.Seconds();

  Stopwatch train_watch;
  std::vector<std::int32_t> classes;
  std::vector<double> targets;
  double target_mean = 0;
  if (regression) {
    for (std::int64_t row = 0; row < rows; ++row) {
      if (!std::isfinite(labels[row])) {
        throw InvalidInput(fmt::format(
            "regression target of training row {} is {}: forests need finite targets (drop or "
            "impute that row)",
            row + 1, labels[row]));
      }
    }
    for (double label : labels) target_mean += label;
    target_mean /= double(rows);
    targets.resize(static_cast<std::size_t>(rows));
    for (std::int64_t row = 0; row < rows; ++row) targets[row] = labels[row] - target_mean;
  } else {
    classes.resize(static_cast<std::size_t>(rows));
    for (std::int64_t row = 0; row < rows; ++row) {
      const auto label = static_cast<std::int32_t>(labels[row]);
      TFG_CHECK(label >= 0 && label < num_classes, "class {} outside 0..{}", label,
                num_classes - 1);
      classes[row] = label;
    }
  }
  TrainingRows data;
  data.mapper = &model.mapper_;
  data.bin_lows = &bin_lows;
  data.classes = regression ? nullptr : classes.data();
  data.targets = regression ? targets.data() : nullptr;
  TreeSpec spec;
  spec.criterion = params.criterion;
  spec.num_classes = model.num_outputs_;
  spec.features_per_node =
      FeaturesPerNode(params.max_features, !regression, model.mapper_.num_features());
  spec.max_depth = params.max_depth;
  spec.min_samples_split = params.min_samples_split;
  spec.min_samples_leaf = params.min_samples_leaf;
  spec.max_leaf_nodes = params.max_leaf_nodes;
  spec.min_impurity_decrease = params.min_impurity_decrease;
  spec.extra_trees = params.extra_trees;

  const int wanted = params.n_estimators;
  std::vector<tree::Tree> trees(static_cast<std::size_t>(wanted));
  std::vector<std::vector<double>> outputs(static_cast<std::size_t>(wanted));
  std::vector<std::uint8_t> grown(static_cast<std::size_t>(wanted), 0);
  // Out-of-bag bookkeeping: which rows each tree trained on, one bit per row.
  std::vector<std::vector<std::uint64_t>> in_bag(out_of_bag != nullptr ? wanted : 0);
  const auto draws = std::max<std::int64_t>(1, std::llround(params.max_samples * double(rows)));
  // Regression targets become whole multiples of a unit, so every weighted sum is exact in any
  // order (the GPU's atomics then give the CPU's bits); the unit is at most 2^-51 times the
  // largest centred target times max(draws, rows) (QuantizeTargets).
  std::vector<long long> target_units;
  double value_unit = 1;
  if (regression) {
    value_unit = QuantizeTargets(targets, std::max(draws, rows), &target_units);
    data.target_units = target_units.data();
    data.value_unit = value_unit;
  }
  // Tree `tree_index`'s rows (distinct, ascending) and their counts; its in-bag bits when kept.
  auto draw_rows = [&](int tree_index, std::vector<std::uint32_t>& counts,
                       std::vector<std::int32_t>& tree_rows) {
    tree_rows.clear();
    if (params.bootstrap) {
      Bootstrap(params.seed, std::uint64_t(tree_index), rows, draws, counts);
      for (std::int64_t row = 0; row < rows; ++row) {
        if (counts[row] > 0) tree_rows.push_back(static_cast<std::int32_t>(row));
      }
    } else {
      counts.assign(static_cast<std::size_t>(rows), 1);
      tree_rows.resize(static_cast<std::size_t>(rows));
      for (std::int64_t row = 0; row < rows; ++row) tree_rows[row] = static_cast<std::int32_t>(row);
    }
    if (out_of_bag != nullptr) {
      std::vector<std::uint64_t>& bits = in_bag[tree_index];
      bits.assign(static_cast<std::size_t>((rows + 63) / 64), 0);
      for (std::int32_t row : tree_rows) bits[row / 64] |= std::uint64_t(1) << (row % 64);
    }
  };
  std::atomic<bool> out_of_time{false};
  // An error in one tree stops the others and is rethrown here (exceptions cannot leave an
  // OpenMP region).
  std::exception_ptr failure;
  std::atomic<bool> failed{false};
  bool on_device = false;
  if (params.device != "cpu" && params.extra_trees) {
    // Measured on an H100 (1M synthetic rows, 300 trees, 15000 leaves): the batches did not
    // finish within 50 s, where the CPU's 16 threads took 11.9 s. Random cuts split nodes
    // unevenly, so the best-first order runs deep and the batches take thousands of rounds.
    model.report_.device_note =
        "CUDA not used: extremely randomized trees grow faster on the CPU than in the GPU's "
        "batches; the trees grew on the CPU";
  } else if (params.device != "cpu") {
    // The GPU grows batches of trees (the trees the CPU would grow).
    BatchData batch;
    batch.bins = &bins;
    batch.mapper = &model.mapper_;
    batch.bin_lows = &bin_lows;
    batch.classes = regression ? nullptr : classes.data();
    batch.target_units = regression ? target_units.data() : nullptr;
    batch.value_unit = value_unit;
    batch.spec = spec;
    batch.seed = params.seed;
    batch.draws = params.bootstrap ? draws : 0;
    batch.lookahead = params.gpu_lookahead;
    // Several devices, each on its own stream, let as many host threads grow batches at once, so
    // one batch's host replay runs while the others' kernels do: a host thread per 2 of the fit's
    // threads, 2 to 8 of them (H100, 16 threads, 1M synthetic rows, 300 trees, alternated in one
    // call: 3 took 2.16-2.25 s, 4 2.11-2.13 s, 6 1.98-2.01 s, 8 1.95-1.99 s; the host replay is
    // much of a batch). Each takes its share of the memory cap (of the free memory it finds), so
    // together they stay within it; when a share does not hold the data, half as many are tried,
    // down to one device with the whole cap. Under a time limit or with a leaf limit the first
    // kPilotTrees trees grow alone (below), so several devices are worth it from kPilotTrees + 1
    // trees.
    const bool limited = deadline.SecondsLeft() < 1e299;
    const bool pilot = limited || spec.max_leaf_nodes > 0;
    std::vector<std::unique_ptr<BatchDevice>> devices;
    std::string why, device_name;
    const double wait_seconds = warm_up ? warm_up->Wait() : 0.0;
    Stopwatch setup_watch;
    if (wanted > (pilot ? kPilotTrees : 1)) {
      const int workers = std::clamp(thread_count / 2, 2, 8);
      for (int count = workers; count >= 2 && devices.empty(); count /= 2) {
        try {
          for (int at = 0; at < count; ++at) {
            std::string share_why, share_name;
            std::unique_ptr<BatchDevice> device =
                MakeCudaBatchDevice(batch, params.gpu_device_id, params.gpu_memory_fraction / count,
                                    share_why, share_name);
            if (device == nullptr) break;
            device_name = share_name;
            devices.push_back(std::move(device));
          }
        } catch (const std::exception&) {
          // A CUDA error here (out of memory, most likely) leaves fewer devices to try.
        }
        if (static_cast<int>(devices.size()) < count) devices.clear();
      }
    }
    if (devices.empty()) {
      std::unique_ptr<BatchDevice> device = MakeCudaBatchDevice(
          batch, params.gpu_device_id, params.gpu_memory_fraction, why, device_name);
      if (device != nullptr) devices.push_back(std::move(device));
    }
    const double setup_seconds = setup_watch.Seconds();
    if (devices.empty()) {
      model.report_.device_note = "CUDA not used: " + why + "; the trees grew on the CPU";
    } else {
      on_device = true;
      model.report_.device = device_name;
      // A later batch still growing at the deadline is dropped. The batches after the first
      // small one are of equal size, as many as the devices take in whole waves.
      std::vector<std::pair<int, int>> batches;  // (first tree, trees)
      int first = 0;
      // A first batch of up to kPilotTrees trees grows alone when under a time limit, so that a
      // model exists early, and with a leaf limit, so that the later batches speculate only on
      // nodes improving at least nearly as much as its trees' last splits (BatchData::
      // speculation_floor). Host batch device, 1M synthetic rows, 8 trees (their floor from
      // another seed's 8): 678 rounds and 499,808 node evaluations without a floor, 378 and
      // 352,086 with 0.9 of the pilot trees' least last improvement. H100, 16 threads, 1M rows,
      // 300 trees, in one call: 0.95 of it took 1776 rounds and 12.37M evaluations (fit
      // 3.09-3.15 s), 0.9 took 1817 and 13.09M (3.12-3.30 s); in another, 1.0 took 2338 rounds
      // (too few nodes ahead) and 3.67-3.77 s, 0.8 took 14.20M evaluations and 4.37-4.42 s,
      // against 3.47-3.54 s for 0.95. Its trees' rounds wait on each other (the GPU is mostly
      // idle): 4 trees instead of 8 took the first batch from 0.19-0.22 s to 0.12-0.13 s and
      // found a floor as good (12.23M evaluations against 12.37M; fit 1.93-1.96 s against
      // 2.05-2.06 s; 16 trees: 2.05-2.29 s).
      if (pilot) {
        batches.push_back({0, std::min({devices[0]->slots(), kPilotTrees, wanted})});
        first = batches.back().second;
      }
      const int workers = static_cast<int>(devices.size());
      if (first < wanted) {
        int slots = devices[0]->slots();
        for (const auto& each : devices) slots = std::min(slots, each->slots());
        const int left = wanted - first;
        const int waves = (left + workers * slots - 1) / (workers * slots);
        const int size = (left + workers * waves - 1) / (workers * waves);
        for (; first < wanted; first += size)
          batches.push_back({first, std::min(size, wanted - first)});
      }
      std::vector<BatchTimes> times(devices.size());
      std::atomic<std::size_t> next_batch{0};
      std::atomic<bool> stopped{false};
      std::vector<std::exception_ptr> worker_failures(devices.size());
      // Worker `worker` grows the next batches before `end` on its device.
      auto work = [&](int worker, int replay_threads, std::size_t end) {
        try {
          while (!stopped.load()) {
            const std::size_t at = next_batch.fetch_add(1);
            if (at >= end) break;
            const auto [batch_first, count] = batches[at];
            std::vector<tree::Tree> batch_trees;
            std::vector<std::vector<double>> batch_outputs;
            if (!GrowTreeBatch(*devices[worker], batch, std::uint64_t(batch_first), count,
                               batch_trees, batch_outputs, batch_first > 0 ? &deadline : nullptr,
                               &times[worker], replay_threads)) {
              stopped.store(true);
              break;
            }
            for (int tree_at = 0; tree_at < count; ++tree_at) {
              trees[batch_first + tree_at] = std::move(batch_trees[tree_at]);
              outputs[batch_first + tree_at] = std::move(batch_outputs[tree_at]);
              grown[batch_first + tree_at] = 1;
            }
            if (deadline.Expired()) stopped.store(true);
          }
        } catch (...) {
          worker_failures[worker] = std::current_exception();
          stopped.store(true);
        }
      };
      Stopwatch pilot_watch;
      if (pilot) {
        work(0, thread_count, 1);  // the small first batch, alone
        if (spec.max_leaf_nodes > 0 && std::isfinite(times[0].least_last_improvement)) {
          batch.speculation_floor = 0.95 * times[0].least_last_improvement;
        }
      }
      const double pilot_seconds = pilot_watch.Seconds();
      Stopwatch batches_watch;
      next_batch.store(pilot ? 1 : 0);
      {
        const int threads_each = std::max(1, thread_count / workers);
        std::vector<std::thread> helpers;
        for (int worker = 1; worker < workers; ++worker) {
          helpers.emplace_back(work, worker, threads_each, batches.size());
        }
        work(0, threads_each, batches.size());
        for (std::thread& helper : helpers) helper.join();
      }
      const double batches_seconds = batches_watch.Seconds();
      for (const std::exception_ptr& worker_failure : worker_failures) {
        if (worker_failure) std::rethrow_exception(worker_failure);
      }
      BatchTimes total;
      for (const BatchTimes& each : times) {
        total.batches += each.batches;
        total.rounds += each.rounds;
        total.nodes += each.nodes;
        total.start_seconds += each.start_seconds;
        total.evaluate_seconds += each.evaluate_seconds;
        total.partition_seconds += each.partition_seconds;
        total.replay_seconds += each.replay_seconds;
      }
      model.report_.device_note = fmt::format(
          "{} batches on {} host threads at once, {} rounds, {} node evaluations: binning "
          "{:.3f} s, then waiting for the CUDA runtime {:.3f} s, device set-up {:.3f} s, first "
          "batch alone {:.3f} s, the others {:.3f} s; bootstrap {:.3f} s, evaluate {:.3f} s, "
          "partition {:.3f} s, host replay {:.3f} s (summed over the threads)",
          total.batches, workers, total.rounds, total.nodes, model.report_.bin_seconds,
          wait_seconds, setup_seconds, pilot_seconds, batches_seconds, total.start_seconds,
          total.evaluate_seconds, total.partition_seconds, total.replay_seconds);
      if (out_of_bag != nullptr) {
#pragma omp parallel num_threads(thread_count)
        {
          std::vector<std::uint32_t> counts;
          std::vector<std::int32_t> tree_rows;
#pragma omp for schedule(dynamic, 1)
          for (int tree_index = 0; tree_index < wanted; ++tree_index) {
            if (grown[tree_index]) draw_rows(tree_index, counts, tree_rows);
          }
        }
      }
    }
  }
  if (!on_device) {
    // The CPU's growers read the bins feature by feature (ColumnBins).
    const ColumnBins columns = ColumnBins::Of(bins, thread_count);
    data.bins = &columns;
#pragma omp parallel num_threads(thread_count)
    {
      ForestTreeGrower grower(data, spec);
      std::vector<std::uint32_t> counts;
      std::vector<std::int32_t> tree_rows;
#pragma omp for schedule(dynamic, 1)
      for (int tree_index = 0; tree_index < wanted; ++tree_index) {
        // The first tree is always grown, so a model exists however short the time.
        if (failed.load()) continue;
        if (tree_index > 0 && (out_of_time.load() || deadline.Expired())) {
          out_of_time.store(true);
          continue;
        }
        try {
          draw_rows(tree_index, counts, tree_rows);
          trees[tree_index] = grower.Grow(tree_rows, counts.data(), params.seed,
                                          std::uint64_t(tree_index), outputs[tree_index]);
          grown[tree_index] = 1;
        } catch (...) {
#pragma omp critical(forest_failure)
          if (!failure) failure = std::current_exception();
          failed.store(true);
        }
      }
    }
  }
  if (failure) std::rethrow_exception(failure);
  Stopwatch keep_watch;
  // Keep the trees grown, in order; regression leaves hold the uncentred means. The leaf
  // outputs are copied once into room made for all of them (letter's 26 classes make them about
  // 100 MB: grown by doubling they took a quarter of the fit), tree by tree in parallel, each
  // tree's freed once copied.
  std::vector<int> kept;
  std::vector<std::size_t> output_base(1, 0);
  for (int tree_index = 0; tree_index < wanted; ++tree_index) {
    if (!grown[tree_index]) continue;
    kept.push_back(tree_index);
    output_base.push_back(output_base.back() + outputs[tree_index].size());
    model.trees_.push_back(std::move(trees[tree_index]));
  }
  model.leaf_outputs_.resize(output_base.back());
  const auto kept_count = static_cast<std::int64_t>(kept.size());
#pragma omp parallel for num_threads(thread_count) schedule(dynamic, 4)
  for (std::int64_t at = 0; at < kept_count; ++at) {
    std::vector<double>& tree_outputs = outputs[kept[at]];
    if (regression) {
      for (double& value : tree_outputs) value += target_mean;
    }
    std::copy(tree_outputs.begin(), tree_outputs.end(),
              model.leaf_outputs_.begin() + static_cast<std::ptrdiff_t>(output_base[at]));
    std::vector<double>().swap(tree_outputs);
  }
  model.report_.trees = static_cast<int>(model.trees_.size());
  model.report_.stop_reason = model.report_.trees == wanted ? "n_estimators reached" : "deadline";
  model.Layout(thread_count);
  if (on_device) {
    model.report_.device_note +=
        fmt::format("; trees kept and laid out {:.3f} s", keep_watch.Seconds());
  }

  if (out_of_bag != nullptr) {
    // Each row: the mean over the trees that did not train on it, summed in tree order.
    const int outputs_per_row = model.num_outputs_;
    out_of_bag->assign(static_cast<std::size_t>(rows * outputs_per_row), 0.0);
    std::vector<std::int64_t> leaf_base(kept.size() + 1, 0);
    for (std::size_t at = 0; at < kept.size(); ++at) {
      leaf_base[at + 1] = leaf_base[at] + model.trees_[at].num_leaves();
    }
#pragma omp parallel for num_threads(thread_count) schedule(static, 256)
    for (std::int64_t row = 0; row < rows; ++row) {
      double* out = out_of_bag->data() + row * outputs_per_row;
      int voters = 0;
      for (std::size_t at = 0; at < kept.size(); ++at) {
        const std::vector<std::uint64_t>& bits = in_bag[kept[at]];
        if ((bits[row / 64] >> (row % 64)) & 1u) continue;
        const std::int64_t leaf = leaf_base[at] + model.trees_[at].LeafOfBins(bins, row);
        for (int k = 0; k < outputs_per_row; ++k) {
          out[k] += model.leaf_outputs_[leaf * outputs_per_row + k];
        }
        ++voters;
      }
      if (voters == 0) {
        // In every bootstrap: the whole forest's prediction.
        for (std::size_t at = 0; at < kept.size(); ++at) {
          const std::int64_t leaf = leaf_base[at] + model.trees_[at].LeafOfBins(bins, row);
          for (int k = 0; k < outputs_per_row; ++k) {
            out[k] += model.leaf_outputs_[leaf * outputs_per_row + k];
          }
        }
        voters = static_cast<int>(kept.size());
      }
      for (int k = 0; k < outputs_per_row; ++k) out[k] /= double(voters);
    }
  }
  model.report_.train_seconds = train_watch.Seconds();
  return model;
}

void ForestModel::Layout(int threads) { forest_.Build(trees_, mapper_, threads); }

std::vector<double> ForestModel::Predict(const features::FeatureMatrix& features,
                                         int threads) const {
  Context context;
  context.num_threads = threads;
  const std::int64_t rows = features.num_rows;
  const int outputs = num_outputs_;
  std::vector<double> out(static_cast<std::size_t>(rows * outputs), 0.0);
  const int trees = forest_.num_trees();
  // Blocks of rows go tree by tree, so a tree's nodes stay in cache (block size:
  // CompactForest::BlockRows), and each row of a block walks the tree to its leaf before the
  // next starts: the turns of a deep tree are lopsided, and the branch predictor learns them.
  // (Eight rows walked side by side, which overlaps their node loads but mispredicts whenever
  // one of them ends, took 1.8 times as long on Adult's forests.)
  constexpr int kFewRows = 8;  // blocks of fewer rows walk trees side by side instead
  const int thread_count = context.Threads();
  const std::int64_t block_rows = tree::CompactForest::BlockRows(rows, thread_count);
  const std::int64_t blocks = (rows + block_rows - 1) / block_rows;
  const double scale = trees > 0 ? 1.0 / double(trees) : 0.0;
#pragma omp parallel for num_threads(thread_count) schedule(static)
  for (std::int64_t block = 0; block < blocks; ++block) {
    const std::int64_t first = block * block_rows;
    const std::int64_t last = std::min(rows, first + block_rows);
    if (last - first < kFewRows) {
      // A few rows (a single one, say), too few to keep a tree's nodes in cache for: each walks
      // groups of trees side by side, so that their node loads overlap. Either way a row adds
      // its trees' outputs in tree order.
      constexpr int kTrees = tree::CompactForest::kWalkGroup;
      for (std::int64_t row = first; row < last; ++row) {
        double* into = out.data() + row * outputs;
        for (int tree = 0; tree < trees; tree += kTrees) {
          const int count = std::min(kTrees, trees - tree);
          std::int32_t leaf[kTrees];
          forest_.WalkRowTrees(tree, count, mapper_, features, row, leaf);
          for (int member = 0; member < count; ++member) {
            const double* values = leaf_outputs_.data() + std::size_t(leaf[member]) * outputs;
            for (int k = 0; k < outputs; ++k) into[k] += values[k];
          }
        }
      }
    } else {
      // The block's categorical codes binned once, not at every node that tests them.
      const std::int64_t span = last - first;
      std::vector<int> category_bins;
      forest_.BinCategories(mapper_, features, first, last, category_bins);
      for (int tree = 0; tree < trees; ++tree) {
        for (std::int64_t row = first; row < last; ++row) {
          const std::int32_t leaf = forest_.LeafByBin(
              tree, [&](int feature) { return features.NumericColumn(feature)[row]; },
              [&](int feature) { return category_bins[feature * span + (row - first)]; });
          const double* values = leaf_outputs_.data() + std::size_t(leaf) * outputs;
          double* into = out.data() + row * outputs;
          for (int k = 0; k < outputs; ++k) into[k] += values[k];
        }
      }
    }
    for (std::int64_t at = first * outputs; at < last * outputs; ++at) out[at] *= scale;
  }
  return out;
}

std::string ForestModel::Serialize() const {
  ByteWriter writer = ByteWriter::Framed(kModelMagic, kModelVersion);
  // Reserved up front (Tree::Write's 41 bytes per node and 12 per leaf, and the leaf outputs):
  // a forest runs to hundreds of megabytes, which growing by doubling would copy.
  std::size_t estimate = 8 * leaf_outputs_.size() + 65536;
  for (const tree::Tree& tree : trees_) {
    estimate += 41 * tree.nodes().size() + 12 * std::size_t(tree.num_leaves()) +
                4 * tree.bitsets().size() + 32;
  }
  writer.Reserve(estimate);
  writer.Put<std::int32_t>(num_outputs_);
  mapper_.Write(writer);
  writer.Put<std::uint32_t>(static_cast<std::uint32_t>(trees_.size()));
  for (const tree::Tree& tree : trees_) tree.Write(writer);
  writer.PutVector(leaf_outputs_);
  writer.PutString(report_.stop_reason);
  return std::move(writer).Frame();
}

ForestModel ForestModel::Deserialize(std::string_view bytes, const std::string& name) {
  ByteReader reader(UnframeBytes(bytes, kModelMagic, kModelVersion, name), name);
  ForestModel model;
  model.num_outputs_ = reader.Get<std::int32_t>();
  if (model.num_outputs_ < 1 || model.num_outputs_ > 100000)
    reader.Corrupted("implausible output count");
  model.mapper_ = tree::BinMapper::Read(reader);
  const auto count = reader.Get<std::uint32_t>();
  if (count == 0 || count > 1000000) reader.Corrupted("implausible tree count");
  std::int64_t leaves = 0;
  for (std::uint32_t at = 0; at < count; ++at) {
    model.trees_.push_back(tree::Tree::Read(reader, model.mapper_.num_features()));
    leaves += model.trees_.back().num_leaves();
  }
  model.leaf_outputs_ = reader.GetVector<double>();
  if (static_cast<std::int64_t>(model.leaf_outputs_.size()) != leaves * model.num_outputs_) {
    reader.Corrupted("leaf outputs do not match the trees");
  }
  model.report_.stop_reason = reader.GetString();
  if (!reader.AtEnd()) reader.Corrupted("bytes after the model");
  model.report_.trees = static_cast<int>(count);
  model.Layout();
  return model;
}

}  // namespace tabforge::forest
