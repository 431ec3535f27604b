#include "models/forest/forest_batch.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <exception>

#include "core/error.h"
#include "core/random.h"
#include "models/tree/grower_loop.h"

namespace tabforge::forest {

using kernels::BatchNode;
using kernels::BatchSplit;
using kernels::FeatureCut;
using kernels::NodeOutcome;

namespace {

constexpr double kPureEpsilon = 1e-12;

int FirstPassPositions(const TreeSpec& spec, int features) {
  return std::max(1, std::min(spec.features_per_node, features));
}

// A node of a tree in the making (its status and children are kept beside, in TreeState).
struct NodeRecord {
  long long begin = 0;
  long long end = 0;
  std::uint64_t key = 0;
  int depth = 0;
  FeatureCut cut{};
  int bits_at = -1;  // categorical cut: its bin words in TreeState::bits
};

// A node found splittable and not yet split by the replay, with its improvement (the ranking
// reads these, not the nodes).
struct OpenNode {
  double improvement;
  int index;
};

// One tree: its nodes and the replay of the CPU grower's order of splits over them.
struct TreeState {
  std::vector<NodeRecord> nodes;
  // Per node, what the replay reads most, apart from the records (a tree's records are megabytes
  // and a batch's trees hold hundreds of them; these stay in cache): the NodeStatus (-1 while
  // not evaluated) and the first of its two children (-1 until split on the device; the second
  // is the next node).
  std::vector<std::int8_t> status;
  std::vector<int> first_child;
  std::vector<double> sums;         // per node, its class sums
  std::vector<std::uint32_t> bits;  // the categorical cuts' bin words
  tree::Tree tree{0.0};
  std::vector<int> leaf_node;                 // per leaf of `tree`: its node
  std::vector<std::pair<double, int>> queue;  // best-first: a heap of (improvement, leaf)
  std::vector<int> stack;                     // depth-first: leaves to split
  // Best-first: the nodes found splittable that the replay has not split yet (its heap's and
  // those ahead of it), from which the device splits the likeliest ahead of need.
  std::vector<OpenNode> open;
  std::vector<std::uint8_t> replayed;  // per node: split by the replay
  std::vector<int> pushed;  // best-first: the nodes the replay put on its heap this round
  // The last ranking's cut-offs (nodes whose improvement falls in these buckets or above go
  // ahead; ImprovementBucket) and the open nodes and room it ranked: the ranking is redone when
  // either has changed by an eighth.
  int open_cutoff = 0;
  int heap_cutoff = 0;
  int root_exponent = 0;  // the binary exponent of the root's improvement
  std::size_t ranked_open = 0;
  std::size_t ranked_room = 0;
  bool ranked = false;
  double root_weight = 0;
  bool started = false;
  bool done = false;
  double last_improvement = 0;  // of the replay's last split
};

// ForestTreeGrower's queue order: larger improvement first, ties to the lower leaf.
bool Before(const std::pair<double, int>& a, const std::pair<double, int>& b) {
  return a.first < b.first || (a.first == b.first && a.second > b.second);
}

// The ranking of open nodes by improvement is a count per bucket of a sixteenth of an octave,
// from 7 octaves above the root's improvement down to 56 below it (lower ones share the lowest
// bucket, higher ones the highest): a tree's ranking costs two linear passes over its nodes, not a
// selection over them (nth_element took most of an H100 fit's host replay). A cut-off bucket admits
// the nodes of the top `room` and the rest of its bucket: at most a sixteenth of an octave more.
// Which nodes go ahead of the replay only changes the device's work, never the trees.
constexpr int kImprovementBuckets = 64 * 16;
using BucketCounts = std::array<std::uint32_t, kImprovementBuckets>;

// The binary exponent field of a positive double.
int ExponentOf(double value) { return static_cast<int>(std::bit_cast<std::uint64_t>(value) >> 52); }

int ImprovementBucket(double improvement, int root_exponent) {
  if (!(improvement > 0)) return 0;
  const auto bits = std::bit_cast<std::uint64_t>(improvement);
  const int octave = static_cast<int>(bits >> 52) - root_exponent + 56;
  if (octave < 0) return 0;
  if (octave >= kImprovementBuckets / 16) return kImprovementBuckets - 1;
  return octave * 16 + static_cast<int>((bits >> 48) & 15u);
}

// The lowest bucket whose entries and those of the buckets above number at least `room` (0,
// which admits every node, when all rank in the top `room` or room is 0).
int CutoffBucket(const BucketCounts& counts, std::size_t room) {
  if (room == 0) return 0;
  std::size_t above = 0;
  for (int bucket = kImprovementBuckets - 1; bucket > 0; --bucket) {
    above += counts[bucket];
    if (above >= room) return bucket;
  }
  return 0;
}

tree::LeafSplit LeafSplitOf(const TreeState& state, const NodeRecord& node) {
  tree::LeafSplit split;
  split.gain = node.cut.improvement;
  split.feature = node.cut.feature;
  split.categorical = node.cut.categorical != 0;
  split.default_left = node.cut.default_left != 0;
  split.threshold_bin = node.cut.threshold_bin;
  if (split.categorical) {
    // The CPU grower's bit vector ends at the word of its last bin.
    const auto first = state.bits.begin() + node.bits_at;
    split.left_bins.assign(first, first + (node.cut.cut_bin / 32 + 1));
  }
  return split;
}

// Replays the CPU grower's splits of `state` as far as the nodes evaluated allow; the nodes
// it needs split next (and, ahead of need, those likely to be) go to `wanted`.
void Replay(TreeState& state, const TreeSpec& spec, const tree::BinMapper& mapper,
            std::vector<int>& wanted) {
  const bool best_first = spec.max_leaf_nodes > 0;
  auto push = [&](int leaf) {
    if (state.status[state.leaf_node[leaf]] != kernels::kNodeSplit) return;
    if (best_first) {
      state.queue.push_back({state.nodes[state.leaf_node[leaf]].cut.improvement, leaf});
      std::push_heap(state.queue.begin(), state.queue.end(), Before);
      state.pushed.push_back(state.leaf_node[leaf]);
    } else {
      state.stack.push_back(leaf);
    }
  };
  if (!state.started) {
    state.started = true;
    state.leaf_node.assign(1, 0);
    push(0);
  }
  while (true) {
    if (best_first && state.tree.num_leaves() >= spec.max_leaf_nodes) break;
    if (best_first ? state.queue.empty() : state.stack.empty()) break;
    const int leaf = best_first ? state.queue.front().second : state.stack.back();
    const int node_index = state.leaf_node[leaf];
    const int left = state.first_child[node_index], right = left + 1;
    if (left < 0) {
      // The next split is not on the device yet: ask for it. Depth-first, every pending leaf
      // is split sooner or later, so all go; best-first, the caller adds the likeliest of the
      // open nodes.
      if (best_first) {
        wanted.push_back(node_index);
      } else {
        for (int pending_leaf : state.stack) {
          const int index = state.leaf_node[pending_leaf];
          if (state.first_child[index] < 0) wanted.push_back(index);
        }
      }
      return;
    }
    if (state.status[left] < 0 || state.status[right] < 0) {
      return;  // its children are being evaluated
    }
    const NodeRecord& node = state.nodes[node_index];
    if (best_first) {
      std::pop_heap(state.queue.begin(), state.queue.end(), Before);
      state.queue.pop_back();
    } else {
      state.stack.pop_back();
    }
    state.replayed[node_index] = 1;
    state.last_improvement = node.cut.improvement;
    const int new_leaf = tree::CommitSplit(state.tree, leaf, LeafSplitOf(state, node), mapper);
    TFG_CHECK(new_leaf == static_cast<int>(state.leaf_node.size()),
              "batch replay: new leaf {} where {} was expected", new_leaf, state.leaf_node.size());
    state.leaf_node[leaf] = left;
    state.leaf_node.push_back(right);
    push(new_leaf);
    push(leaf);
  }
  state.done = true;
}

// Keeps a categorical cut's bin words (`words` at `bits`) with the tree.
void KeepBits(TreeState& state, int status, NodeRecord& node, const std::uint32_t* bits,
              int words) {
  if (status != kernels::kNodeSplit || !node.cut.categorical) return;
  node.bits_at = static_cast<int>(state.bits.size());
  state.bits.insert(state.bits.end(), bits, bits + words);
}

}  // namespace

double QuantizeTargets(std::vector<double>& targets, std::int64_t total_weight,
                       std::vector<long long>* units) {
  double largest = 0;
  for (std::size_t row = 0; row < targets.size(); ++row) {
    TFG_CHECK(std::isfinite(targets[row]), "non-finite regression target at row {}", row);
    largest = std::max(largest, std::abs(targets[row]));
  }
  double unit = 1;
  if (largest > 0) {
    // A power of two with largest / unit * total_weight < 2^52 (at most twice the smallest).
    int exponent = 0;
    std::frexp(largest * 0x1.0p-52 * double(std::max<std::int64_t>(total_weight, 1)), &exponent);
    unit = std::ldexp(1.0, exponent);
  }
  if (units != nullptr) units->resize(targets.size());
  for (std::size_t row = 0; row < targets.size(); ++row) {
    const auto count = static_cast<long long>(std::llround(targets[row] / unit));
    targets[row] = double(count) * unit;
    if (units != nullptr) (*units)[row] = count;
  }
  return unit;
}

kernels::SplitRules MakeSplitRules(const BatchData& data, std::vector<double>& xlogx) {
  kernels::SplitRules rules{};
  const bool regression = data.spec.criterion == Criterion::kSquaredError;
  rules.criterion = regression                                   ? kernels::kCriterionSquaredError
                    : data.spec.criterion == Criterion::kEntropy ? kernels::kCriterionEntropy
                                                                 : kernels::kCriterionGini;
  rules.width = regression ? 2 : data.spec.num_classes;
  rules.value_unit = data.value_unit;
  rules.features = data.mapper->num_features();
  rules.features_per_node = FirstPassPositions(data.spec, rules.features);
  rules.max_depth = data.spec.max_depth;
  rules.min_samples_split = data.spec.min_samples_split;
  rules.min_samples_leaf = data.spec.min_samples_leaf;
  rules.extra_trees = data.spec.extra_trees ? 1 : 0;
  xlogx.clear();
  if (rules.criterion == kernels::kCriterionEntropy) {
    // A node's weighted count is at most the draws of its tree (or its rows).
    const std::int64_t largest =
        data.draws > 0 ? data.draws : static_cast<std::int64_t>(data.bins->num_rows);
    xlogx.resize(static_cast<std::size_t>(largest) + 1);
    xlogx[0] = 0;
    for (std::int64_t n = 1; n <= largest; ++n) {
      const double value = static_cast<double>(n);
      xlogx[static_cast<std::size_t>(n)] = value * std::log(value);
    }
  }
  rules.xlogx = xlogx.data();
  return rules;
}

bool BatchGrowable(const BatchData& data, std::string& why) {
  if (data.spec.criterion == Criterion::kSquaredError && data.target_units == nullptr) {
    why = "no targets in units for a regression forest";
    return false;
  }
  if (data.mapper->num_features() == 0) {
    why = "no feature has bins to split on";
    return false;
  }
  if (data.spec.num_classes > kernels::kMaxBatchClasses) {
    why = fmt::format("{} classes is above the {} the GPU forest handles", data.spec.num_classes,
                      kernels::kMaxBatchClasses);
    return false;
  }
  if (data.spec.min_impurity_decrease < 0) {
    why = "min_impurity_decrease below 0";
    return false;
  }
  return true;
}

int CutWords(const tree::BinMapper& mapper) { return (mapper.MaxBins() + 31) / 32; }

bool GrowTreeBatch(BatchDevice& device, const BatchData& data, std::uint64_t first_tree, int count,
                   std::vector<tree::Tree>& trees, std::vector<std::vector<double>>& outputs,
                   const Deadline* stop, BatchTimes* times, int threads) {
  BatchTimes local;
  BatchTimes& time = times != nullptr ? *times : local;
  ++time.batches;
  Stopwatch watch;
  TFG_CHECK(count >= 1 && count <= device.slots(), "batch of {} trees for {} slots", count,
            device.slots());
  const TreeSpec& spec = data.spec;
  const tree::BinMapper& mapper = *data.mapper;
  const int features = mapper.num_features();
  const bool regression = spec.criterion == Criterion::kSquaredError;
  const int width = regression ? 2 : spec.num_classes;
  const int words = CutWords(mapper);
  const int first_positions = FirstPassPositions(spec, features);
  const std::vector<std::int64_t> slot_rows = device.StartTrees(first_tree, count);
  time.start_seconds += watch.Seconds();
  std::vector<TreeState> states(static_cast<std::size_t>(count));
  // The nodes to evaluate next: (slot, node) pairs and their work items.
  std::vector<std::pair<int, int>> eval_ids;
  std::vector<BatchNode> eval_nodes;
  std::vector<std::pair<int, int>> evaluated;  // the last round's eval_ids
  for (int slot = 0; slot < count; ++slot) {
    NodeRecord root;
    root.end = slot_rows[slot];
    states[slot].nodes.push_back(root);
    states[slot].sums.resize(std::size_t(width));
    states[slot].replayed.assign(1, 0);
    states[slot].status.assign(1, -1);
    states[slot].first_child.assign(1, -1);
    eval_ids.push_back({slot, 0});
    eval_nodes.push_back(BatchNode{0, root.end, 0, slot, 0});
  }
  std::vector<NodeOutcome> outcomes;
  std::vector<double> sums;
  std::vector<std::uint32_t> bits;
  std::vector<std::pair<int, int>> more_ids;
  std::vector<BatchNode> more_nodes;
  std::vector<BatchSplit> splits;
  std::vector<std::uint32_t> split_bits;
  // Each tree's part of a round, worked on by one thread (trees are independent) and joined in
  // slot order, so the lists are the same for any number of threads.
  struct SlotRound {
    std::vector<BatchSplit> splits;
    std::vector<std::uint32_t> split_bits;
    std::vector<std::pair<int, int>> eval_ids;
    std::vector<BatchNode> eval_nodes;
    std::vector<int> wanted;
    BucketCounts counts;
  };
  std::vector<SlotRound> rounds(static_cast<std::size_t>(count));
  std::vector<std::size_t> slot_first(static_cast<std::size_t>(count) + 1);
  const int thread_count = std::max(1, std::min(threads, count));
  // Runs work(slot, first, last) for every slot on the threads, [first, last) being the slot's
  // entries of `ids` (sorted by slot); an error in one is rethrown here.
  auto for_each_slot = [&](const std::vector<std::pair<int, int>>& ids, auto&& work) {
    std::size_t next = 0;
    for (int slot = 0; slot < count; ++slot) {
      slot_first[slot] = next;
      while (next < ids.size() && ids[next].first == slot) ++next;
    }
    slot_first[count] = next;
    std::exception_ptr failure;
#pragma omp parallel for num_threads(thread_count) schedule(dynamic, 1)
    for (int slot = 0; slot < count; ++slot) {
      try {
        work(slot, slot_first[slot], slot_first[slot + 1]);
      } catch (...) {
#pragma omp critical(forest_batch_failure)
        if (!failure) failure = std::current_exception();
      }
    }
    if (failure) std::rethrow_exception(failure);
  };
  while (!eval_nodes.empty()) {
    if (stop != nullptr && stop->Expired()) return false;
    ++time.rounds;
    time.nodes += static_cast<long long>(eval_nodes.size());
    watch = Stopwatch();
    // Records the outcomes of the nodes `ids` (and their sums, from the first pass) in their
    // trees.
    auto keep_outcomes = [&](const std::vector<std::pair<int, int>>& ids, bool with_sums) {
      for_each_slot(ids, [&](int slot, std::size_t first, std::size_t last) {
        TreeState& state = states[slot];
        for (std::size_t at = first; at < last; ++at) {
          NodeRecord& node = state.nodes[ids[at].second];
          state.status[ids[at].second] = static_cast<std::int8_t>(outcomes[at].status);
          node.cut = outcomes[at].cut;
          if (with_sums) {
            std::copy(sums.begin() + std::ptrdiff_t(at) * width,
                      sums.begin() + std::ptrdiff_t(at + 1) * width,
                      state.sums.begin() + std::ptrdiff_t(ids[at].second) * width);
          }
          KeepBits(state, outcomes[at].status, node, bits.data() + at * std::size_t(words), words);
        }
      });
    };
    device.Evaluate(eval_nodes, 0, first_positions, outcomes, sums, bits);
    keep_outcomes(eval_ids, true);
    more_ids.clear();
    more_nodes.clear();
    for (std::size_t at = 0; at < eval_ids.size(); ++at) {
      if (outcomes[at].status == kernels::kNodeNeedsMore) {
        more_ids.push_back(eval_ids[at]);
        more_nodes.push_back(eval_nodes[at]);
      }
    }
    if (!more_nodes.empty()) {
      std::vector<double> unused;
      device.Evaluate(more_nodes, first_positions, features - first_positions, outcomes, unused,
                      bits);
      time.nodes += static_cast<long long>(more_nodes.size());
      keep_outcomes(more_ids, false);
    }
    time.evaluate_seconds += watch.Seconds();
    watch = Stopwatch();
    // Each tree takes min_impurity_decrease to the nodes just evaluated and is replayed (one
    // pass over the trees); the nodes it wants split go to the device, their children are
    // evaluated next. The nodes just found splittable go too, ahead of the replay, so that the
    // device grows the trees level by level (a round per level, not per split along the CPU's
    // order): without a leaf limit the CPU splits every such node.
    evaluated.swap(eval_ids);
    for_each_slot(
        evaluated, [&](int slot, std::size_t first_evaluated, std::size_t next_evaluated) {
          TreeState& state = states[slot];
          SlotRound& round = rounds[slot];
          for (std::size_t at = first_evaluated; at < next_evaluated; ++at) {
            const int index = evaluated[at].second;
            NodeRecord& node = state.nodes[index];
            if (index == 0) {
              state.root_exponent = ExponentOf(std::max(node.cut.improvement, 1e-300));
              // The root's total weight: its weight sum (regression) or its class sums.
              if (regression) {
                state.root_weight = state.sums[0];
              } else {
                for (int k = 0; k < width; ++k) state.root_weight += state.sums[k];
              }
            }
            if (state.status[index] == kernels::kNodeSplit) {
              // scikit-learn's min_impurity_decrease (ForestTreeGrower::FindSplit's check).
              double decrease = node.cut.improvement / state.root_weight;
              if (spec.criterion == Criterion::kEntropy) decrease /= std::log(2.0);
              if (decrease + kPureEpsilon < spec.min_impurity_decrease) {
                state.status[index] = kernels::kNodeNoSplit;
              }
            }
          }
          round.splits.clear();
          round.split_bits.clear();
          round.eval_ids.clear();
          round.eval_nodes.clear();
          if (state.done) return;
          std::vector<int>& wanted = round.wanted;
          wanted.clear();
          Replay(state, spec, mapper, wanted);
          if (state.done) return;
          if (spec.max_leaf_nodes > 0) {
            // With a leaf limit the replay splits at most (room) more nodes. The open nodes (found
            // splittable, not yet split by the replay: its heap's and those grown ahead of it) that
            // rank in the top (room) times data.lookahead by improvement go ahead; the others wait
            // until they rank there or the replay asks for them.
            // Ranking every open node each round would cost O(open) a tree and a round (10 s of
            // an H100 fit's host time at lookahead 1): the cut-offs are kept, and between rankings
            // only the nodes new this round are compared with them.
            std::vector<OpenNode>& open = state.open;
            const std::size_t open_before = open.size();
            for (std::size_t at = first_evaluated; at < next_evaluated; ++at) {
              if (state.status[evaluated[at].second] == kernels::kNodeSplit) {
                const int index = evaluated[at].second;
                open.push_back({state.nodes[index].cut.improvement, index});
              }
            }
            const auto room = static_cast<std::size_t>(
                data.lookahead * double(spec.max_leaf_nodes - state.tree.num_leaves()));
            const auto drifted = [](std::size_t now, std::size_t then) {
              return now > then + then / 8 + 8 || now + now / 8 + 8 < then;
            };
            const auto bucket = [&](double improvement) {
              return ImprovementBucket(improvement, state.root_exponent);
            };
            // Whether an open node goes ahead: ranked in the room and above the floor.
            const auto ahead = [&](double improvement, int cutoff) {
              return bucket(improvement) >= cutoff && improvement >= data.speculation_floor;
            };
            if (!state.ranked || drifted(open.size(), state.ranked_open) ||
                drifted(room, state.ranked_room)) {
              BucketCounts& counts = round.counts;
              counts.fill(0);
              std::erase_if(open, [&](const OpenNode& node) {
                if (state.replayed[node.index]) return true;
                ++counts[bucket(node.improvement)];
                return false;
              });
              state.open_cutoff = CutoffBucket(counts, room);
              // The heap's best leaves are the replay's next splits: those ranking in the top
              // quarter of the room go too, whatever the open nodes ahead of them (100k synthetic
              // rows, 16 trees, 1500 leaves: XT's rounds 633 became 349, its evaluations 2% more).
              counts.fill(0);
              for (const auto& entry : state.queue) ++counts[bucket(entry.first)];
              state.heap_cutoff = CutoffBucket(counts, (room + 3) / 4);
              for (const OpenNode& node : open) {
                if (ahead(node.improvement, state.open_cutoff)) wanted.push_back(node.index);
              }
              for (const auto& entry : state.queue) {
                if (bucket(entry.first) >= state.heap_cutoff)
                  wanted.push_back(state.leaf_node[entry.second]);
              }
              state.ranked = true;
              state.ranked_open = open.size();
              state.ranked_room = room;
            } else {
              for (std::size_t at = open_before; at < open.size(); ++at) {
                if (ahead(open[at].improvement, state.open_cutoff)) {
                  wanted.push_back(open[at].index);
                }
              }
              for (int index : state.pushed) {
                if (bucket(state.nodes[index].cut.improvement) >= state.heap_cutoff)
                  wanted.push_back(index);
              }
            }
            state.pushed.clear();
          } else {
            // Without one, every node found splittable is split.
            for (std::size_t at = first_evaluated; at < next_evaluated; ++at) {
              if (state.status[evaluated[at].second] == kernels::kNodeSplit) {
                wanted.push_back(evaluated[at].second);
              }
            }
          }
          for (int index : wanted) {
            if (state.first_child[index] >= 0) continue;  // asked for twice
            const NodeRecord node = state.nodes[index];   // a copy: children are appended below
            BatchSplit split{};
            split.begin = node.begin;
            split.end = node.end;
            split.left_rows = node.cut.left_rows;
            split.slot = slot;
            split.feature = node.cut.feature;
            split.categorical = node.cut.categorical;
            split.threshold_bin = node.cut.threshold_bin;
            split.missing_bin = mapper.feature(node.cut.feature).missing_bin();
            split.default_left = node.cut.default_left;
            // Only categorical splits carry bin words (bits_begin: within this slot's, until
            // joined).
            split.bits_begin = static_cast<long long>(round.split_bits.size());
            split.bits_words = node.bits_at >= 0 ? words : 0;
            if (node.bits_at >= 0) {
              round.split_bits.insert(round.split_bits.end(), state.bits.begin() + node.bits_at,
                                      state.bits.begin() + node.bits_at + words);
            }
            round.splits.push_back(split);
            for (int side = 0; side < 2; ++side) {
              NodeRecord child;
              child.begin = side == 0 ? node.begin : node.begin + node.cut.left_rows;
              child.end = side == 0 ? node.begin + node.cut.left_rows : node.end;
              child.key = kernels::ChildNodeKey(node.key, side);
              child.depth = node.depth + 1;
              const int child_index = static_cast<int>(state.nodes.size());
              if (side == 0) state.first_child[index] = child_index;
              round.eval_ids.push_back({slot, child_index});
              round.eval_nodes.push_back(
                  BatchNode{child.begin, child.end, child.key, slot, child.depth});
              state.nodes.push_back(child);
            }
          }
          state.sums.resize(state.nodes.size() * std::size_t(width));
          state.replayed.resize(state.nodes.size(), 0);
          state.status.resize(state.nodes.size(), -1);
          state.first_child.resize(state.nodes.size(), -1);
        });
    splits.clear();
    split_bits.clear();
    eval_ids.clear();
    eval_nodes.clear();
    for (const SlotRound& round : rounds) {
      const auto bits_base = static_cast<long long>(split_bits.size());
      for (BatchSplit split : round.splits) {
        split.bits_begin += bits_base;
        splits.push_back(split);
      }
      split_bits.insert(split_bits.end(), round.split_bits.begin(), round.split_bits.end());
      eval_ids.insert(eval_ids.end(), round.eval_ids.begin(), round.eval_ids.end());
      eval_nodes.insert(eval_nodes.end(), round.eval_nodes.begin(), round.eval_nodes.end());
    }
    time.replay_seconds += watch.Seconds();
    if (splits.empty()) break;
    watch = Stopwatch();
    const std::vector<long long> left_counts = device.Partition(splits, split_bits);
    time.partition_seconds += watch.Seconds();
    for (std::size_t at = 0; at < splits.size(); ++at) {
      TFG_CHECK(left_counts[at] == splits[at].left_rows,
                "batch forest partition sent {} rows left, the split's counts say {}",
                left_counts[at], splits[at].left_rows);
    }
  }
  for (int slot = 0; slot < count; ++slot) {
    TreeState& state = states[slot];
    TFG_CHECK(state.done, "batch forest: tree {} unfinished", first_tree + std::uint64_t(slot));
    std::vector<double> leaf_outputs;
    for (int node_index : state.leaf_node) {
      const double* node_sums = state.sums.data() + std::ptrdiff_t(node_index) * width;
      if (regression) {
        leaf_outputs.push_back(node_sums[0] > 0 ? node_sums[1] / node_sums[0] : 0.0);
        continue;
      }
      double total = 0;
      for (int k = 0; k < width; ++k) total += node_sums[k];
      for (int k = 0; k < width; ++k) {
        leaf_outputs.push_back(total > 0 ? node_sums[k] / total : 0.0);
      }
    }
    if (spec.max_leaf_nodes > 0 && state.tree.num_leaves() >= spec.max_leaf_nodes) {
      time.least_last_improvement = std::min(time.least_last_improvement, state.last_improvement);
    }
    state.tree.Compact();
    trees.push_back(std::move(state.tree));
    outputs.push_back(std::move(leaf_outputs));
  }
  return true;
}

namespace {

// The batch work as host loops over the shared split search.
class HostBatchDevice final : public BatchDevice {
 public:
  HostBatchDevice(const BatchData& data, int slots)
      : data_(data), slots_(slots), rows_(static_cast<std::int64_t>(data.bins->num_rows)) {
    rules_ = MakeSplitRules(data_, xlogx_);
    const tree::BinMapper& mapper = *data_.mapper;
    for (int feature = 0; feature < mapper.num_features(); ++feature) {
      const tree::FeatureBins& bins = mapper.feature(feature);
      infos_.push_back(
          kernels::FeatureInfo{bins.num_bins, bins.categorical ? 1 : 0,
                               (*data_.bin_lows)[static_cast<std::size_t>(feature)].data()});
    }
    weights_.resize(static_cast<std::size_t>(slots));
    order_.resize(static_cast<std::size_t>(slots));
    order_keys_.resize(static_cast<std::size_t>(slots));
    threshold_keys_.resize(static_cast<std::size_t>(slots));
  }

