// The CUDA grower's host side (CUDA builds only): device arrays, the batch graph, and the
// replay of a finished tree. The device grows the tree by itself (device_kernels.h); the host
// queues batches until the device reports the tree complete, then reads the leaf records back
// and replays the same best-first choices (grower_loop.h) to build the Tree.
#include "models/tree/device_grower.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <thread>

#include "device/cuda_check.h"
#include "models/tree/device_kernels.h"
#include "models/tree/grower_loop.h"

namespace tabforge::tree {
namespace {

using device::DeviceArray;
using device::Upload;
using kernels::Word;

// Feature groups for histogram launches, as (first, last) feature pairs: runs of features whose
// cells fit a block's shared memory, and single features too wide for it (16-bit bins), summed
// with global atomics.
struct FeatureGroups {
  std::vector<int> shared;  // first0, last0, first1, last1, ...
  std::vector<int> global;
  int shared_cells = 0;  // most cells of a shared group
};

FeatureGroups GroupFeatures(const std::vector<std::int64_t>& offsets, int cells) {
  FeatureGroups groups;
  const int features = static_cast<int>(offsets.size()) - 1;
  std::int64_t open_cells = -1;  // cells of the open shared group; -1: none open
  for (int feature = 0; feature < features; ++feature) {
    const std::int64_t width = offsets[feature + 1] - offsets[feature];
    if (width > cells) {
      groups.global.insert(groups.global.end(), {feature, feature + 1});
      open_cells = -1;
      continue;
    }
    if (open_cells < 0 || open_cells + width > cells) {
      groups.shared.insert(groups.shared.end(), {feature, feature + 1});
      open_cells = width;
    } else {
      groups.shared.back() = feature + 1;
      open_cells += width;
    }
    groups.shared_cells = std::max<int>(groups.shared_cells, static_cast<int>(open_cells));
  }
  return groups;
}

// Copies a row-major matrix of `rows` x `width` cells to the device with rows `stride` cells
// apart (stride >= width; the padding cells are zero). The host rows are copied as they are
// and spread on the device, where a pitched copy is fast.
template <typename Cell>
void UploadRows(DeviceArray<Cell>& target, const Cell* source, std::int64_t rows, int width,
                int stride) {
  const std::size_t cells = static_cast<std::size_t>(rows) * stride;
  if (stride == width) {
    Upload(target, source, cells);
    return;
  }
  DeviceArray<Cell> packed;
  Upload(packed, source, static_cast<std::size_t>(rows) * width);
  target.Resize(cells);
  TFG_CUDA_CHECK(cudaMemset(target.data(), 0, target.bytes()));
  TFG_CUDA_CHECK(cudaMemcpy2D(target.data(), sizeof(Cell) * stride, packed.data(),
                              sizeof(Cell) * width, sizeof(Cell) * width,
                              static_cast<std::size_t>(rows), cudaMemcpyDeviceToDevice));
}

}  // namespace

struct DeviceTreeGrower::State {
  const BinMapper* mapper = nullptr;
  GrowerParams params;
  std::int64_t rows = 0;
  int features = 0;
  std::int64_t total_bins = 0;
  FeatureGroups groups;
  DeviceArray<int> shared_groups;
  DeviceArray<int> global_groups;
  DeviceArray<std::uint8_t> bins8;
  DeviceArray<std::uint16_t> bins16;
  DeviceArray<std::uint8_t> columns8;  // the same cells column by column
  DeviceArray<std::uint16_t> columns16;
  DeviceArray<std::int64_t> offsets;
  DeviceArray<int> num_bins;
  DeviceArray<int> missing_bins;
  DeviceArray<std::uint8_t> categorical;
  DeviceArray<std::uint8_t> active;
  DeviceArray<std::int32_t> order;  // two halves of `rows` positions (GrowContext::half)
  int slots = 0;                 // histograms held: kSlotsPerLeaf (or fewer, 2 at least) per leaf
  DeviceArray<Word> histograms;  // 2 words per cell
  int dirty_slots = 0;           // histograms [0, dirty_slots) hold sums of the last tree
  DeviceArray<kernels::GrowState> grow_state;
  DeviceArray<kernels::GrowLeaf> leaves;
  DeviceArray<kernels::LeafBrief> briefs;
  DeviceArray<int> tree_to_device;
  DeviceArray<long long> tree_ranges;
  DeviceArray<int> leaf_prefix;
  DeviceArray<long long> leaf_sums;
  DeviceArray<long long> repair_ranges;
  DeviceArray<int> repair_prefix;
  DeviceArray<kernels::BatchSplit> batch;
  DeviceArray<int> scan_ids;
  DeviceArray<int> partition_prefix;
  DeviceArray<int> histogram_prefix;
  DeviceArray<long long> histogram_rows;
  DeviceArray<int> wide_prefix;
  DeviceArray<unsigned long long> cursors;
  DeviceArray<double> values;
  DeviceArray<kernels::ScanCandidate> candidates;
  DeviceArray<unsigned int> leaf_scans;
  DeviceArray<RankKey> ranked_keys;
  DeviceArray<int> ranked_ids;
  device::PinnedArray<kernels::HostStatus> status;
  device::PinnedArray<kernels::GrowState> state_copy;
  device::PinnedArray<kernels::GrowLeaf> leaf_copy;
  device::PinnedArray<double> value_copy;
  cudaEvent_t copied = nullptr;  // recorded once a tree's records are queued to the host
  kernels::GrowContext context;
  // One batch's kernels as a graph, for the gradient and scale arrays it was captured with.
  cudaGraphExec_t batch_graph = nullptr;
  const void* graph_pairs = nullptr;
  const void* graph_scales = nullptr;
  std::int64_t batches_run = 0;
  std::int64_t rows_histogrammed = 0;  // rows read by histogram builds, every tree
  std::int64_t unused_split_rows = 0;  // of those, rows of splits no tree used

