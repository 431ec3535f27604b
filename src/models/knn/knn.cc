#include "models/knn/knn.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <mutex>
#include <nlohmann/json.hpp>
#include <utility>

#include "core/context.h"
#include "core/error.h"
#include "core/serialize.h"
#include "core/timer.h"
#include "models/dense_encoder.h"
#include "models/knn/knn_dots.h"
#include "models/knn/knn_search.h"
#include "models/param_json.h"

namespace tabforge::knn {
namespace {

constexpr std::string_view kModelMagic = "tabforge-knn";
constexpr std::uint32_t kModelVersion = 1;
constexpr std::int64_t kQueryBlock = 128;
constexpr std::int64_t kReferenceBlock = 2048;
// Up to this many dimensions distances are summed directly (knn_dots.h); above, through matrix
// products (letter, 16 dimensions: 0.17 s by products, 0.25 s summed directly).
constexpr int kDirectDims = kMaxDirectDims;
// Distance pairs (queries x references) from which a granted GPU searches: below it the copies
// and launches cost more than the CPU's products.
constexpr double kGpuWorthwhilePairs = 2e8;

}  // namespace

void KnnParams::Validate() const {
  if (n_neighbors < 1) {
    throw InvalidInput(
        fmt::format("KNN parameter n_neighbors = {} is out of range: at least 1", n_neighbors));
  }
  if (max_categories < 2) {
    throw InvalidInput(fmt::format("KNN parameter max_categories = {} is out of range: at least 2",
                                   max_categories));
  }
  if (device != "cpu" && device != "cuda" && device != "gpu") {
    throw InvalidInput(fmt::format(
        "KNN parameter device = '{}' is not supported: use cpu or cuda (gpu is taken as cuda)",
        device));
  }
}

KnnParams KnnParams::FromJson(const std::string& json) {
  KnnParams params;
  auto text = [](std::string& field) {
    return models::ParamSetter{[&field](const nlohmann::json& v) { field = v.get<std::string>(); },
                               "string"};
  };
  std::string weights = "uniform", categorical = "drop", metric = "minkowski";
  std::string ignored;
  int p = 2;
  const std::map<std::string, models::ParamSetter> setters = {
      {"n_neighbors",
       {[&](const nlohmann::json& v) { params.n_neighbors = v.get<int>(); }, "number"}},
      {"weights", text(weights)},
      {"categorical", text(categorical)},
      {"max_categories",
       {[&](const nlohmann::json& v) { params.max_categories = v.get<int>(); }, "number"}},
      {"p", {[&](const nlohmann::json& v) { p = v.get<int>(); }, "number"}},
      {"metric", text(metric)},
      {"algorithm", text(ignored)},
      {"leaf_size", {[](const nlohmann::json& v) { (void)v.get<int>(); }, "number"}},
      {"n_jobs", {[](const nlohmann::json& v) { (void)v.get<int>(); }, "number"}},
      {"device", text(params.device)},
  };
  models::ApplyJsonParams(json, "KNN", setters);
  if (weights != "uniform" && weights != "distance") {
    throw InvalidInput(fmt::format(
        "KNN parameter weights = '{}' is not supported: use uniform or distance", weights));
  }
  params.distance_weights = weights == "distance";
  if (categorical != "drop" && categorical != "onehot") {
    throw InvalidInput(fmt::format(
        "KNN parameter categorical = '{}' is not supported: use drop or onehot", categorical));
  }
  params.one_hot = categorical == "onehot";
  if (p != 2 || (metric != "minkowski" && metric != "euclidean")) {
    throw InvalidInput(
        fmt::format("KNN metric {} with p = {} is not supported: the search is Euclidean (metric "
                    "minkowski with p 2, or euclidean)",
                    metric, p));
  }
  params.Validate();
  return params;
}

ReferenceColumns ReferenceColumns::Build(const std::vector<float>& reference,
                                         std::int64_t references, int dims) {
  ReferenceColumns out;
  out.references = references;
  out.dims = dims;
  out.columns.resize(static_cast<std::size_t>(references) * dims);
  for (std::int64_t row = 0; row < references; ++row) {
    for (int d = 0; d < dims; ++d) out.columns[d * references + row] = reference[row * dims + d];
  }
  if (dims > kDirectDims) {
    out.norms.resize(static_cast<std::size_t>(references));
    for (std::int64_t row = 0; row < references; ++row) {
      out.norms[row] = SquaredNorm(reference.data() + row * dims, dims);
    }
  }
  return out;
}

void NearestNeighbors(const std::vector<float>& reference, std::int64_t references,
                      const std::vector<float>& query, std::int64_t queries, int dims, int k,
                      bool skip_self, int threads, std::vector<std::int32_t>& indices,
                      std::vector<float>& distances) {
  NearestNeighbors(ReferenceColumns::Build(reference, references, dims), query, queries, k,
                   skip_self, threads, indices, distances);
}

void NearestNeighbors(const ReferenceColumns& layout, const std::vector<float>& query,
                      std::int64_t queries, int k, bool skip_self, int threads,
                      std::vector<std::int32_t>& indices, std::vector<float>& distances) {
  const std::int64_t references = layout.references;
  const int dims = layout.dims;
  const std::vector<float>& columns = layout.columns;
  const std::int64_t available = skip_self ? references - 1 : references;
  const int keep =
      static_cast<int>(std::min<std::int64_t>(k, std::max<std::int64_t>(available, 0)));
  indices.assign(static_cast<std::size_t>(queries * keep), -1);
  distances.assign(static_cast<std::size_t>(queries * keep),
                   std::numeric_limits<float>::infinity());
  if (keep == 0 || queries == 0) return;
  Context context;
  context.num_threads = threads;
  const std::int64_t blocks = (queries + kQueryBlock - 1) / kQueryBlock;
  if (dims <= kDirectDims) {
    // Few dimensions: the products would write far more than they compute, so distances are
    // summed directly over a block of references held column-major (knn_dots.h).
#pragma omp parallel for num_threads(context.Threads()) schedule(dynamic, 1)
    for (std::int64_t block = 0; block < blocks; ++block) {
      const std::int64_t first = block * kQueryBlock;
      const std::int64_t count = std::min(kQueryBlock, queries - first);
      for (std::int64_t start = 0; start < references; start += kReferenceBlock) {
        const std::int64_t width = std::min(kReferenceBlock, references - start);
        for (std::int64_t row = first; row < first + count; ++row) {
          DirectSearch(query.data() + row * dims, dims, columns.data() + start, references, width,
                       start, skip_self ? row : -1, keep, distances.data() + row * keep,
                       indices.data() + row * keep);
        }
      }
    }
    return;
  }
  // More dimensions: distances from dot products, |q|^2 + |r|^2 - 2 q.r, four queries at a
  // time against a block of references held column-major (knn_dots.h).
  const std::vector<float>& reference_norms = layout.norms;
  constexpr std::int64_t kQueryTile = 4;
#pragma omp parallel num_threads(context.Threads())
  {
    std::vector<float> dots(static_cast<std::size_t>(kQueryTile * kReferenceBlock));
    std::vector<float> query_norms(static_cast<std::size_t>(kQueryBlock));
#pragma omp for schedule(dynamic, 1)
    for (std::int64_t block = 0; block < blocks; ++block) {
      const std::int64_t first = block * kQueryBlock;
      const std::int64_t count = std::min(kQueryBlock, queries - first);
      for (std::int64_t at = 0; at < count; ++at) {
        query_norms[at] = SquaredNorm(query.data() + (first + at) * dims, dims);
      }
      for (std::int64_t start = 0; start < references; start += kReferenceBlock) {
        const std::int64_t width = std::min(kReferenceBlock, references - start);
        const float* norms = reference_norms.data() + start;
        for (std::int64_t tile = first; tile < first + count; tile += kQueryTile) {
          const std::int64_t rows = std::min(kQueryTile, first + count - tile);
          Dots(query.data() + tile * dims, rows, dims, columns.data() + start, references, width,
               dots.data());
          for (std::int64_t at = 0; at < rows; ++at) {
            const std::int64_t row = tile + at;
            SearchFromDots(query_norms[tile - first + at], norms, dots.data() + at * width, width,
                           start, skip_self ? row : -1, keep, distances.data() + row * keep,
                           indices.data() + row * keep);
          }
        }
      }
    }
  }
}

namespace {

class KnnModel final : public models::Model {
 public:
  KnnModel(KnnParams params, const models::Task& task) : params_(std::move(params)), task_(task) {}