  int slots() const override { return slots_; }

  std::vector<std::int64_t> StartTrees(std::uint64_t first_tree, int count) override {
    std::vector<std::int64_t> counts(static_cast<std::size_t>(count));
    for (int slot = 0; slot < count; ++slot) {
      const std::uint64_t tree_index = first_tree + std::uint64_t(slot);
      std::vector<std::uint32_t>& weights = weights_[slot];
      std::vector<std::int32_t>& order = order_[slot];
      order.clear();
      if (data_.draws > 0) {
        weights.assign(static_cast<std::size_t>(rows_), 0);
        const std::uint64_t stream = kernels::kBootstrapStream ^ Mix64(tree_index);
        for (std::int64_t draw = 0; draw < data_.draws; ++draw) {
          ++weights[RandomBelow(data_.seed, stream, std::uint64_t(draw), std::uint64_t(rows_))];
        }
      } else {
        weights.assign(static_cast<std::size_t>(rows_), 1);
      }
      for (std::int64_t row = 0; row < rows_; ++row) {
        if (weights[row] > 0) order.push_back(static_cast<std::int32_t>(row));
      }
      order_keys_[slot] = StreamKey(data_.seed, kernels::kFeatureOrderStream ^ Mix64(tree_index));
      threshold_keys_[slot] = StreamKey(data_.seed, kernels::kThresholdStream ^ Mix64(tree_index));
      counts[slot] = static_cast<std::int64_t>(order.size());
    }
    return counts;
  }

