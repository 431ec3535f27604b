#include "models/tree/grower_loop.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

namespace tabforge::tree {
namespace {

// The rule, by a scan of every leaf: the largest gain among valid splits, ties to the lowest
// leaf; -1 when none is valid.
int ScanForLeaf(const std::vector<LeafSplit>& best) {
  int chosen = -1;
  for (int leaf = 0; leaf < static_cast<int>(best.size()); ++leaf) {
    if (best[leaf].valid() && (chosen < 0 || best[leaf].gain > best[chosen].gain)) chosen = leaf;
  }
  return chosen;
}

// Replays of a leaf-wise growth over made-up splits: each split leaf keeps its index for its
// left child and the right child takes the next index, each child with a split drawn from few
// gain values (many ties) or none. The heap's choices must be the scan's, split by split.
TEST(LeafQueue, ChoosesAsAScanOfEveryLeafWithTiesAndLeavesThatCannotSplit) {
  std::mt19937 random(7);
  for (int trial = 0; trial < 200; ++trial) {
    const int most_leaves = 2 + static_cast<int>(random() % 300);
    auto draw = [&] {
      LeafSplit split;
      if (random() % 5 != 0) {
        split.feature = 0;
        split.gain = static_cast<double>(random() % 7);
      }
      return split;
    };
    std::vector<LeafSplit> scanned = {draw()};
    LeafQueue queue;
    queue.Offer(0, scanned[0]);
    int leaves = 1;
    while (leaves < most_leaves) {
      const int expected = ScanForLeaf(scanned);
      const int chosen = queue.Pop();
      ASSERT_EQ(chosen, expected) << "trial " << trial << ", leaves " << leaves;
      if (chosen < 0) break;
      const LeafSplit left = draw();
      const LeafSplit right = draw();
      scanned[chosen] = left;
      scanned.push_back(right);
      queue.Offer(chosen, left);
      queue.Offer(leaves, right);
      ++leaves;
    }
  }
}

}  // namespace
}  // namespace tabforge::tree
