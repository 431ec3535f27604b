// The batch forest grower's CUDA device (CUDA builds only; forest_no_cuda.cc answers in
// CPU-only ones). The bins, classes and feature bounds go up once; each slot holds one tree's
// bootstrap counts and row order for the whole batch; nodes go up and their outcomes come back
// once per level.
#include <fmt/format.h>

#include <algorithm>

#include "core/error.h"
#include "device/cuda_check.h"
#include "device/cuda_device.h"
#include "models/forest/forest_batch.h"
#include "models/forest/forest_kernels.h"
#include "models/tree/device_kernels.h"

namespace tabforge::forest {
namespace {

using device::DeviceArray;

// The most device memory the node lists of one Evaluate or Partition launch take: longer lists
// go in parts (nodes are independent, so the parts give the same results).
constexpr std::int64_t kCallBytes = 256ll << 20;

// Grows `array` to at least `count` elements (by half again, so levels of growing size do not
// reallocate every time).
template <typename T>
void Reserve(DeviceArray<T>& array, std::size_t count) {
  if (array.size() < count) array.Resize(std::max(count, array.size() + array.size() / 2));
}

// Copies `count` elements to `target` (grown to hold them) on `stream`; the source must live
// until the stream is next synchronised (every call of the device below ends with that).
template <typename T>
void UploadRange(DeviceArray<T>& target, const T* source, std::size_t count,
                 kernels::Stream stream) {
  Reserve(target, count);
  if (count > 0) {
    TFG_CUDA_CHECK(
        cudaMemcpyAsync(target.data(), source, count * sizeof(T), cudaMemcpyHostToDevice, stream));
  }
}

// Uploads a row-major bin matrix of `features` columns as the column-major one the kernels
// read, turned around on the device.
template <typename Cell>
void UploadColumns(DeviceArray<Cell>& target, const std::vector<Cell>& cells, int features,
                   kernels::Stream stream) {
  DeviceArray<Cell> staged;
  UploadRange(staged, cells.data(), cells.size(), stream);
  Reserve(target, cells.size());
  const auto rows = static_cast<std::int64_t>(features > 0 ? cells.size() / features : 0);
  tree::kernels::FillColumns(staged.data(), features, rows, features, target.data(), stream);
  TFG_CUDA_CHECK(cudaStreamSynchronize(stream));  // before the staged copy is freed
}

template <typename T>
void UploadInto(DeviceArray<T>& target, const std::vector<T>& source, kernels::Stream stream) {
  UploadRange(target, source.data(), source.size(), stream);
}

// Copies the first `count` elements of `source` to `target` once the stream's work is done.
template <typename T>
void DownloadFrom(T* target, const DeviceArray<T>& source, std::size_t count,
                  kernels::Stream stream) {
  if (count > 0) {
    TFG_CUDA_CHECK(
        cudaMemcpyAsync(target, source.data(), count * sizeof(T), cudaMemcpyDeviceToHost, stream));
  }
  TFG_CUDA_CHECK(cudaStreamSynchronize(stream));
}

// A stream of its own, not ordered with other work on the GPU (batches grown by several host
// threads at once share the device), destroyed once its work is done.
class OwnStream {
 public:
  OwnStream() { TFG_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking)); }
  ~OwnStream() {
    cudaStreamSynchronize(stream_);
    cudaStreamDestroy(stream_);
  }
  OwnStream(const OwnStream&) = delete;
  OwnStream& operator=(const OwnStream&) = delete;
  kernels::Stream get() const { return stream_; }

 private:
  kernels::Stream stream_ = nullptr;
};

