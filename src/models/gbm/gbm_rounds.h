// The boosting rounds behind GbmModel::Fit, one implementation per device: the CPU's
// (gbm.cc) and the CUDA backend's (gbm_cuda.cc with gbm_kernels.cu; gbm_no_cuda.cc answers in a
// CPU-only build). Fit prepares a RoundSetup, asks for a trainer, and drives it round by round
// (deadline, validation, early stopping); the trainer computes the gradients, grows the trees
// and keeps its training scores.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "models/gbm/gbm.h"
#include "models/gbm/gbm_objective.h"
#include "models/gbm/gbm_predict_kernels.h"
#include "models/tree/binning.h"
#include "models/tree/compact_forest.h"
#include "models/tree/grower.h"
#include "models/tree/row_groups.h"
#include "models/tree/tree.h"

namespace tabforge::gbm {

// Streams of the counter-based generator (both devices draw the same numbers).
inline constexpr std::uint64_t kBagStream = 0x626167;         // "bag"
inline constexpr std::uint64_t kQuantizeStream = 0x7175616e;  // "quan"

// Per-row loops shorter than this run on one thread: a parallel region costs more than the
// loop, above all when other fits share the cores.
inline constexpr std::int64_t kParallelRows = 20000;

// Everything the rounds need, fixed before the first.
struct RoundSetup {
  const GbmParams* params = nullptr;
  const tree::BinMatrix* bins = nullptr;
  const tree::BinMapper* mapper = nullptr;
  std::span<const double> labels;
  std::span<const double> weights;  // empty: unit weights
  std::vector<double> init_score;   // per output
  RowGradientParams objective;
  tree::GrowerParams grower;
  std::int64_t level = 1;  // gradients are quantized to [-level, level]
  int outputs = 1;
  int threads = 1;
  bool bagging = false;
};

// The features kept for round `round`'s trees (feature_fraction), the same on every device.
std::vector<std::uint8_t> SampleTreeFeatures(int features, double fraction, std::uint64_t seed,
                                             int round);

class RoundTrainer {
 public:
  virtual ~RoundTrainer() = default;
  // Trains round `round`: appends one tree per output to `trees` (leaf values already shrunk
  // by the learning rate) and adds them to the training scores.
  virtual void TrainRound(int round, std::vector<tree::Tree>& trees) = 0;
  // Batches of leaf splits run on the device so far (CUDA rounds; 0 on the CPU).
  virtual std::int64_t DeviceBatches() const { return 0; }
  virtual std::int64_t DeviceHistogramBytes() const { return 0; }
  virtual std::int64_t DeviceUnusedSplitRows() const { return 0; }
};

// The CPU's rounds; over merged rows (MakeMergedRoundTrainer) when the parameters ask for it
// or, by default, when rows of equal bins leave at most 3/4 of the rows.
std::unique_ptr<RoundTrainer> MakeCpuRoundTrainer(const RoundSetup& setup);

// The CPU's rounds over `groups` (the setup's rows of equal bins merged): the same trees.
std::unique_ptr<RoundTrainer> MakeMergedRoundTrainer(const RoundSetup& setup,
                                                     tree::RowGroups groups);

// The weighted `quantile` of `values`: the smallest value whose cumulative weight reaches
// quantile * total (values and weights are reordered).
double WeightedQuantile(std::vector<std::pair<double, double>>& values, double quantile);

// The quantile the leaves of an objective are renewed to (L1, quantile), or a negative number
// when its Newton values are kept.
double RenewalQuantile(const GbmParams& params);

// Device memory the CUDA rounds need for `setup`, in bytes (an estimate made before anything
// is allocated).
std::int64_t EstimateDeviceBytes(const RoundSetup& setup);

// The CUDA trainer, or null with `why` set (no CUDA in this build, no usable device, not
// enough free memory, a setting the backend does not train) so the caller falls back to the
// CPU. `device` receives "cuda:ID NAME" and `reserved` the bytes reserved.
std::unique_ptr<RoundTrainer> MakeCudaRoundTrainer(const RoundSetup& setup, std::string& why,
                                                   std::string& device, std::int64_t& reserved);

// Raw scores of every row of `features` computed on CUDA device `device_id` with at most
// `memory_fraction` of its free memory: raw[row * outputs + k] = init_score[k] plus the leaf
// values of trees k, k + outputs, ... added in tree order, which is GbmModel's CPU sum, so the
// doubles are the same. Returns false, with the reason in `why`, when it did not run (a
// CPU-only build, no usable device, more than kMaxDeviceOutputs outputs).
inline constexpr int kMaxDeviceOutputs = kernels::kMaxPredictOutputs;
// GbmModel::PredictRaw sends batches of at least this many (row, tree) pairs to the GPU when the
// model's device is "cuda": smaller ones cost less on the CPU than the device's set-up (a
// 16-thread CPU scores about 1e9 pairs a second).
inline constexpr std::int64_t kDevicePredictWork = 20'000'000;
bool DevicePredictRaw(const tree::CompactForest& forest, const tree::BinMapper& mapper,
                      const features::FeatureMatrix& features, int outputs,
                      const std::vector<double>& init_score, int device_id, double memory_fraction,
                      std::vector<double>& raw, std::string& why);

}  // namespace tabforge::gbm