  ~State() {
    // Batches a failed Grow left queued may still write the mapped status and the arrays.
    cudaStreamSynchronize(nullptr);
    if (batch_graph != nullptr) cudaGraphExecDestroy(batch_graph);
    if (copied != nullptr) cudaEventDestroy(copied);
  }

  // Captures kernels::EnqueueBatch for the context as it is now.
  void CaptureBatch() {
    if (batch_graph != nullptr) {
      TFG_CUDA_CHECK(cudaGraphExecDestroy(batch_graph));
      batch_graph = nullptr;
    }
    cudaStream_t stream = nullptr;
    TFG_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    cudaGraph_t graph = nullptr;
    cudaError_t status_code = cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal);
    if (status_code == cudaSuccess) {
      try {
        kernels::EnqueueBatch(context, stream);
      } catch (...) {
        cudaStreamEndCapture(stream, &graph);
        if (graph != nullptr) cudaGraphDestroy(graph);
        cudaStreamDestroy(stream);
        throw;
      }
      status_code = cudaStreamEndCapture(stream, &graph);
    }
    cudaStreamDestroy(stream);
    if (status_code == cudaSuccess) {
      status_code = cudaGraphInstantiate(&batch_graph, graph, 0);
      cudaGraphDestroy(graph);
    }
    if (status_code != cudaSuccess) {
      batch_graph = nullptr;
      device::ThrowCudaError(status_code, "capturing the grower's batch graph", __FILE__, __LINE__);
    }
    graph_pairs = context.pairs;
    graph_scales = context.scales;
  }
};

namespace {

// Batches queued ahead of the device's last selection (a batch queued after the tree is
// complete does nothing).
constexpr int kQueuedAhead = 3;

LeafSplit SplitOf(const kernels::GrowLeaf& record) {
  LeafSplit split;
  if (record.feature < 0) return split;
  split.gain = record.gain;
  split.feature = record.feature;
  split.categorical = record.categorical != 0;
  split.default_left = record.default_left != 0;
  split.threshold_bin = record.threshold_bin;
  split.left.packed = record.left_packed;
  split.left.hessian = record.left_hessian;
  if (split.categorical) {
    // The CPU's bitset ends at the word of the highest bin going left.
    int words = kernels::kBitsetWords;
    while (words > 0 && record.bitset[words - 1] == 0) --words;
    split.left_bins.assign(record.bitset, record.bitset + words);
  }
  return split;
}

}  // namespace