  void Evaluate(const std::vector<BatchNode>& nodes, int first_position, int positions,
                std::vector<NodeOutcome>& outcomes, std::vector<double>& sums,
                std::vector<std::uint32_t>& bits) override {
    const int width = rules_.width;
    const int words = CutWords(*data_.mapper);
    const int features = rules_.features;
    outcomes.assign(nodes.size(), NodeOutcome{});
    if (first_position == 0) sums.assign(nodes.size() * std::size_t(width), 0.0);
    bits.assign(nodes.size() * std::size_t(words), 0u);
    std::vector<int> order(static_cast<std::size_t>(features));
    std::vector<FeatureCut> cuts(static_cast<std::size_t>(positions));
    std::vector<std::vector<std::uint32_t>> cut_bits(static_cast<std::size_t>(positions));
    const int max_bins = data_.mapper->MaxBins();
    const bool regression = rules_.criterion == kernels::kCriterionSquaredError;
    const int count_width = regression ? 1 : width;
    std::vector<std::uint32_t> counts(static_cast<std::size_t>(max_bins) * count_width);
    std::vector<long long> values(static_cast<std::size_t>(max_bins));
    std::vector<std::uint32_t> rows(static_cast<std::size_t>(max_bins));
    const kernels::Histogram histogram{counts.data(), values.data(), rows.data()};
    std::vector<double> parent(static_cast<std::size_t>(width));
    std::vector<int> used_bins;
    for (std::size_t at = 0; at < nodes.size(); ++at) {
      const BatchNode& node = nodes[at];
      bool splittable = true;
      for (int position = 0; position < positions; ++position) {
        const int feature = kernels::FeatureAtPosition(
            order_keys_[node.slot], node.key, first_position + position, features, order.data());
        const kernels::FeatureInfo& info = infos_[feature];
        std::fill(counts.begin(), counts.end(), 0u);
        std::fill(values.begin(), values.end(), 0ll);
        std::fill(rows.begin(), rows.end(), 0u);
        const std::vector<std::uint32_t>& weights = weights_[node.slot];
        bool constant = true;
        for (long long index = node.begin; index < node.end; ++index) {
          const std::int32_t row = order_[node.slot][static_cast<std::size_t>(index)];
          const int bin = BinOf(row, feature);
          if (regression) {
            counts[bin] += weights[row];
            values[bin] += static_cast<long long>(weights[row]) * data_.target_units[row];
            constant =
                constant && data_.target_units[row] ==
                                data_.target_units[order_[node.slot][std::size_t(node.begin)]];
          } else {
            counts[bin * width + data_.classes[row]] += weights[row];
          }
          ++rows[bin];
        }
        used_bins.clear();
        for (int bin = 0; bin < info.num_bins; ++bin) {
          if (rows[bin] != 0) used_bins.push_back(bin);
        }
        const int used = static_cast<int>(used_bins.size());
        const long long count = node.end - node.begin;
        // Extremely randomized trees draw their cut from the plain histogram; the others search
        // every cut from cumulative sums, as the kernels do.
        const bool cumulative = !rules_.extra_trees;
        if (cumulative) {
          Accumulate(used_bins, counts, values, rows);
          kernels::CumulativeTotals(rules_, histogram, used_bins.data(), used, parent.data());
          splittable = kernels::SplittableNode(rules_, parent.data(), count, node.depth, constant);
        } else {
          splittable = kernels::NodeSplittable(rules_, histogram, used_bins.data(), used, count,
                                               node.depth, constant, parent.data());
        }
        if (first_position == 0 && position == 0) {
          std::copy(parent.begin(), parent.end(), sums.begin() + std::ptrdiff_t(at) * width);
        }
        if (!splittable) break;
        const double parent_score = kernels::SplitScore(rules_, parent.data());
        if (cumulative) {
          SearchCumulative(info, feature, histogram, used_bins, count, parent.data(), parent_score,
                           cuts[position]);
        } else {
          kernels::ExtraTreesCut(rules_, info, feature, histogram, used_bins.data(), used, count,
                                 parent.data(), parent_score, threshold_keys_[node.slot], node.key,
                                 cuts[position]);
        }
        cut_bits[position].assign(static_cast<std::size_t>(words), 0u);
        if (cuts[position].categorical && cuts[position].improvement > kernels::kNoCut) {
          for (int bin = 0; bin <= cuts[position].cut_bin; ++bin) {
            if (rows[bin] != 0) cut_bits[position][bin / 32] |= 1u << (bin % 32);
          }
        }
      }
      NodeOutcome& outcome = outcomes[at];
      if (!splittable) {
        outcome.status = kernels::kNodeLeaf;
        outcome.cut.improvement = kernels::kNoCut;
        continue;
      }
      int chosen = -1;
      outcome.status = kernels::CombineCuts(cuts.data(), positions, first_position > 0,
                                            first_position + positions < features, &chosen);
      if (chosen >= 0) {
        outcome.cut = cuts[chosen];
        std::copy(cut_bits[chosen].begin(), cut_bits[chosen].end(),
                  bits.begin() + std::ptrdiff_t(at) * words);
      } else {
        outcome.cut.improvement = kernels::kNoCut;
      }
    }
  }

