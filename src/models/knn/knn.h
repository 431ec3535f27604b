// k-nearest neighbours (the KNN family): exact Euclidean search over the dense view of the
// features (models/dense_encoder.h: standardised numerics, categoricals dropped or one-hot),
// as AutoGluon's scikit-learn KNN models. Distances of a block of queries to a block of
// reference rows come from one matrix product (|q|^2 + |r|^2 - 2 q.r, knn_dots.h: AVX2 tiles
// where the processor has them, the same bits without; in up to 10 dimensions they are summed
// directly, which writes less than a product), and each query
// keeps its k nearest in a bounded sorted list; ties go to the lower reference row, so the
// neighbours do not depend on the thread count. Without bagging's folds the training rows'
// leave-one-out predictions serve as out-of-fold ones.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "models/model.h"

namespace tabforge::knn {

// Parameters under scikit-learn's names.
struct KnnParams {
  int n_neighbors = 5;
  bool distance_weights = false;  // weights: "uniform" (false) or "distance" (1 / distance)
  bool one_hot = false;           // categorical: "drop" (AutoGluon's default) or "onehot"
  int max_categories = 32;        // one-hot columns per categorical feature
  std::string device = "cpu";     // "cpu", or "cuda"/"gpu" (not built for KNN: runs on the CPU)

  void Validate() const;
  // From a JSON object: n_neighbors, weights, categorical, max_categories, p (2 only),
  // metric ("minkowski"/"euclidean"), algorithm, leaf_size and n_jobs (accepted, no effect:
  // the search is always exact brute force on the fit's threads), device.
  static KnnParams FromJson(const std::string& json);
};

// The `k` nearest reference rows of every query row: row-major queries x k indices (ascending
// distance, ties to the lower index) and squared distances. `reference` is row-major
// references x dims, `query` queries x dims. With `skip_self`, query q never gets reference q
// (leave-one-out on the reference rows themselves). k is capped at the references available.
void NearestNeighbors(const std::vector<float>& reference, std::int64_t references,
                      const std::vector<float>& query, std::int64_t queries, int dims, int k,
                      bool skip_self, int threads, std::vector<std::int32_t>& indices,
                      std::vector<float>& distances);

// The reference rows as the CPU search reads them: dimension by dimension (dims x references)
// and, where distances come from dot products, each row's squared norm. A model builds this
// once, so a search of a few rows does not rebuild it.
struct ReferenceColumns {
  static ReferenceColumns Build(const std::vector<float>& reference, std::int64_t references,
                                int dims);
  std::int64_t references = 0;
  int dims = 0;
  std::vector<float> columns;
  std::vector<float> norms;  // empty where distances are summed directly (few dimensions)
};

// As above, on references laid out by ReferenceColumns::Build; the same neighbours and
// distances.
void NearestNeighbors(const ReferenceColumns& reference, const std::vector<float>& query,
                      std::int64_t queries, int k, bool skip_self, int threads,
                      std::vector<std::int32_t>& indices, std::vector<float>& distances);

std::unique_ptr<models::Model> CreateKnnModel(const std::string& hyperparameters_json,
                                              const models::Task& task);
std::unique_ptr<models::Model> DeserializeKnnModel(std::string_view bytes, const std::string& name,
                                                   const models::Task& task);

}  // namespace tabforge::knn