class CudaBatchDevice final : public BatchDevice {
 public:
  // `ordinal`: the GPU, made current on the calling thread by every call (the CUDA current
  // device is per host thread, and batches are grown from several).
  CudaBatchDevice(const BatchData& data, int slots, int ordinal)
      : data_(data), ordinal_(ordinal), slots_(slots) {
    TFG_CUDA_CHECK(cudaSetDevice(ordinal_));
    own_stream_ = std::make_unique<OwnStream>();
    stream_ = own_stream_->get();
    rules_ = MakeSplitRules(data_, xlogx_);
    small_rows_ = kernels::SmallNodeRows(rules_, data_.mapper->MaxBins());
    const tree::BinMatrix& bins = *data_.bins;
    const tree::BinMapper& mapper = *data_.mapper;
    rows_ = bins.num_rows;
    words_ = CutWords(mapper);
    for (int feature = 0; feature < mapper.num_features(); ++feature) {
      has_categorical_ = has_categorical_ || mapper.feature(feature).categorical;
    }
    // The kernels read the bins column by column: the host's rows go up as they are and are
    // turned around on the device.
    if (bins.wide()) {
      UploadColumns(bins16_, bins.bins16, bins.num_features, stream_);
    } else {
      UploadColumns(bins8_, bins.bins8, bins.num_features, stream_);
    }
    if (rules_.criterion == kernels::kCriterionSquaredError) {
      UploadRange(target_units_, data_.target_units, static_cast<std::size_t>(rows_), stream_);
    } else {
      UploadRange(classes_, data_.classes, static_cast<std::size_t>(rows_), stream_);
    }
    std::vector<double> lows;
    std::vector<std::size_t> low_begin;
    for (int feature = 0; feature < mapper.num_features(); ++feature) {
      low_begin.push_back(lows.size());
      const std::vector<double>& feature_lows =
          (*data_.bin_lows)[static_cast<std::size_t>(feature)];
      lows.insert(lows.end(), feature_lows.begin(), feature_lows.end());
    }
    UploadRange(bin_lows_, lows.data(), lows.size(), stream_);
    std::vector<kernels::FeatureInfo> infos;
    for (int feature = 0; feature < mapper.num_features(); ++feature) {
      const tree::FeatureBins& feature_bins = mapper.feature(feature);
      infos.push_back(kernels::FeatureInfo{feature_bins.num_bins, feature_bins.categorical ? 1 : 0,
                                           bin_lows_.data() + low_begin[feature]});
    }
    UploadRange(infos_, infos.data(), infos.size(), stream_);
    if (!xlogx_.empty()) {
      UploadRange(device_xlogx_, xlogx_.data(), xlogx_.size(), stream_);
      rules_.xlogx = device_xlogx_.data();
    }
    const auto cells = static_cast<std::size_t>(rows_) * static_cast<std::size_t>(slots_);
    weights_.Resize(cells);
    order_.Resize(cells);
    tags_.Resize(cells);
    spare_.Resize(cells);
    spare_tags_.Resize(cells);
    order_keys_.Resize(static_cast<std::size_t>(slots_));
    threshold_keys_.Resize(static_cast<std::size_t>(slots_));
    slot_rows_.Resize(static_cast<std::size_t>(slots_));

    rows_view_.bins8 = bins.wide() ? nullptr : bins8_.data();
    rows_view_.bins16 = bins.wide() ? bins16_.data() : nullptr;
    rows_view_.classes = classes_.data();
    rows_view_.target_units = target_units_.data();
    rows_view_.rows = rows_;
    rows_view_.features = infos_.data();
    rows_view_.max_bins = mapper.MaxBins();
    trees_view_.weights = weights_.data();
    trees_view_.order = order_.data();
    trees_view_.tags = tags_.data();
    trees_view_.spare = spare_.data();
    trees_view_.spare_tags = spare_tags_.data();
    trees_view_.order_keys = order_keys_.data();
    trees_view_.threshold_keys = threshold_keys_.data();
    // The uploads read host vectors freed on return.
    TFG_CUDA_CHECK(cudaStreamSynchronize(stream_));
  }

  CudaBatchDevice(const CudaBatchDevice&) = delete;
  CudaBatchDevice& operator=(const CudaBatchDevice&) = delete;

  int slots() const override { return slots_; }

  std::vector<std::int64_t> StartTrees(std::uint64_t first_tree, int count) override {
    TFG_CUDA_CHECK(cudaSetDevice(ordinal_));
    std::vector<std::uint64_t> order_keys, threshold_keys;
    for (int slot = 0; slot < count; ++slot) {
      const std::uint64_t tree_index = first_tree + std::uint64_t(slot);
      order_keys.push_back(StreamKey(data_.seed, kernels::kFeatureOrderStream ^ Mix64(tree_index)));
      threshold_keys.push_back(
          StreamKey(data_.seed, kernels::kThresholdStream ^ Mix64(tree_index)));
    }
    UploadInto(order_keys_, order_keys, stream_);
    UploadInto(threshold_keys_, threshold_keys, stream_);
    kernels::StartTrees(rows_view_, trees_view_, count, first_tree, data_.seed, data_.draws,
                        slot_rows_.data(), stream_);
    std::vector<long long> counts(static_cast<std::size_t>(count));
    DownloadFrom(counts.data(), slot_rows_, counts.size(), stream_);
    return std::vector<std::int64_t>(counts.begin(), counts.end());
  }