DeviceTreeGrower::DeviceTreeGrower(const BinMatrix& bins, const BinMapper& mapper,
                                   const GrowerParams& params)
    : state_(std::make_unique<State>()) {
  State& s = *state_;
  s.mapper = &mapper;
  s.params = params;
  s.rows = bins.num_rows;
  s.features = bins.num_features;
  if (s.features < 1) throw NotSupported("the CUDA grower needs at least one binned feature");
  const int num_leaves = std::max(params.num_leaves, 2);
  if (num_leaves > kernels::kMaxLeaves) {
    throw NotSupported(
        fmt::format("the CUDA grower takes at most {} leaves per tree; num_leaves "
                    "is {}",
                    kernels::kMaxLeaves, num_leaves));
  }
  const HistogramLayout layout(mapper);
  s.total_bins = layout.total_bins();
  int ordinal = 0;
  int multiprocessors = 1;
  TFG_CUDA_CHECK(cudaGetDevice(&ordinal));
  TFG_CUDA_CHECK(cudaDeviceGetAttribute(&multiprocessors, cudaDevAttrMultiProcessorCount, ordinal));
  s.groups = GroupFeatures(layout.offsets, kernels::SharedHistogramCells());
  Upload(s.shared_groups, s.groups.shared.data(), s.groups.shared.size());
  Upload(s.global_groups, s.groups.global.data(), s.groups.global.size());
  kernels::GrowContext& c = s.context;
  c.bins.stride = kernels::PaddedStride(s.features);
  c.bins.rows = s.rows;
  const std::size_t cells = static_cast<std::size_t>(s.rows) * s.features;
  if (bins.wide()) {
    UploadRows(s.bins16, bins.bins16.data(), s.rows, s.features, c.bins.stride);
    s.columns16.Resize(cells);
    kernels::FillColumns(s.bins16.data(), c.bins.stride, s.rows, s.features, s.columns16.data(),
                         nullptr);
    c.bins.bins16 = s.bins16.data();
    c.bins.columns16 = s.columns16.data();
  } else {
    UploadRows(s.bins8, bins.bins8.data(), s.rows, s.features, c.bins.stride);
    s.columns8.Resize(cells);
    kernels::FillColumns(s.bins8.data(), c.bins.stride, s.rows, s.features, s.columns8.data(),
                         nullptr);
    c.bins.bins8 = s.bins8.data();
    c.bins.columns8 = s.columns8.data();
  }
  Upload(s.offsets, layout.offsets.data(), layout.offsets.size());
  std::vector<int> num_bins(static_cast<std::size_t>(s.features));
  std::vector<int> missing_bins(static_cast<std::size_t>(s.features));
  std::vector<std::uint8_t> categorical(static_cast<std::size_t>(s.features));
  for (int feature = 0; feature < s.features; ++feature) {
    num_bins[feature] = mapper.feature(feature).num_bins;
    missing_bins[feature] = mapper.feature(feature).missing_bin();
    categorical[feature] = mapper.feature(feature).categorical;
    if (categorical[feature] && num_bins[feature] > kernels::kMaxCategoryBins) {
      throw NotSupported(fmt::format(
          "the CUDA grower takes categorical features of at most {} bins; feature {} has {}",
          kernels::kMaxCategoryBins, feature, num_bins[feature]));
    }
  }
  Upload(s.num_bins, num_bins.data(), num_bins.size());
  Upload(s.missing_bins, missing_bins.data(), missing_bins.size());
  Upload(s.categorical, categorical.data(), categorical.size());
  s.active.Resize(static_cast<std::size_t>(s.features));
  s.order.Resize(2 * static_cast<std::size_t>(s.rows));
  const std::size_t leaves = static_cast<std::size_t>(num_leaves);
  int slots_per_leaf = kernels::kSlotsPerLeaf;
  const int select_leaves = params.num_leaves;
  while (slots_per_leaf > 2 &&
         !kernels::SelectionFits(select_leaves, static_cast<int>(2 * slots_per_leaf * leaves))) {
    --slots_per_leaf;
  }
  s.slots = static_cast<int>(slots_per_leaf * leaves);
  s.histograms.Resize(2 * static_cast<std::size_t>(s.total_bins) * s.slots);
  s.dirty_slots = s.slots;
  const std::size_t capacity = 2 * static_cast<std::size_t>(s.slots);  // root + 2 per split
  s.grow_state.Resize(1);
  s.leaves.Resize(capacity);
  s.briefs.Resize(capacity);
  s.tree_to_device.Resize(leaves);
  s.tree_ranges.Resize(2 * leaves);
  s.leaf_prefix.Resize(leaves + 1);
  TFG_CUDA_CHECK(cudaMemset(s.leaf_prefix.data(), 0, s.leaf_prefix.bytes()));
  s.leaf_sums.Resize(leaves);
  s.batch.Resize(leaves);
  s.scan_ids.Resize(2 * leaves);
  s.partition_prefix.Resize(leaves + 1);
  s.histogram_prefix.Resize(leaves + 1);
  s.histogram_rows.Resize(leaves);
  s.wide_prefix.Resize(leaves + 1);
  s.cursors.Resize(2 * leaves);
  s.values.Resize(leaves);
  s.status.Resize(1);
  TFG_CUDA_CHECK(cudaEventCreateWithFlags(&s.copied, cudaEventDisableTiming));
  s.state_copy.Resize(1);
  s.leaf_copy.Resize(capacity);
  s.value_copy.Resize(leaves);

  c.groups.shared = s.shared_groups.data();
  c.groups.shared_count = static_cast<int>(s.groups.shared.size() / 2);
  c.groups.shared_cells = s.groups.shared_cells;
  // Small children by slabs of 4 features, where a batch's slab items stay within their bound.
  int slabs = 0;
  for (std::size_t group = 0; group + 1 < s.groups.shared.size(); group += 2) {
    const int first = s.groups.shared[group];
    const int last = s.groups.shared[group + 1];
    slabs = std::max(slabs, (last + kernels::kSlabFeatures - 1) / kernels::kSlabFeatures -
                                first / kernels::kSlabFeatures);
  }
  c.histogram_slabs = static_cast<std::int64_t>(slabs) * kernels::kSlabRunsPerChild * num_leaves <=
                              kernels::kMaxSlabItems
                          ? slabs
                          : 0;
  c.groups.global = s.global_groups.data();
  c.groups.global_count = static_cast<int>(s.groups.global.size() / 2);
  c.groups.offsets = s.offsets.data();
  c.groups.total_bins = s.total_bins;
  c.num_features = s.features;
  c.num_bins = s.num_bins.data();
  c.missing_bins = s.missing_bins.data();
  c.categorical = s.categorical.data();
  c.active = s.active.data();
  c.scan.min_data_in_leaf = params.min_data_in_leaf;
  c.scan.min_sum_hessian_in_leaf = params.min_sum_hessian_in_leaf;
  c.scan.min_gain_to_split = params.min_gain_to_split;
  c.scan.reg = params.reg;
  c.scan.max_cat_to_onehot = params.max_cat_to_onehot;
  c.scan.max_cat_threshold = params.max_cat_threshold;
  c.scan.cat_smooth = params.cat_smooth;
  c.scan.cat_l2 = params.cat_l2;
  c.scan.min_data_per_group = params.min_data_per_group;
  c.scan.extra_trees = params.extra_trees ? 1 : 0;
  c.scan.max_depth = params.max_depth;
  c.scan.feature_fraction_bynode = params.feature_fraction_bynode;
  c.num_leaves = params.num_leaves;
  // Node-level feature sampling and extremely randomized trees draw from node numbers known
  // only when a split is committed, so they split one leaf per batch.
  c.ahead = params.feature_fraction_bynode >= 1.0 && !params.extra_trees ? 1 : 0;
  c.state = s.grow_state.data();
  c.host = s.status.device_data();
  c.leaves = s.leaves.data();
  c.briefs = s.briefs.data();
  c.leaf_capacity = static_cast<int>(capacity);
  c.tree_to_device = s.tree_to_device.data();
  c.tree_ranges = s.tree_ranges.data();
  c.leaf_prefix = s.leaf_prefix.data();
  c.leaf_sums = s.leaf_sums.data();
  s.repair_ranges.Resize(2 * capacity);
  s.repair_prefix.Resize(capacity + 1);
  TFG_CUDA_CHECK(cudaMemset(s.repair_prefix.data(), 0, s.repair_prefix.bytes()));
  c.repair_ranges = s.repair_ranges.data();
  c.repair_prefix = s.repair_prefix.data();
  c.batch = s.batch.data();
  c.scan_ids = s.scan_ids.data();
  c.partition_prefix = s.partition_prefix.data();
  c.histogram_prefix = s.histogram_prefix.data();
  c.histogram_rows = s.histogram_rows.data();
  c.wide_prefix = s.wide_prefix.data();
  c.order = s.order.data();
  c.half = s.rows;
  c.cursors = s.cursors.data();
  c.histograms = s.histograms.data();
  c.slots = s.slots;
  c.max_blocks = 4 * multiprocessors;
  int major = 0;
  TFG_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, ordinal));
  c.dependent_launch = major >= 9 ? 1 : 0;
  const int select_blocks = kernels::PrepareSelection(c.num_leaves, c.leaf_capacity);
  if (select_blocks < 1) {
    throw NotSupported(fmt::format(
        "the CUDA grower's selection needs {} bytes of shared memory a block for {} leaves, more "
        "than this device gives; use fewer leaves",
        kernels::SelectionBytes(c.num_leaves, c.leaf_capacity), c.num_leaves));
  }
  c.scan_blocks = std::min(4, select_blocks) * multiprocessors;
  c.scan_chunks =
      std::max(1, (mapper.MaxBins() - 1 + kernels::kScanChunk - 1) / kernels::kScanChunk);
  s.candidates.Resize(2 * leaves * static_cast<std::size_t>(s.features) * c.scan_chunks);
  s.leaf_scans.Resize(2 * leaves);
  TFG_CUDA_CHECK(cudaMemset(s.leaf_scans.data(), 0, s.leaf_scans.bytes()));
  c.candidates = s.candidates.data();
  c.leaf_scans = s.leaf_scans.data();
  s.ranked_keys.Resize(leaves);
  s.ranked_ids.Resize(leaves);
  c.ranked_keys = s.ranked_keys.data();
  c.ranked_ids = s.ranked_ids.data();
}

