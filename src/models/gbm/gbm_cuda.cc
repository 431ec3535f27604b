// The GBM's CUDA rounds (CUDA builds only; gbm_no_cuda.cc answers in CPU-only ones): rows,
// scores and gradients stay on the device; each round runs the kernels of gbm_kernels.cu and
// grows its trees with DeviceTreeGrower. Only finished trees come back to the host (and, with
// bagging, the size of each round's bag).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/error.h"
#include "device/cuda_check.h"
#include "device/cuda_device.h"
#include "models/gbm/gbm_kernels.h"
#include "models/gbm/gbm_predict_kernels.h"
#include "models/gbm/gbm_predict_tables.h"
#include "models/gbm/gbm_rounds.h"
#include "models/tree/device_grower.h"
#include "models/tree/device_kernels.h"

namespace tabforge::gbm {
namespace {

using device::DeviceArray;
using device::Upload;

// Device bytes of the rounds' own arrays (the grower's come on top).
std::int64_t RoundBytes(const RoundSetup& setup) {
  const std::int64_t rows = setup.bins->num_rows;
  const std::int64_t outputs = setup.outputs;
  std::int64_t bytes = rows * (4 * outputs + 4 * outputs + 8 + 8);  // scores, gradients, pairs,
                                                                    // labels
  if (outputs > 1) bytes += rows * 4 * outputs;                     // class hessians
  if (!setup.weights.empty()) bytes += rows * 8;
  if (setup.bagging) bytes += rows * 5;
  return bytes;
}

class CudaRoundTrainer final : public RoundTrainer {
 public:
  explicit CudaRoundTrainer(const RoundSetup& setup)
      : setup_(setup),
        params_(*setup.params),
        rows_(setup.bins->num_rows),
        outputs_(setup.outputs),
        grower_(*setup.bins, *setup.mapper, setup.grower) {
    const std::size_t cells = static_cast<std::size_t>(rows_ * outputs_);
    scores_.Resize(cells);
    gradients_.Resize(cells);
    if (outputs_ > 1) hessians_.Resize(cells);
    pairs_.Resize(static_cast<std::size_t>(rows_));
    Upload(labels_, setup.labels.data(), setup.labels.size());
    if (!setup.weights.empty()) Upload(weights_, setup.weights.data(), setup.weights.size());
    std::vector<float> init(setup.init_score.begin(), setup.init_score.end());
    DeviceArray<float> device_init;
    Upload(device_init, init.data(), init.size());
    kernels::InitScores(scores_.data(), device_init.data(), outputs_,
                        static_cast<std::int64_t>(cells));
    max_bits_.Resize(1);
    scales_.Resize(1);
    leaf_values_.Resize(static_cast<std::size_t>(std::max(setup.grower.num_leaves, 2)));
    if (setup.bagging) {
      in_bag_.Resize(static_cast<std::size_t>(rows_));
      bag_.Resize(static_cast<std::size_t>(rows_));
      bag_count_.Resize(1);
      select_temp_.Resize(kernels::BagScratchBytes(rows_));
    }
    TFG_CUDA_CHECK(cudaDeviceSynchronize());
  }