  void Fit(const features::FeatureMatrix& train, std::span<const double> labels,
           const features::FeatureMatrix* /*valid*/, std::span<const double> /*valid_labels*/,
           const models::FitContext& context) override {
    Stopwatch watch;
    models::DenseEncoderOptions options;
    options.one_hot = params_.one_hot;
    options.max_categories = params_.max_categories;
    options.threads = context.threads;
    encoder_ = models::DenseEncoder::Fit(train, options);
    reference_ = encoder_.Transform(train, context.threads);
    columns_ = ReferenceColumns{};  // laid out again at the next search
    references_ = train.num_rows;
    labels_.assign(labels.begin(), labels.end());
    if (encoder_.num_columns() == 0) {
      throw InvalidInput(
          train.num_categorical() > 0
              ? "KNN has no feature to measure distances on: the data has no numeric feature; "
                "give KNN {\"categorical\": \"onehot\"} to use the categorical ones"
              : "KNN has no feature to measure distances on: the data has no numeric or "
                "categorical feature");
    }
    gpu_ = params_.device != "cpu" || context.num_gpus > 0;
    memory_fraction_ = context.gpu_memory_fraction;
    device_ = "cpu";
    device_note_.clear();
    fit_seconds_ = watch.Seconds();
  }

  bool HasOutOfFold() const override { return true; }