DeviceTreeGrower::~DeviceTreeGrower() = default;

std::int64_t DeviceTreeGrower::EstimateBytes(const BinMatrix& bins, const BinMapper& mapper,
                                             const GrowerParams& params) {
  const HistogramLayout layout(mapper);
  // The device's rows are padded (kernels::PaddedStride; an unpadded copy passes through),
  // beside a column-major copy.
  const std::int64_t stride = kernels::PaddedStride(bins.num_features);
  const std::int64_t bin_bytes =
      bins.num_rows * (bins.wide() ? 2 : 1) *
      ((stride == bins.num_features ? stride : stride + bins.num_features) + bins.num_features);
  // Bins, a row order of two halves, kSlotsPerLeaf histograms and twice as many leaf records per
  // leaf, a ranked open leaf per leaf, the scan's candidates and small arrays.
  const std::int64_t leaves = std::max(params.num_leaves, 2);
  const std::int64_t chunks =
      std::max(1, (mapper.MaxBins() - 1 + kernels::kScanChunk - 1) / kernels::kScanChunk);
  return bin_bytes + 8 * bins.num_rows +
         16 * kernels::kSlotsPerLeaf * layout.total_bins() * leaves +
         2 * kernels::kSlotsPerLeaf * leaves *
             std::int64_t(sizeof(kernels::GrowLeaf) + sizeof(kernels::LeafBrief) +
                          3 * sizeof(long long)) +
         leaves * std::int64_t(sizeof(kernels::BatchSplit) + sizeof(RankKey) + sizeof(int)) +
         2 * leaves * bins.num_features * chunks * std::int64_t(sizeof(kernels::ScanCandidate)) +
         (std::int64_t(1) << 20);
}

