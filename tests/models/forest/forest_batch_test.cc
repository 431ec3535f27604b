// The batch grower's host loops grow the CPU grower's trees: the replay of its split order over
// nodes evaluated level by level, the split search from histograms, the partitions.
#include "models/forest/forest_batch.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <tuple>

#include "models/forest/forest_parity.h"
#include "test_support.h"

namespace tabforge::forest {
namespace {

using parity::Bind;
using parity::MakeParityData;
using parity::MakeSynthetic;
using parity::Spec;

std::unique_ptr<BatchDevice> Host(const BatchData& batch) { return MakeHostBatchDevice(batch, 3); }

TEST(ForestBatch, SyntheticTreesMatchTheCpuGrower) { parity::ExpectSyntheticParity(Host, 3000, 5); }

TEST(ForestBatch, AdultAndLetterTreesMatchTheCpuGrower) {
  TFG_REQUIRE_DATASETS();
  parity::ExpectDatasetParity(Host, 2, true);
}

// The device splits every splittable node as soon as it is evaluated (with a leaf limit, those
// ranking in twice the room left), so a batch takes about a round per level of its deepest tree,
// not one per split along the CPU's order.
TEST(ForestBatch, ABatchTakesARoundPerLevel) {
  const parity::Synthetic data = MakeSynthetic(3000, false, 29);
  for (const int leaf_limit : {0, 60}) {
    parity::ParityData parity_data = MakeParityData(
        data.features, data.labels, 3, Spec(Criterion::kGini, 2, leaf_limit, false), true, 8);
    BatchData batch = Bind(parity_data);
    batch.lookahead = 2;
    const auto device = MakeHostBatchDevice(batch, 4);
    std::vector<tree::Tree> trees;
    std::vector<std::vector<double>> outputs;
    BatchTimes times;
    ASSERT_TRUE(GrowTreeBatch(*device, batch, 0, 4, trees, outputs, nullptr, &times));
    int deepest = 0;
    long long splits = 0;
    for (const tree::Tree& tree : trees) {
      deepest = std::max(deepest, tree.depth());
      splits += tree.num_leaves() - 1;
    }
    SCOPED_TRACE(leaf_limit);
    EXPECT_EQ(times.batches, 1);
    EXPECT_GT(splits, 4 * 20);
    EXPECT_LE(times.rounds, deepest + 3);
  }
}

// With a leaf limit the device grows ahead of the replay only the open nodes likeliest to be
// split: how many (the lookahead) and the host's threads change the work, never the trees.
TEST(ForestBatch, LookaheadAndThreadsChangeTheWorkNotTheTrees) {
  const parity::Synthetic data = MakeSynthetic(3000, false, 31);
  const int leaf_limit = 40;
  std::vector<std::string> reference;
  long long narrow_nodes = 0, wide_nodes = 0;
  long long needed = 0;   // the CPU grower's node evaluations: the root and each split's children
  double last_split = 0;  // the least improvement of the trees' last splits, from the first run
  long long floored_nodes = 0;
  // (lookahead, threads, speculation floor as a fraction of last_split)
  for (const auto& [lookahead, threads, floor] : std::vector<std::tuple<double, int, double>>{
           {1, 1, 0}, {1e6, 3, 0}, {2, 2, 0}, {1, 2, 0.9}}) {
    parity::ParityData parity_data = MakeParityData(
        data.features, data.labels, 3, Spec(Criterion::kGini, 2, leaf_limit, false), true, 8);
    parity_data.batch.lookahead = lookahead;
    parity_data.batch.speculation_floor = floor * last_split;
    const BatchData& batch = Bind(parity_data);
    const auto device = MakeHostBatchDevice(batch, 4);
    std::vector<tree::Tree> trees;
    std::vector<std::vector<double>> outputs;
    BatchTimes times;
    ASSERT_TRUE(GrowTreeBatch(*device, batch, 0, 4, trees, outputs, nullptr, &times, threads));
    std::vector<std::string> bytes;
    needed = 0;
    for (const tree::Tree& tree : trees) {
      bytes.push_back(parity::TreeBytes(tree));
      EXPECT_EQ(tree.num_leaves(), leaf_limit);
      needed += 2 * (tree.num_leaves() - 1) + 1;
    }
    if (reference.empty()) {
      reference = bytes;
      narrow_nodes = times.nodes;
      // Every tree reached the leaf limit, so the least last split is known.
      ASSERT_TRUE(std::isfinite(times.least_last_improvement));
      ASSERT_GT(times.least_last_improvement, 0);
      last_split = times.least_last_improvement;
    } else {
      EXPECT_EQ(bytes, reference) << "lookahead " << lookahead << ", threads " << threads
                                  << ", floor " << floor;
    }
    if (lookahead == 1e6) wide_nodes = times.nodes;
    if (floor > 0) floored_nodes = times.nodes;
  }
  // Growing every splittable node (a huge lookahead) evaluates far more than the CPU needs; the
  // narrowest lookahead stays near it.
  EXPECT_GT(wide_nodes, 2 * narrow_nodes);
  EXPECT_LE(narrow_nodes, 2 * needed);
  // A floor under the last splits' improvement leaves out nodes the leaf limit never splits.
  EXPECT_LT(floored_nodes, narrow_nodes);
  EXPECT_GE(floored_nodes, needed);
}

TEST(ForestBatch, AnExpiredDeadlineDropsTheBatch) {
  const parity::Synthetic data = MakeSynthetic(1000, false, 23);
  parity::ParityData parity_data =
      MakeParityData(data.features, data.labels, 3, Spec(Criterion::kGini, 2, 0, false), true, 4);
  const BatchData& batch = Bind(parity_data);
  const auto device = MakeHostBatchDevice(batch, 2);
  std::vector<tree::Tree> trees;
  std::vector<std::vector<double>> outputs;
  const Deadline expired = Deadline::In(0);
  EXPECT_FALSE(GrowTreeBatch(*device, batch, 0, 2, trees, outputs, &expired));
  EXPECT_TRUE(trees.empty());
  EXPECT_TRUE(outputs.empty());
  const Deadline later = Deadline::In(600);
  EXPECT_TRUE(GrowTreeBatch(*device, batch, 0, 2, trees, outputs, &later));
  EXPECT_EQ(trees.size(), 2u);
  EXPECT_GT(trees[0].num_leaves(), 2);
}

}  // namespace
}  // namespace tabforge::forest