  void TrainRound(int round, std::vector<tree::Tree>& trees) override {
    const std::int64_t rows = rows_;
    const int outputs = outputs_;
    if (setup_.bagging && round % params_.bagging_freq == 0) {
      kernels::DrawBag(params_.seed, kBagStream + std::uint64_t(round), params_.bagging_fraction,
                       in_bag_.data(), bag_.data(), bag_count_.data(), rows, select_temp_.data(),
                       select_temp_.size());
      int count = 0;
      TFG_CUDA_CHECK(cudaMemcpy(&count, bag_count_.data(), sizeof(int), cudaMemcpyDeviceToHost));
      bag_rows_ = count;
    }
    if (gradients_round_ != round) ComputeGradients();
    gradients_round_ = -1;
    const std::vector<std::uint8_t> active = SampleTreeFeatures(
        setup_.mapper->num_features(), params_.feature_fraction, params_.seed, round);
    for (int k = 0; k < outputs; ++k) {
      const float* class_gradient = gradients_.data() + k * rows;
      if (outputs > 1) {
        kernels::MaxAbsGradient(class_gradient, rows, max_bits_.data());
      }
      kernels::ComputeScales(max_bits_.data(), setup_.level, setup_.objective.hessian_fixed,
                             scales_.data());
      const std::uint64_t stream = kQuantizeStream + std::uint64_t(round) * outputs + k;
      kernels::Quantize(class_gradient, outputs > 1 ? hessians_.data() + k * rows : nullptr,
                        scales_.data(), setup_.level, params_.seed, stream, pairs_.data(), rows);
      tree::DeviceGradients quantized;
      quantized.pairs = pairs_.data();
      quantized.exact_gradients = class_gradient;
      quantized.scales = scales_.data();
      // Once the device has grown the tree, its scores, and after the round's last tree the next
      // round's gradients, are queued for the device to compute while the host rebuilds the
      // tree. (With bagging, the rows out of the bag are scored through the rebuilt tree, and
      // the gradients wait for it.)
      auto grown = [&] {
        UpdateScores(k);
        if (k == outputs - 1 && !setup_.bagging) {
          ComputeGradients();
          gradients_round_ = round + 1;
        }
      };
      tree::Tree tree =
          grower_.Grow(setup_.bagging ? bag_.data() : nullptr, bag_rows_, quantized, active,
                       params_.seed ^ (std::uint64_t(round) * outputs + k), grown);
      for (double& value : tree.leaf_values()) value *= params_.learning_rate;
      if (setup_.bagging) AddOutOfBagScores(tree, k);
      trees.push_back(std::move(tree));
    }
  }

  std::int64_t DeviceBatches() const override { return grower_.batches_run(); }
  std::int64_t DeviceHistogramBytes() const override { return grower_.histogram_bytes(); }
  std::int64_t DeviceUnusedSplitRows() const override { return grower_.unused_split_rows(); }

 private:
  // Gradients (and the class hessians) of every output from the scores.
  void ComputeGradients() {
    kernels::ComputeGradients(setup_.objective, scores_.data(), labels_.data(),
                              setup_.weights.empty() ? nullptr : weights_.data(), gradients_.data(),
                              outputs_ > 1 ? hessians_.data() : nullptr, pairs_.data(), rows_,
                              max_bits_.data());
  }

  // Adds the last tree's leaf values (unscaled on the device; times the learning rate as the
  // host scales them) to the scores of the rows it was grown on.
  void UpdateScores(int output) {
    kernels::AddLeafScores(grower_.device_order(), grower_.device_leaf_ranges(),
                           grower_.device_leaf_chunks(), grower_.device_leaf_count(),
                           std::max(setup_.grower.num_leaves, 1),
                           setup_.bagging ? bag_rows_ : rows_, grower_.device_leaf_values(),
                           params_.learning_rate, scores_.data(), outputs_, output);
  }

  // Rows out of the bag: routed through the tree (leaf values already scaled).
  void AddOutOfBagScores(const tree::Tree& tree, int output) {
    const std::vector<double>& values = tree.leaf_values();
    TFG_CUDA_CHECK(cudaMemcpyAsync(leaf_values_.data(), values.data(),
                                   sizeof(double) * values.size(), cudaMemcpyHostToDevice));
    std::vector<kernels::RouteNode> nodes;
    for (const tree::TreeNode& node : tree.nodes()) {
      const bool categorical = node.categorical;
      nodes.push_back({static_cast<int>(node.feature), categorical ? 1 : 0,
                       node.default_left ? 1 : 0, node.threshold_bin, node.missing_bin,
                       categorical ? node.bitset.begin : 0, categorical ? node.bitset.end : 0,
                       node.left, node.right});
    }
    if (nodes.empty()) {
      // A single leaf: every row takes its value.
      nodes.push_back({0, 0, 0, 0x7fffffff, -1, 0, 0, ~0, ~0});
    }
    Upload(nodes_, nodes.data(), nodes.size());
    const std::vector<std::uint32_t>& bitsets = tree.bitsets();
    std::vector<std::uint32_t> words = bitsets.empty() ? std::vector<std::uint32_t>{0} : bitsets;
    Upload(bitsets_, words.data(), words.size());
    const int stride = grower_.device_bin_stride();
    const bool wide = setup_.bins->wide();
    kernels::AddOutOfBagScores(
        wide ? nullptr : static_cast<const std::uint8_t*>(grower_.device_bins()),
        wide ? static_cast<const std::uint16_t*>(grower_.device_bins()) : nullptr, stride,
        in_bag_.data(), nodes_.data(), bitsets_.data(), leaf_values_.data(), scores_.data(),
        outputs_, output, rows_);
  }