  std::vector<long long> Partition(const std::vector<BatchSplit>& splits,
                                   const std::vector<std::uint32_t>& bits) override {
    std::vector<long long> left_counts;
    std::vector<std::int32_t> right;
    for (const BatchSplit& split : splits) {
      std::vector<std::int32_t>& order = order_[split.slot];
      long long left_write = split.begin;
      right.clear();
      for (long long at = split.begin; at < split.end; ++at) {
        const std::int32_t row = order[static_cast<std::size_t>(at)];
        const int bin = BinOf(row, split.feature);
        bool left;
        if (split.categorical) {
          left = bin / 32 < split.bits_words &&
                 ((bits[split.bits_begin + bin / 32] >> (bin % 32)) & 1u);
        } else {
          left = bin == split.missing_bin ? split.default_left != 0 : bin <= split.threshold_bin;
        }
        if (left) {
          order[static_cast<std::size_t>(left_write++)] = row;
        } else {
          right.push_back(row);
        }
      }
      std::copy(right.begin(), right.end(), order.begin() + left_write);
      left_counts.push_back(left_write - split.begin);
    }
    return left_counts;
  }

 private:
  int BinOf(std::int32_t row, int feature) const { return data_.bins->Bin(feature, row); }

  // Turns the cells of the bins in use into cumulative sums over them (the kernels' block scans).
  void Accumulate(const std::vector<int>& used_bins, std::vector<std::uint32_t>& counts,
                  std::vector<long long>& values, std::vector<std::uint32_t>& rows) const {
    const bool regression = rules_.criterion == kernels::kCriterionSquaredError;
    const int count_width = regression ? 1 : rules_.width;
    for (std::size_t at = 1; at < used_bins.size(); ++at) {
      const auto bin = static_cast<std::size_t>(used_bins[at]);
      const auto previous = static_cast<std::size_t>(used_bins[at - 1]);
      for (int k = 0; k < count_width; ++k) {
        counts[bin * count_width + k] += counts[previous * count_width + k];
      }
      if (regression) values[bin] += values[previous];
      rows[bin] += rows[previous];
    }
  }

