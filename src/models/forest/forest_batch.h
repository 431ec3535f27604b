// Forest trees grown in batches: many trees at once, level by level, by a device that
// evaluates lists of nodes (each node's features in its random order, from per-bin class
// counts) and partitions the rows of the nodes split. The host replays ForestTreeGrower's order
// of splits (depth-first, or best-first up to max_leaf_nodes) over the nodes evaluated, asking
// the device for the nodes that order reaches next, so the trees are the CPU grower's, split for
// split. The CUDA device (forest_cuda.cc) does the work on a GPU; the host device here does it
// with plain loops over the same split search (forest_split.h), the reference the kernels are
// tested against. Every sum is exact in any order: class sums are whole bootstrap counts, and
// regression targets are whole multiples of a unit (QuantizeTargets).
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "core/timer.h"
#include "models/forest/forest_grower.h"
#include "models/forest/forest_kernels.h"

namespace tabforge::forest {

// What a batch grows from: the training rows, how trees split, and the bootstrap (draws per
// tree; 0: every row once).
struct BatchData {
  const tree::BinMatrix* bins = nullptr;
  const tree::BinMapper* mapper = nullptr;
  const std::int32_t* classes = nullptr;  // classification
  // Regression: each row's target in units of `value_unit` (QuantizeTargets).
  const long long* target_units = nullptr;
  double value_unit = 1;
  const std::vector<std::vector<double>>* bin_lows = nullptr;  // TrainingRows::bin_lows
  TreeSpec spec;
  std::uint64_t seed = 0;
  std::int64_t draws = 0;
  // With a leaf limit, the open nodes (found splittable, not yet split by the replay) ranking in
  // the top (room left) times this go ahead of the replay (ForestParams::gpu_lookahead).
  double lookahead = 1;
  // With a leaf limit, open nodes improving less than this do not go ahead of the replay (0:
  // none). A floor a little under the improvement of the last split of trees grown before
  // (BatchTimes::least_last_improvement) keeps the device from growing nodes that the leaf limit
  // leaves unsplit; a floor too high only costs rounds (the replay asks for what it needs).
  double speculation_floor = 0;
};

// Rounds centred regression targets to whole multiples of a power of two (returned) fine enough
// for every weighted sum of up to `total_weight` bootstrap counts to stay below 2^53 units: such
// sums are exact in any order, so the GPU's atomics give the CPU's bits. `targets` is rounded in
// place; `units` (when given) receives each target in units. The unit is at most 2^-51 times
// the largest |target| times `total_weight` (about 4e-10 of it for a million rows): targets
// spanning many orders of magnitude lose the small ones' digits. Targets must be finite.
double QuantizeTargets(std::vector<double>& targets, std::int64_t total_weight,
                       std::vector<long long>* units);

// The split rules of `data` (`xlogx` is filled for entropy and must outlive the rules).
kernels::SplitRules MakeSplitRules(const BatchData& data, std::vector<double>& xlogx);

// Whether the batch grower can grow these trees; otherwise `why` says what it lacks.
bool BatchGrowable(const BatchData& data, std::string& why);

// The work a batch needs done.
class BatchDevice {
 public:
  virtual ~BatchDevice() = default;
  // Trees a batch holds at most.
  virtual int slots() const = 0;
  // Starts trees [first_tree, first_tree + count) in slots 0 .. count - 1: each slot's
  // bootstrap weights and its distinct rows in ascending order. Returns their counts.
  virtual std::vector<std::int64_t> StartTrees(std::uint64_t first_tree, int count) = 0;
  // Evaluates positions [first_position, first_position + positions) of each node's feature
  // order and combines them (kernels::CombineCuts; the first position 0 pass keeps the best, a
  // later pass the first valid). Per node: outcomes, class sums (width values; written by the
  // position-0 pass only) and the chosen cut's bin words (`words` per node).
  virtual void Evaluate(const std::vector<kernels::BatchNode>& nodes, int first_position,
                        int positions, std::vector<kernels::NodeOutcome>& outcomes,
                        std::vector<double>& sums, std::vector<std::uint32_t>& bits) = 0;
  // Partitions the rows of each split (left rows first, each side in order); returns the
  // rows each sent left.
  virtual std::vector<long long> Partition(const std::vector<kernels::BatchSplit>& splits,
                                           const std::vector<std::uint32_t>& bits) = 0;
};

// Bin words a categorical cut of `mapper`'s features takes.
int CutWords(const tree::BinMapper& mapper);

// Where a batch's time went (added to by GrowTreeBatch).
struct BatchTimes {
  int batches = 0;
  int rounds = 0;                // evaluate-replay-partition rounds
  long long nodes = 0;           // nodes evaluated
  double start_seconds = 0;      // bootstraps
  double evaluate_seconds = 0;   // device evaluations, results downloaded
  double partition_seconds = 0;  // device partitions
  double replay_seconds = 0;     // the host's replay of the CPU grower's order
  // The least improvement of the last split of the trees that reached the leaf limit (infinity
  // when none did).
  double least_last_improvement = std::numeric_limits<double>::infinity();
};

// Grows trees [first_tree, first_tree + count) (count at most device.slots()) into `trees`
// and their leaf outputs (class fractions, leaf by leaf) into `outputs`. When `stop` expires
// between levels, the batch is dropped: nothing is appended and it returns false. The host's
// share (the replay) runs on up to `threads` threads, a tree each; the trees do not depend on it.
bool GrowTreeBatch(BatchDevice& device, const BatchData& data, std::uint64_t first_tree, int count,
                   std::vector<tree::Tree>& trees, std::vector<std::vector<double>>& outputs,
                   const Deadline* stop = nullptr, BatchTimes* times = nullptr, int threads = 1);

// The device work done by host loops, `slots` trees at a time.
std::unique_ptr<BatchDevice> MakeHostBatchDevice(const BatchData& data, int slots);

// The CUDA device on GPU `device_id` within `memory_fraction` of its free memory, or null
// with `why` (no usable GPU, a CPU-only build, too little memory). `device_name` receives the
// GPU's name. `max_slots` (0: as many as fit, up to 128) caps the trees of a batch.
std::unique_ptr<BatchDevice> MakeCudaBatchDevice(const BatchData& data, int device_id,
                                                 double memory_fraction, std::string& why,
                                                 std::string& device_name, int max_slots = 0);

}  // namespace tabforge::forest