const std::int32_t* DeviceTreeGrower::device_order() const { return state_->order.data(); }

const long long* DeviceTreeGrower::device_leaf_ranges() const { return state_->tree_ranges.data(); }

const double* DeviceTreeGrower::device_leaf_values() const { return state_->values.data(); }

const int* DeviceTreeGrower::device_leaf_chunks() const { return state_->leaf_prefix.data(); }

const int* DeviceTreeGrower::device_leaf_count() const {
  return &state_->grow_state.data()->tree_leaves;
}

std::int64_t DeviceTreeGrower::batches_run() const { return state_->batches_run; }

std::int64_t DeviceTreeGrower::histogram_bytes() const {
  const kernels::GrowContext& c = state_->context;
  const std::int64_t cell_bytes = c.bins.bins8 != nullptr ? 1 : 2;
  // Each launch group (a shared-memory group or a wide feature) reads a row's position and
  // gradient pair again.
  const std::int64_t groups = c.groups.shared_count + c.groups.global_count;
  const std::int64_t row_bytes = c.num_features * cell_bytes +
                                 groups * std::int64_t(sizeof(std::int32_t) + sizeof(GradientPair));
  return state_->rows_histogrammed * row_bytes;
}

std::int64_t DeviceTreeGrower::unused_split_rows() const { return state_->unused_split_rows; }