  // The first best of every cut, from cumulative sums (the kernels weigh them a thread each).
  void SearchCumulative(const kernels::FeatureInfo& info, int feature,
                        const kernels::Histogram& cumulative, const std::vector<int>& used_bins,
                        long long count, const double* parent, double parent_score,
                        FeatureCut& best) const {
    const int used = static_cast<int>(used_bins.size());
    const kernels::CutPlan plan = kernels::PlanCuts(info, used_bins.data(), used);
    kernels::StartFeatureCut(info, feature, best);
    for (int candidate = 0; candidate < plan.candidates; ++candidate) {
      double improvement = 0;
      long long left_rows = 0;
      if (kernels::CandidateCut(rules_, cumulative, used_bins.data(), used, plan, count, parent,
                                parent_score, candidate, improvement, left_rows) &&
          improvement > best.improvement) {
        kernels::SetCandidateCut(info, used_bins.data(), plan, candidate, improvement, left_rows,
                                 best);
      }
    }
  }

  BatchData data_;
  int slots_;
  std::int64_t rows_;
  std::vector<double> xlogx_;
  kernels::SplitRules rules_{};
  std::vector<kernels::FeatureInfo> infos_;
  std::vector<std::vector<std::uint32_t>> weights_;
  std::vector<std::vector<std::int32_t>> order_;
  std::vector<std::uint64_t> order_keys_;
  std::vector<std::uint64_t> threshold_keys_;
};

}  // namespace

std::unique_ptr<BatchDevice> MakeHostBatchDevice(const BatchData& data, int slots) {
  return std::make_unique<HostBatchDevice>(data, slots);
}

}  // namespace tabforge::forest