  const RoundSetup& setup_;
  const GbmParams& params_;
  std::int64_t rows_;
  int outputs_;
  tree::DeviceTreeGrower grower_;
  DeviceArray<float> scores_;
  DeviceArray<float> gradients_;         // output-major
  DeviceArray<std::uint32_t> hessians_;  // multiclass: fixed hessians, output-major
  DeviceArray<tree::GradientPair> pairs_;
  DeviceArray<double> labels_;
  DeviceArray<double> weights_;
  DeviceArray<unsigned int> max_bits_;
  DeviceArray<tree::kernels::RoundScales> scales_;
  DeviceArray<std::uint8_t> in_bag_;
  DeviceArray<std::int32_t> bag_;
  DeviceArray<int> bag_count_;
  DeviceArray<std::uint8_t> select_temp_;
  std::int64_t bag_rows_ = 0;
  int gradients_round_ = -1;  // the round whose gradients gradients_ holds already (-1: none)
  DeviceArray<double> leaf_values_;
  DeviceArray<kernels::RouteNode> nodes_;
  DeviceArray<std::uint32_t> bitsets_;
};

}  // namespace

std::int64_t EstimateDeviceBytes(const RoundSetup& setup) {
  return RoundBytes(setup) +
         tree::DeviceTreeGrower::EstimateBytes(*setup.bins, *setup.mapper, setup.grower);
}

std::unique_ptr<RoundTrainer> MakeCudaRoundTrainer(const RoundSetup& setup, std::string& why,
                                                   std::string& device, std::int64_t& reserved) {
  const GbmParams& params = *setup.params;
  if (setup.objective.kind == ObjectiveKind::kL1 ||
      setup.objective.kind == ObjectiveKind::kQuantile) {
    why = "the CUDA backend does not yet renew " + params.objective + " leaves by quantiles";
    return nullptr;
  }
  for (int feature = 0; feature < setup.mapper->num_features(); ++feature) {
    const tree::FeatureBins& bins = setup.mapper->feature(feature);
    if (bins.categorical && bins.num_bins > 256) {
      why = "a categorical feature has more than 256 bins, more than the CUDA scan holds";
      return nullptr;
    }
  }
  if (setup.mapper->num_features() < 1) {
    why = "there are no binned features";
    return nullptr;
  }
  const device::CudaDeviceInfo info = device::QueryCudaDevice(params.gpu_device_id);
  if (!info.usable) {
    why = info.problem;
    return nullptr;
  }
  const std::int64_t needed = EstimateDeviceBytes(setup);
  const auto allowed =
      static_cast<std::int64_t>(params.gpu_memory_fraction * double(info.free_bytes));
  if (needed > allowed) {
    why = fmt::format(
        "the fit needs about {:.1f} GB of GPU memory but gpu_memory_fraction {} of the {:.1f} GB "
        "free on {} allows {:.1f} GB",
        double(needed) / 1e9, params.gpu_memory_fraction, double(info.free_bytes) / 1e9, info.name,
        double(allowed) / 1e9);
    return nullptr;
  }
  try {
    auto trainer = std::make_unique<CudaRoundTrainer>(setup);
    device = fmt::format("cuda:{} {}", info.ordinal, info.name);
    reserved = needed;
    return trainer;
  } catch (const CudaError& error) {
    why = error.what();
    return nullptr;
  } catch (const NotSupported& error) {
    why = error.what();
    return nullptr;
  }
}

bool DevicePredictRaw(const tree::CompactForest& forest, const tree::BinMapper& mapper,
                      const features::FeatureMatrix& features, int outputs,
                      const std::vector<double>& init_score, int device_id, double memory_fraction,
                      std::vector<double>& raw, std::string& why) {
  if (outputs < 1 || outputs > kMaxDeviceOutputs) {
    why = fmt::format("{} outputs per row; the GPU predictor takes 1 to {}", outputs,
                      kMaxDeviceOutputs);
    return false;
  }
  const device::CudaDeviceInfo info = device::QueryCudaDevice(device_id);
  if (!info.usable) {
    why = info.problem;
    return false;
  }
  const ForestTables tables = ForestTables::Of(forest, mapper);
  const int numeric_count = tables.numeric_count;
  const int categorical_count = tables.categorical_count;
  TFG_CHECK(
      features.num_numeric() >= numeric_count && features.num_categorical() >= categorical_count,
      "the rows have {} numeric and {} categorical features, the model {} and {}",
      features.num_numeric(), features.num_categorical(), numeric_count, categorical_count);
  const std::int64_t forest_bytes = std::int64_t(
      forest.nodes().size() * sizeof(kernels::ForestNode) + forest.roots().size() * 4 +
      forest.leaves().size() * 8 + forest.categories().size() * 8 + forest.bits().size() * 4 +
      tables.code_bins.size() * 2 + tables.code_begin.size() * 8);
  const std::int64_t row_bytes =
      4 * std::int64_t(numeric_count + categorical_count) + 8 * std::int64_t(outputs);
  const auto budget = static_cast<std::int64_t>(double(info.free_bytes) * memory_fraction);
  const std::int64_t rows = features.num_rows;
  const std::int64_t block =
      std::min<std::int64_t>(std::max<std::int64_t>(rows, 1),
                             std::max<std::int64_t>(0, budget - forest_bytes) / row_bytes);
  if (block < std::min<std::int64_t>(rows, 1024)) {
    why = fmt::format(
        "the forest and a block of rows need more than the {:.1f} GB allowed ({} of "
        "the free memory)",
        double(budget) / 1e9, memory_fraction);
    return false;
  }
  TFG_CUDA_CHECK(cudaSetDevice(device_id));
  DeviceArray<kernels::ForestNode> nodes;
  DeviceArray<std::int32_t> roots;
  DeviceArray<double> leaves;
  DeviceArray<kernels::ForestCategories> categories;
  DeviceArray<std::uint32_t> bits;
  DeviceArray<std::uint16_t> device_code_bins;
  DeviceArray<std::int32_t> device_code_begin;
  DeviceArray<std::int32_t> device_other_bin;
  DeviceArray<double> init;
  Upload(nodes, ForestTables::Nodes(forest), forest.nodes().size());
  Upload(roots, forest.roots().data(), forest.roots().size());
  Upload(leaves, forest.leaves().data(), forest.leaves().size());
  Upload(categories, ForestTables::Categories(forest), forest.categories().size());
  Upload(bits, forest.bits().data(), forest.bits().size());
  Upload(device_code_bins, tables.code_bins.data(), tables.code_bins.size());
  Upload(device_code_begin, tables.code_begin.data(), tables.code_begin.size());
  Upload(device_other_bin, tables.other_bin.data(), tables.other_bin.size());
  Upload(init, init_score.data(), init_score.size());
  const kernels::DeviceForest view{nodes.data(),
                                   roots.data(),
                                   forest.num_trees(),
                                   leaves.data(),
                                   categories.data(),
                                   bits.data(),
                                   numeric_count,
                                   device_code_bins.data(),
                                   device_code_begin.data(),
                                   device_other_bin.data()};
  DeviceArray<float> numeric(static_cast<std::size_t>(block * numeric_count));
  DeviceArray<std::int32_t> codes(static_cast<std::size_t>(block * categorical_count));
  DeviceArray<double> scores(static_cast<std::size_t>(block * outputs));
  raw.assign(static_cast<std::size_t>(rows * outputs), 0.0);
  for (std::int64_t first = 0; first < rows; first += block) {
    const std::int64_t count = std::min(block, rows - first);
    // Columns of this block, column-major as the kernel reads them.
    for (int f = 0; f < numeric_count; ++f) {
      TFG_CUDA_CHECK(cudaMemcpy(numeric.data() + f * count, features.NumericColumn(f) + first,
                                static_cast<std::size_t>(count) * sizeof(float),
                                cudaMemcpyHostToDevice));
    }
    for (int c = 0; c < categorical_count; ++c) {
      TFG_CUDA_CHECK(cudaMemcpy(codes.data() + c * count, features.CategoricalColumn(c) + first,
                                static_cast<std::size_t>(count) * sizeof(std::int32_t),
                                cudaMemcpyHostToDevice));
    }
    kernels::Predict(view, numeric.data(), codes.data(), count, outputs, init.data(),
                     scores.data());
    TFG_CUDA_CHECK(cudaMemcpy(raw.data() + first * outputs, scores.data(),
                              static_cast<std::size_t>(count * outputs) * sizeof(double),
                              cudaMemcpyDeviceToHost));
  }
  return true;
}

}  // namespace tabforge::gbm