  void Evaluate(const std::vector<kernels::BatchNode>& nodes, int first_position, int positions,
                std::vector<kernels::NodeOutcome>& outcomes, std::vector<double>& sums,
                std::vector<std::uint32_t>& bits) override {
    TFG_CUDA_CHECK(cudaSetDevice(ordinal_));
    const std::size_t count = nodes.size();
    const std::size_t width = static_cast<std::size_t>(rules_.width);
    const std::size_t words = static_cast<std::size_t>(words_);
    outcomes.resize(count);
    if (has_categorical_) {
      bits.resize(count * words);
    } else {
      bits.assign(count * words, 0u);
    }
    if (first_position == 0) sums.resize(count * width);
    // Bytes per node: its cuts and their words, its outcome, words and sums.
    const std::size_t per_node =
        std::size_t(positions) * (sizeof(kernels::FeatureCut) + 4 * words) +
        sizeof(kernels::BatchNode) + sizeof(kernels::NodeOutcome) + 4 * words + 8 * width;
    const std::size_t part = std::max<std::size_t>(1, std::size_t(kCallBytes) / per_node);
    for (std::size_t first = 0; first < count; first += part) {
      const std::size_t size = std::min(part, count - first);
      // The small nodes go first (the kernels give them a warp each): placed[i] is the node at
      // position i of the launch.
      placed_.clear();
      for (std::size_t at = first; at < first + size; ++at) {
        if (nodes[at].end - nodes[at].begin <= small_rows_) placed_.push_back(at);
      }
      const int small_count = static_cast<int>(placed_.size());
      for (std::size_t at = first; at < first + size; ++at) {
        if (nodes[at].end - nodes[at].begin > small_rows_) placed_.push_back(at);
      }
      launch_nodes_.resize(size);
      for (std::size_t at = 0; at < size; ++at) launch_nodes_[at] = nodes[placed_[at]];
      UploadRange(nodes_, launch_nodes_.data(), size, stream_);
      Reserve(cuts_, size * positions);
      Reserve(cut_bits_, size * positions * words);
      Reserve(outcomes_, size);
      Reserve(out_bits_, size * words);
      Reserve(sums_, size * width);
      kernels::EvaluateNodes(rows_view_, trees_view_, rules_, nodes_.data(), static_cast<int>(size),
                             small_count, static_cast<int>(small_rows_), first_position, positions,
                             cuts_.data(), cut_bits_.data(), words_, sums_.data(), outcomes_.data(),
                             out_bits_.data(), stream_);
      launch_outcomes_.resize(size);
      DownloadFrom(launch_outcomes_.data(), outcomes_, size, stream_);
      for (std::size_t at = 0; at < size; ++at) outcomes[placed_[at]] = launch_outcomes_[at];
      // Bin words belong to categorical cuts only: without categorical features they stay zero.
      if (has_categorical_) {
        launch_bits_.resize(size * words);
        DownloadFrom(launch_bits_.data(), out_bits_, size * words, stream_);
        for (std::size_t at = 0; at < size; ++at) {
          std::copy_n(launch_bits_.data() + at * words, words, bits.data() + placed_[at] * words);
        }
      }
      if (first_position == 0) {
        launch_sums_.resize(size * width);
        DownloadFrom(launch_sums_.data(), sums_, size * width, stream_);
        for (std::size_t at = 0; at < size; ++at) {
          std::copy_n(launch_sums_.data() + at * width, width, sums.data() + placed_[at] * width);
        }
      }
    }
  }