int DeviceTreeGrower::device_bin_stride() const { return state_->context.bins.stride; }

const void* DeviceTreeGrower::device_bins() const {
  return state_->bins16.data() != nullptr ? static_cast<const void*>(state_->bins16.data())
                                          : static_cast<const void*>(state_->bins8.data());
}

// The device grows the tree batch by batch (kernels::EnqueueRoot, then the batch graph queued
// a few ahead until the selection reports the tree complete); the host then reads the leaf
// records and replays the CPU's loop over them: the LeafQueue's choice among the tree's leaves,
// and CommitSplit of the split the device made for the chosen one, kept to O(leaves log
// leaves); the device runs what the caller queued in `on_grown` meanwhile.
Tree DeviceTreeGrower::Grow(const std::int32_t* device_rows, std::int64_t num_rows,
                            const DeviceGradients& gradients,
                            const std::vector<std::uint8_t>& active, std::uint64_t seed,
                            const std::function<void()>& on_grown) {
  State& s = *state_;
  kernels::GrowContext& c = s.context;
  const std::int64_t count = device_rows != nullptr ? num_rows : s.rows;
  if (device_rows != nullptr) {
    TFG_CUDA_CHECK(cudaMemcpyAsync(s.order.data(), device_rows, sizeof(std::int32_t) * count,
                                   cudaMemcpyDeviceToDevice));
  } else {
    kernels::FillSequence(s.order.data(), count, nullptr);
  }
  TFG_CHECK(active.size() == static_cast<std::size_t>(s.features),
            "the CUDA grower got {} feature flags for {} features", active.size(), s.features);
  TFG_CUDA_CHECK(
      cudaMemcpyAsync(s.active.data(), active.data(), active.size(), cudaMemcpyHostToDevice));
  c.pairs = gradients.pairs;
  c.scales = gradients.scales;
  if (s.batch_graph == nullptr || s.graph_pairs != c.pairs || s.graph_scales != c.scales) {
    s.CaptureBatch();
  }

  // Queue batches while the device has not reported the tree complete.
  kernels::HostStatus* status = s.status.data();
  std::atomic_ref<int> done(status->done);
  std::atomic_ref<int> completed(status->completed);
  done.store(0);
  completed.store(0);
  // Each slot is used once per tree: zero those the last tree used.
  TFG_CUDA_CHECK(cudaMemsetAsync(s.histograms.data(), 0,
                                 2 * sizeof(Word) * static_cast<std::size_t>(s.total_bins) *
                                     static_cast<std::size_t>(s.dirty_slots)));
  s.dirty_slots = s.slots;  // until this tree reports the slots it used
  kernels::EnqueueRoot(c, count, seed, nullptr);
  int queued = 1;
  const int most_batches = 2 * s.params.num_leaves + kQueuedAhead + 2;
  try {
    while (done.load() == 0) {
      if (queued - completed.load() < kQueuedAhead) {
        TFG_CHECK(queued < most_batches, "the device growth of a tree did not finish in {} batches",
                  most_batches);
        TFG_CUDA_CHECK(cudaGraphLaunch(s.batch_graph, nullptr));
        ++queued;
        continue;
      }
      const cudaError_t idle = cudaStreamQuery(nullptr);
      if (idle != cudaSuccess && idle != cudaErrorNotReady) {
        device::ThrowCudaError(idle, "cudaStreamQuery (growing a tree)", __FILE__, __LINE__);
      }
      // Every queued batch has run: each posted its selection, or the tree is complete.
      TFG_CHECK(idle != cudaSuccess || done.load() != 0 || completed.load() == queued,
                "the device ran {} batches of a tree but reported {}", queued, completed.load());
      std::this_thread::yield();
    }
  } catch (...) {
    // Batches already queued may still write the mapped status and the arrays: let them
    // finish before the next tree resets them (or the grower frees them).
    cudaStreamSynchronize(nullptr);
    throw;
  }
  kernels::EnqueueLeafValues(c, gradients.exact_gradients, s.values.data(), nullptr);
  TFG_CUDA_CHECK(cudaMemcpyAsync(s.state_copy.data(), s.grow_state.data(),
                                 sizeof(kernels::GrowState), cudaMemcpyDeviceToHost));
  TFG_CUDA_CHECK(cudaMemcpyAsync(s.leaf_copy.data(), s.leaves.data(),
                                 s.leaves.size() * sizeof(kernels::GrowLeaf),
                                 cudaMemcpyDeviceToHost));
  TFG_CUDA_CHECK(cudaMemcpyAsync(s.value_copy.data(), s.values.data(),
                                 s.values.size() * sizeof(double), cudaMemcpyDeviceToHost));
  TFG_CUDA_CHECK(cudaEventRecord(s.copied, nullptr));
  if (on_grown) {
    try {
      on_grown();
    } catch (...) {
      cudaStreamSynchronize(nullptr);  // what it queued may still use the arrays
      throw;
    }
  }
  TFG_CUDA_CHECK(cudaEventSynchronize(s.copied));

  const kernels::GrowState& grown = *s.state_copy.data();
  s.dirty_slots = std::clamp(grown.slots_used, 0, s.slots);
  s.batches_run += grown.selections;
  TFG_CHECK(grown.error != kernels::kGrowBadPartition,
            "a device partition's sides disagree with its split's sums");
  TFG_CHECK(grown.error != kernels::kGrowOutOfSlots, "the CUDA grower ran out of its {} histograms",
            s.slots);
  const kernels::GrowLeaf* records = s.leaf_copy.data();
  std::vector<LeafSplit> splits;
  splits.reserve(static_cast<std::size_t>(grown.device_leaves));
  for (int id = 0; id < grown.device_leaves; ++id) splits.push_back(SplitOf(records[id]));
  Tree tree(0.0);
  std::vector<int> tree_to_device = {0};  // tree leaf -> device leaf
  std::vector<std::uint8_t> used(static_cast<std::size_t>(grown.device_leaves), 0);
  LeafQueue queue;
  queue.Offer(0, splits[0]);
  while (tree.num_leaves() < s.params.num_leaves) {
    const int chosen = queue.Pop();
    if (chosen < 0) break;
    const int id = tree_to_device[chosen];
    TFG_CHECK(records[id].left >= 0 && records[id].right < grown.device_leaves,
              "the device did not split leaf {} that the tree splits next", chosen);
    const int made = CommitSplit(tree, chosen, splits[id], *s.mapper);
    used[static_cast<std::size_t>(id)] = 1;
    tree_to_device[chosen] = records[id].left;
    tree_to_device.push_back(records[id].right);
    queue.Offer(chosen, splits[records[id].left]);
    queue.Offer(made, splits[records[id].right]);
  }
  TFG_CHECK(tree.num_leaves() == grown.tree_leaves,
            "the device grew {} leaves, the replay of its splits {}", grown.tree_leaves,
            tree.num_leaves());
  // The root's histogram reads every row; each split made (chosen or not) reads its smaller
  // child's rows.
  s.rows_histogrammed += grown.count;
  for (int id = 0; id < grown.device_leaves; ++id) {
    const int left = records[id].left;
    const int right = records[id].right;
    if (left < 0) continue;
    TFG_CHECK(left < grown.device_leaves && right < grown.device_leaves,
              "device leaf {} has children {} and {} of {} leaves", id, left, right,
              grown.device_leaves);
    const std::int64_t smaller = std::min(records[left].end - records[left].begin,
                                          records[right].end - records[right].begin);
    s.rows_histogrammed += smaller;
    if (!used[static_cast<std::size_t>(id)]) s.unused_split_rows += smaller;
  }

  const int num_leaves = tree.num_leaves();
  std::vector<double>& leaf_values = tree.leaf_values();
  for (int leaf = 0; leaf < num_leaves; ++leaf) leaf_values[leaf] = s.value_copy.data()[leaf];
  tree.Compact();
  return tree;
}

}  // namespace tabforge::tree
