#include "models/tree/grow_order.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <queue>
#include <random>
#include <vector>

namespace tabforge::tree {
namespace {

// A random binary tree, nodes numbered as made; each node's split gain is a distinct integer
// (exact in the keys' 21-bit codes).
struct RandomTree {
  std::vector<int> parent;
  std::vector<float> gain;
  std::vector<std::vector<int>> children;
};

RandomTree MakeTree(std::mt19937& random, int max_depth, int splits) {
  RandomTree tree;
  std::vector<int> depth = {0};
  tree.parent = {-1};
  tree.children.resize(1);
  std::vector<int> open = {0};
  for (int made = 0; made < splits && !open.empty(); ++made) {
    const int at = static_cast<int>(random() % open.size());
    const int node = open[at];
    open.erase(open.begin() + at);
    for (int side = 0; side < 2; ++side) {
      const int child = static_cast<int>(tree.parent.size());
      tree.parent.push_back(node);
      tree.children.emplace_back();
      tree.children[node].push_back(child);
      depth.push_back(depth[node] + 1);
      if (depth.back() < max_depth) open.push_back(child);
    }
  }
  std::vector<int> gains(tree.parent.size());
  for (std::size_t node = 0; node < gains.size(); ++node) gains[node] = int(node) + 1;
  std::shuffle(gains.begin(), gains.end(), random);
  for (int value : gains) tree.gain.push_back(static_cast<float>(value * 7 % 4093 + 1));
  return tree;
}

// Nodes in the order best-first growth takes them: the open node of largest gain first.
std::vector<int> BestFirstOrder(const RandomTree& tree) {
  std::vector<int> order;
  auto lower = [&](int a, int b) { return tree.gain[a] < tree.gain[b]; };
  std::priority_queue<int, std::vector<int>, decltype(lower)> open(lower);
  open.push(0);
  while (!open.empty()) {
    const int node = open.top();
    open.pop();
    order.push_back(node);
    for (int child : tree.children[node]) open.push(child);
  }
  return order;
}

// Each node's key, its path's minima carried down as the CUDA grower carries them.
std::vector<RankKey> Keys(const RandomTree& tree) {
  const std::size_t nodes = tree.parent.size();
  std::vector<std::vector<float>> minima(nodes, std::vector<float>(kPathMinima, 0.0f));
  std::vector<int> counts(nodes, 0);
  std::vector<RankKey> keys(nodes);
  for (std::size_t node = 0; node < nodes; ++node) {  // parents come before their children
    keys[node] = MakeRankKey(minima[node].data(), counts[node], tree.gain[node]);
    for (int child : tree.children[node]) {
      minima[child] = minima[node];
      counts[child] = counts[node];
      AppendMinimum(minima[child].data(), counts[child], tree.gain[node]);
    }
  }
  return keys;
}

TEST(GrowOrder, KeysRankNodesAsBestFirstGrowthTakesThem) {
  std::mt19937 random(7);
  for (int trial = 0; trial < 300; ++trial) {
    // Paths of at most kPathMinima nodes keep their whole sequence of minima.
    const RandomTree tree = MakeTree(random, kPathMinima - 1, 60);
    const std::vector<RankKey> keys = Keys(tree);
    std::vector<int> by_key(tree.parent.size());
    for (std::size_t node = 0; node < by_key.size(); ++node) by_key[node] = int(node);
    std::sort(by_key.begin(), by_key.end(), [&](int a, int b) { return Sooner(keys[a], keys[b]); });
    ASSERT_EQ(by_key, BestFirstOrder(tree)) << "trial " << trial;
  }
}

TEST(GrowOrder, DeepPathsKeepTheFirstMinimaAndTheirOrder) {
  // Along one path of gains 50, 40, ..., 10, then rising 11, 12, ...: the minima are the falling
  // run, then each new gain (kept while there is room).
  float minima[kPathMinima] = {};
  int count = 0;
  for (float gain : {50.0f, 40.0f, 30.0f, 20.0f, 10.0f}) AppendMinimum(minima, count, gain);
  EXPECT_EQ(count, 1);
  EXPECT_EQ(minima[0], 10.0f);
  for (int step = 1; step <= 8; ++step) AppendMinimum(minima, count, 10.0f + step);
  EXPECT_GT(count, kPathMinima);  // longer than kept
  for (int at = 0; at < kPathMinima; ++at) EXPECT_EQ(minima[at], 10.0f + at);
  // A gain at or below a kept minimum cuts the sequence there.
  AppendMinimum(minima, count, 12.0f);
  EXPECT_EQ(count, 3);
  EXPECT_EQ(minima[2], 12.0f);
  // A leaf comes before its descendants, and a lower least gain comes later.
  const float path[kPathMinima] = {10.0f};
  EXPECT_TRUE(Sooner(MakeRankKey(path, 1, 30.0f), MakeRankKey(path, 2, 30.0f)));
  EXPECT_TRUE(Sooner(MakeRankKey(path, 1, 30.0f), MakeRankKey(path, 1, 9.0f)));
  EXPECT_TRUE(SameRank(MakeRankKey(path, 1, 30.0f), MakeRankKey(path, 1, 30.0f)));
  EXPECT_NE(MakeRankKey(path, 1, 30.0f).high, 0u);
}

// The sorting network the device's selection ranks open leaves with, run step by step on the
// host, against std::sort: keys (many equal, some zero: taken leaves) before later ones, equal
// keys by id, for every count up to 70 and random counts up to 1600.
TEST(GrowOrder, SortingNetworkOrdersKeysForAnyCount) {
  std::mt19937 random(7);
  struct Item {
    RankKey key;
    int id;
  };
  auto before = [](const Item& a, const Item& b) {
    return Sooner(a.key, b.key) || (SameRank(a.key, b.key) && a.id < b.id);
  };
  std::vector<int> counts;
  for (int n = 0; n <= 70; ++n) counts.push_back(n);
  for (int draw = 0; draw < 40; ++draw) counts.push_back(1 + static_cast<int>(random() % 1600));
  for (const int n : counts) {
    std::vector<Item> items(static_cast<std::size_t>(n));
    for (int at = 0; at < n; ++at) {
      const unsigned long long high = random() % 4 == 0 ? 0 : random() % 9 + 1;
      items[at] = Item{RankKey{high, high == 0 ? 0 : random() % 3}, at};
    }
    std::shuffle(items.begin(), items.end(), random);
    std::vector<Item> expected = items;
    std::sort(expected.begin(), expected.end(), before);
    const int comparators = SortStepComparators(n);
    for (int width = 2; width / 2 < n; width *= 2) {
      for (int distance = width / 2; distance >= 1; distance /= 2) {
        for (int index = 0; index < comparators; ++index) {
          int low = 0;
          int high = 0;
          SortComparator(width, distance, index, low, high);
          ASSERT_LT(low, high);
          if (high >= n) continue;
          if (before(items[high], items[low])) std::swap(items[low], items[high]);
        }
      }
    }
    for (int at = 0; at < n; ++at) {
      ASSERT_EQ(items[at].id, expected[at].id) << "n " << n << ", position " << at;
    }
  }
}

// Comparator index run * 32 + lane of a step whose distance is at most 32 pairs two items of
// the aligned run [64 * run, 64 * run + 64): such steps can run warp by warp, a run's 32
// comparators each, with no barrier across warps.
TEST(GrowOrder, SortingStepsOfShortDistancesStayInRunsOf64) {
  for (int width = 2; width <= 4096; width *= 2) {
    for (int distance = width / 2; distance >= 1; distance /= 2) {
      if (distance > 32) continue;
      for (int run = 0; run * 64 < width * 2; ++run) {
        for (int lane = 0; lane < 32; ++lane) {
          int low = 0;
          int high = 0;
          SortComparator(width, distance, run * 32 + lane, low, high);
          ASSERT_EQ(low / 64, run) << "width " << width << ", distance " << distance;
          ASSERT_EQ(high / 64, run) << "width " << width << ", distance " << distance;
        }
      }
    }
  }
}

}  // namespace
}  // namespace tabforge::tree