  std::vector<long long> Partition(const std::vector<kernels::BatchSplit>& splits,
                                   const std::vector<std::uint32_t>& bits) override {
    TFG_CUDA_CHECK(cudaSetDevice(ordinal_));
    UploadInto(split_bits_, bits, stream_);
    std::vector<long long> counts(splits.size());
    const std::size_t part =
        std::size_t(kCallBytes) / (sizeof(kernels::BatchSplit) + sizeof(long long) + sizeof(int));
    for (std::size_t first = 0; first < splits.size(); first += part) {
      const std::size_t size = std::min(part, splits.size() - first);
      // A small split goes by a warp, one of more than two chunks by chunks, the others by a
      // block each.
      small_list_.clear();
      whole_list_.clear();
      chunk_list_.clear();
      large_list_.clear();
      for (std::size_t at = 0; at < size; ++at) {
        const kernels::BatchSplit& split = splits[first + at];
        const int index = static_cast<int>(at);
        if (split.end - split.begin <= kernels::kWarpSplitRows) {
          small_list_.push_back(index);
          continue;
        }
        if (split.end - split.begin <= 2 * kernels::kPartitionChunkRows) {
          whole_list_.push_back(index);
          continue;
        }
        const int first_chunk = static_cast<int>(chunk_list_.size());
        for (long long begin = split.begin; begin < split.end;
             begin += kernels::kPartitionChunkRows) {
          chunk_list_.push_back(kernels::PartitionChunk{
              begin, std::min(split.end, begin + kernels::kPartitionChunkRows), index});
        }
        large_list_.push_back(kernels::LargeSplit{
            index, first_chunk, static_cast<int>(chunk_list_.size()) - first_chunk});
      }
      UploadRange(splits_, splits.data() + first, size, stream_);
      UploadInto(small_, small_list_, stream_);
      UploadInto(whole_, whole_list_, stream_);
      UploadInto(chunks_, chunk_list_, stream_);
      UploadInto(large_, large_list_, stream_);
      Reserve(chunk_lefts_, chunk_list_.size());
      Reserve(left_counts_, size);
      const kernels::PartitionLists lists{small_.data(),      static_cast<int>(small_list_.size()),
                                          whole_.data(),      static_cast<int>(whole_list_.size()),
                                          chunks_.data(),     static_cast<int>(chunk_list_.size()),
                                          large_.data(),      static_cast<int>(large_list_.size()),
                                          chunk_lefts_.data()};
      kernels::PartitionNodes(rows_view_, trees_view_, splits_.data(), split_bits_.data(), lists,
                              left_counts_.data(), stream_);
      DownloadFrom(counts.data() + first, left_counts_, size, stream_);
    }
    return counts;
  }

 private:
  BatchData data_;
  int ordinal_;
  // Declared before the device arrays, so destroyed after them.
  std::unique_ptr<OwnStream> own_stream_;
  kernels::Stream stream_ = nullptr;
  int slots_;
  std::int64_t rows_ = 0;
  int words_ = 0;
  bool has_categorical_ = false;
  std::vector<double> xlogx_;
  kernels::SplitRules rules_{};
  long long small_rows_ = 0;  // nodes of at most this many rows are small (SmallNodeRows)
  // Evaluate's launch order and its results in that order (kept to reuse their memory).
  std::vector<std::size_t> placed_;
  std::vector<kernels::BatchNode> launch_nodes_;
  std::vector<kernels::NodeOutcome> launch_outcomes_;
  std::vector<std::uint32_t> launch_bits_;
  std::vector<double> launch_sums_;
  // Partition's launch lists (kept to reuse their memory).
  std::vector<int> small_list_;
  std::vector<int> whole_list_;
  std::vector<kernels::PartitionChunk> chunk_list_;
  std::vector<kernels::LargeSplit> large_list_;
  DeviceArray<std::uint8_t> bins8_;
  DeviceArray<std::uint16_t> bins16_;
  DeviceArray<std::int32_t> classes_;
  DeviceArray<long long> target_units_;
  DeviceArray<double> bin_lows_;
  DeviceArray<kernels::FeatureInfo> infos_;
  DeviceArray<double> device_xlogx_;
  DeviceArray<std::uint32_t> weights_;
  DeviceArray<std::int32_t> order_;
  DeviceArray<std::uint64_t> tags_;
  DeviceArray<std::int32_t> spare_;
  DeviceArray<std::uint64_t> spare_tags_;
  DeviceArray<std::uint64_t> order_keys_;
  DeviceArray<std::uint64_t> threshold_keys_;
  DeviceArray<long long> slot_rows_;
  DeviceArray<kernels::BatchNode> nodes_;
  DeviceArray<kernels::FeatureCut> cuts_;
  DeviceArray<std::uint32_t> cut_bits_;
  DeviceArray<kernels::NodeOutcome> outcomes_;
  DeviceArray<std::uint32_t> out_bits_;
  DeviceArray<double> sums_;
  DeviceArray<kernels::BatchSplit> splits_;
  DeviceArray<std::uint32_t> split_bits_;
  DeviceArray<long long> left_counts_;
  DeviceArray<int> small_;
  DeviceArray<int> whole_;
  DeviceArray<kernels::PartitionChunk> chunks_;
  DeviceArray<kernels::LargeSplit> large_;
  DeviceArray<long long> chunk_lefts_;
  kernels::DeviceRows rows_view_{};
  kernels::DeviceTrees trees_view_{};
};