  std::vector<double> FitOutOfFold(const features::FeatureMatrix& train,
                                   std::span<const double> labels,
                                   const models::FitContext& context) override {
    Fit(train, labels, nullptr, {}, context);
    Stopwatch watch;
    std::vector<std::int32_t> indices;
    std::vector<float> distances;
    Search(reference_, references_, true, context.threads, indices, distances);
    std::vector<double> out = Vote(indices, distances, references_);
    fit_seconds_ += watch.Seconds();
    return out;
  }

  std::vector<double> Predict(const features::FeatureMatrix& features, int threads) const override {
    const std::vector<float> query = encoder_.Transform(features, threads);
    std::vector<std::int32_t> indices;
    std::vector<float> distances;
    Search(query, features.num_rows, false, threads, indices, distances);
    return Vote(indices, distances, features.num_rows);
  }

  std::string Serialize() const override {
    ByteWriter writer = ByteWriter::Framed(kModelMagic, kModelVersion);
    writer.Put<std::int32_t>(params_.n_neighbors);
    writer.Put<std::uint8_t>(params_.distance_weights ? 1 : 0);
    encoder_.Write(writer);
    writer.Put<std::int64_t>(references_);
    writer.PutVector(reference_);
    writer.PutVector(labels_);
    return std::move(writer).Frame();
  }

  static std::unique_ptr<KnnModel> Deserialize(std::string_view bytes, const std::string& name,
                                               const models::Task& task) {
    ByteReader reader(UnframeBytes(bytes, kModelMagic, kModelVersion, name), name);
    KnnParams params;
    params.n_neighbors = reader.Get<std::int32_t>();
    params.distance_weights = reader.Get<std::uint8_t>() != 0;
    if (params.n_neighbors < 1) reader.Corrupted("implausible n_neighbors");
    auto model = std::make_unique<KnnModel>(params, task);
    model->encoder_ = models::DenseEncoder::Read(reader);
    model->references_ = reader.Get<std::int64_t>();
    model->reference_ = reader.GetVector<float>();
    model->labels_ = reader.GetVector<double>();
    if (model->references_ < 1 ||
        model->reference_.size() !=
            static_cast<std::size_t>(model->references_) * model->encoder_.num_columns() ||
        model->labels_.size() != static_cast<std::size_t>(model->references_)) {
      reader.Corrupted("reference rows do not match their labels");
    }
    if (!reader.AtEnd()) reader.Corrupted("bytes after the model");
    return model;
  }

  models::ModelInfo Info() const override {
    models::ModelInfo info;
    info.family = "KNN";
    info.fit_seconds = fit_seconds_;
    info.device = device_;
    info.device_note = device_note_;
    return info;
  }

  std::unique_ptr<models::Model> CloneForRefit(int /*iterations*/) const override {
    return std::make_unique<KnnModel>(params_, task_);
  }

