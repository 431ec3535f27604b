#include "models/tree/grow_order.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
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

// Gains as ordered bits (the selection's warp reductions compare them as integers): the order of
// the doubles, -0 equal to +0, and never zero (zero stands for no leaf).
TEST(GrowOrder, OrderedGainsKeepTheOrderOfGains) {
  const double inf = std::numeric_limits<double>::infinity();
  const std::vector<double> ascending = {-inf,   -1e300, -5.5, -1e-300, 0.0,
                                         1e-300, 0.25,   2.0,  1e300,   inf};
  for (std::size_t at = 0; at < ascending.size(); ++at) {
    EXPECT_NE(OrderedGain(ascending[at]), 0u) << ascending[at];
    if (at > 0) {
      EXPECT_LT(OrderedGain(ascending[at - 1]), OrderedGain(ascending[at])) << ascending[at];
    }
  }
  EXPECT_EQ(OrderedGain(-0.0), OrderedGain(0.0));
  std::mt19937 random(3);
  std::normal_distribution<double> normal(0.0, 1e3);
  for (int trial = 0; trial < 1000; ++trial) {
    const double a = normal(random);
    const double b = normal(random);
    EXPECT_EQ(OrderedGain(a) < OrderedGain(b), a < b) << a << " " << b;
  }
}

// A list kept in order from one selection to the next: the last order less the leaves taken
// since, plus new leaves in any order, placed without a sort, gives the order std::sort gives.
TEST(GrowOrder, StagedPlacesKeepTheListInOrder) {
  std::mt19937 random(7);
  struct Item {
    RankKey key;
    int id;
  };
  auto before = [](const Item& a, const Item& b) {
    return Sooner(a.key, b.key) || (SameRank(a.key, b.key) && a.id < b.id);
  };
  // Keys with many ties, so that ids often decide.
  auto draw_key = [&] {
    const unsigned long long high = random() % 9 + 1;
    return RankKey{high, random() % 3};
  };
  for (int trial = 0; trial < 600; ++trial) {
    const int old_count = trial < 8 ? trial % 4 : static_cast<int>(random() % 400);
    const int fresh = trial < 8 ? trial / 4 * 3 : static_cast<int>(random() % 40);
    std::vector<int> ids(static_cast<std::size_t>(old_count + fresh));
    for (std::size_t at = 0; at < ids.size(); ++at) ids[at] = static_cast<int>(at);
    std::shuffle(ids.begin(), ids.end(), random);
    std::vector<Item> old_items;
    for (int at = 0; at < old_count; ++at) old_items.push_back(Item{draw_key(), ids[at]});
    std::sort(old_items.begin(), old_items.end(), before);
    std::vector<Item> staged = old_items;
    for (int at = 0; at < fresh; ++at) staged.push_back(Item{draw_key(), ids[old_count + at]});
    // Taken since: none, all, or a random share, listed in any order.
    std::vector<int> removed;
    const int share = trial % 3 == 0 ? 0 : (trial % 3 == 1 ? 100 : static_cast<int>(random() % 30));
    for (int at = 0; at < old_count; ++at) {
      if (static_cast<int>(random() % 100) < share) removed.push_back(at);
    }
    std::shuffle(removed.begin(), removed.end(), random);
    std::vector<RankKey> keys;
    std::vector<int> staged_ids;
    for (const Item& item : staged) {
      keys.push_back(item.key);
      staged_ids.push_back(item.id);
    }
    const RankedStage stage{keys.data(), staged_ids.data(), old_count,
                            fresh,       removed.data(),    static_cast<int>(removed.size())};
    std::vector<Item> expected;
    std::vector<std::uint8_t> gone(static_cast<std::size_t>(old_count), 0);
    for (int at : removed) gone[at] = 1;
    for (int at = 0; at < old_count + fresh; ++at) {
      if (at >= old_count || !gone[at]) expected.push_back(staged[at]);
    }
    std::sort(expected.begin(), expected.end(), before);
    std::vector<int> placed(expected.size(), -1);
    for (int at = 0; at < old_count + fresh; ++at) {
      if (at < old_count && gone[at]) continue;
      const int place = StagedPlace(stage, at);
      ASSERT_GE(place, 0);
      ASSERT_LT(place, static_cast<int>(placed.size()));
      ASSERT_EQ(placed[place], -1) << "two entries at place " << place;
      placed[place] = staged[at].id;
    }
    for (std::size_t place = 0; place < expected.size(); ++place) {
      ASSERT_EQ(placed[place], expected[place].id)
          << "trial " << trial << ", place " << place << " of " << expected.size();
    }
  }
}

}  // namespace
}  // namespace tabforge::tree