// The most trees a batch holds: more keep the device busier at the top levels, where a batch
// has one node per tree.
constexpr int kMaxSlots = 128;

}  // namespace

std::unique_ptr<BatchDevice> MakeCudaBatchDevice(const BatchData& data, int device_id,
                                                 double memory_fraction, std::string& why,
                                                 std::string& device_name, int max_slots) {
  if (!BatchGrowable(data, why)) return nullptr;
  const device::CudaDeviceInfo info = device::QueryCudaDevice(device_id);
  if (!info.usable) {
    why = info.problem;
    return nullptr;
  }
  const bool regression = data.spec.criterion == Criterion::kSquaredError;
  const int width = regression ? 2 : data.spec.num_classes;
  const int max_bins = data.mapper->MaxBins();
  // The dynamic part and the kernel's own (scan storage, the node's sums, scratch).
  TFG_CUDA_CHECK(cudaSetDevice(info.ordinal));
  const std::size_t shared =
      kernels::EvaluateSharedBytes(max_bins, width, data.mapper->num_features(), regression) +
      kernels::EvaluateStaticSharedBytes();
  int shared_limit = 0;
  TFG_CUDA_CHECK(
      cudaDeviceGetAttribute(&shared_limit, cudaDevAttrMaxSharedMemoryPerBlockOptin, info.ordinal));
  if (shared > static_cast<std::size_t>(shared_limit)) {
    why = fmt::format(
        "a histogram of {} bins x {} sums ({} KiB) exceeds a block's shared memory on this GPU "
        "({} KiB); a lower max_bin fits",
        max_bins, width, shared / 1024, shared_limit / 1024);
    return nullptr;
  }
  // Memory: the shared inputs (the bins twice: they are turned around through a staged copy)
  // and the node lists of one call (at most kCallBytes), then per slot the bootstrap counts,
  // row order and tags and their scratch (28 bytes a row).
  const std::int64_t rows = data.bins->num_rows;
  const auto budget = static_cast<std::int64_t>(double(info.free_bytes) * memory_fraction);
  const std::int64_t bin_bytes = rows * data.bins->num_features * (data.bins->wide() ? 2 : 1);
  const std::int64_t fixed =
      2 * bin_bytes + rows * 8 + (data.draws > 0 ? data.draws : rows) * 8 + 2 * kCallBytes;
  const std::int64_t per_slot = rows * 28 + (1ll << 20);
  const std::int64_t fits = (budget - fixed) / per_slot;
  if (fits < 1) {
    why = fmt::format("the GPU's {:.1f} GiB within gpu_memory_fraction {} do not hold {} rows",
                      double(budget) / double(1ll << 30), memory_fraction, rows);
    return nullptr;
  }
  const int slots = static_cast<int>(
      std::min<std::int64_t>(fits, max_slots > 0 ? std::min(max_slots, kMaxSlots) : kMaxSlots));
  device_name = info.name;
  try {
    return std::make_unique<CudaBatchDevice>(data, slots, info.ordinal);
  } catch (...) {
    cudaGetLastError();  // a failed allocation's error is not left for the next launch's check
    throw;
  }
}

}  // namespace tabforge::forest