 private:
  // The neighbours of `queries` rows of `query` among the references: on the GPU when one was
  // granted and the search is large enough, else (or when the GPU cannot) on the CPU.
  void Search(const std::vector<float>& query, std::int64_t queries, bool skip_self, int threads,
              std::vector<std::int32_t>& indices, std::vector<float>& distances) const {
    if (gpu_) {
      if (double(queries) * double(references_) < kGpuWorthwhilePairs) {
        device_note_ =
            fmt::format("{:.0f} distance pairs, under the {:.0f} from which the GPU beats the CPU",
                        double(queries) * double(references_), kGpuWorthwhilePairs);
      } else {
        std::string why, name;
        if (DeviceNearestNeighbors(reference_, references_, query, queries, encoder_.num_columns(),
                                   params_.n_neighbors, skip_self, 0, memory_fraction_, indices,
                                   distances, why, name)) {
          device_ = name;
          device_note_.clear();
          return;
        }
        device_note_ = "CUDA not used: " + why + "; searched on the CPU";
      }
    }
    {
      const std::lock_guard<std::mutex> lock(columns_mutex_);
      if (columns_.references == 0) {
        columns_ = ReferenceColumns::Build(reference_, references_, encoder_.num_columns());
      }
    }
    NearestNeighbors(columns_, query, queries, params_.n_neighbors, skip_self, threads, indices,
                     distances);
  }

  // Class probabilities (or the target's mean) from each row's neighbours.
  std::vector<double> Vote(const std::vector<std::int32_t>& indices,
                           const std::vector<float>& distances, std::int64_t rows) const {
    const int outputs = task_.outputs();
    const bool regression = task_.problem_type == ProblemType::kRegression;
    std::vector<double> out(static_cast<std::size_t>(rows * outputs), 0.0);
    const std::int64_t keep = rows > 0 ? static_cast<std::int64_t>(indices.size()) / rows : 0;
    for (std::int64_t row = 0; row < rows; ++row) {
      const std::int32_t* neighbours = indices.data() + row * keep;
      const float* squared = distances.data() + row * keep;
      // scikit-learn's distance weights: 1 / distance; neighbours at distance 0 take all.
      const bool exact = params_.distance_weights && keep > 0 && squared[0] == 0.0f;
      double total = 0;
      double* into = out.data() + row * outputs;
      for (std::int64_t at = 0; at < keep; ++at) {
        if (neighbours[at] < 0) continue;
        double weight = 1;
        if (exact) {
          weight = squared[at] == 0.0f ? 1.0 : 0.0;
        } else if (params_.distance_weights) {
          weight = 1.0 / std::sqrt(double(squared[at]));
        }
        const double label = labels_[neighbours[at]];
        if (regression) {
          into[0] += weight * label;
        } else {
          into[static_cast<int>(label)] += weight;
        }
        total += weight;
      }
      for (int k = 0; k < outputs; ++k) {
        into[k] = total > 0 ? into[k] / total : (regression ? 0.0 : 1.0 / outputs);
      }
    }
    return out;
  }

  KnnParams params_;
  models::Task task_;
  models::DenseEncoder encoder_;
  std::vector<float> reference_;  // row-major references_ x encoder_.num_columns()
  std::int64_t references_ = 0;
  std::vector<double> labels_;
  // The references laid out for the CPU search, built at the first search on the CPU.
  mutable std::mutex columns_mutex_;
  mutable ReferenceColumns columns_;
  double fit_seconds_ = 0;
  bool gpu_ = false;  // a GPU was granted (or asked for by the parameters)
  double memory_fraction_ = 0.9;
  mutable std::string device_ = "cpu";  // where the last search ran
  mutable std::string device_note_;     // why a granted GPU was not used
};

}  // namespace

std::unique_ptr<models::Model> CreateKnnModel(const std::string& hyperparameters_json,
                                              const models::Task& task) {
  return std::make_unique<KnnModel>(KnnParams::FromJson(hyperparameters_json), task);
}

std::unique_ptr<models::Model> DeserializeKnnModel(std::string_view bytes, const std::string& name,
                                                   const models::Task& task) {
  return KnnModel::Deserialize(bytes, name, task);
}

}  // namespace tabforge::knn
