#include "models/knn/knn.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <utility>

#include "core/error.h"
#include "core/random.h"
#include "data/csv_reader.h"
#include "features/feature_matrix.h"
#include "features/pipeline.h"
#include "metrics/metric.h"
#include "models/adult_features.h"
#include "models/knn/knn_dots.h"
#include "models/knn/knn_list.h"
#include "models/uniform_features.h"
#include "test_support.h"

namespace tabforge::knn {
namespace {

// Numeric rows: uniform features.
features::FeatureMatrix Numeric(std::int64_t rows, int dims, std::uint64_t seed) {
  return testing::UniformFeatures(rows, dims, seed);
}

std::vector<double> Classes(const features::FeatureMatrix& x) {
  std::vector<double> labels;
  for (std::int64_t row = 0; row < x.num_rows; ++row) {
    double sum = 0;
    for (int f = 0; f < x.num_numeric(); ++f) sum += x.NumericColumn(f)[row];
    labels.push_back(sum < 1.3 ? 0.0 : sum < 1.7 ? 1.0 : 2.0);
  }
  return labels;
}

models::Task Multiclass() {
  models::Task task;
  task.problem_type = ProblemType::kMulticlass;
  task.num_classes = 3;
  return task;
}

// 5 dimensions are summed directly, 23 through dot products (knn_dots.h); 3001 references and
// 301 queries leave partial tiles of both.
TEST(Knn, NeighboursMatchABruteForceSearch) {
  for (const int dims : {5, 23}) {
    SCOPED_TRACE(dims);
    const std::int64_t references = 3001, queries = 301;
    std::vector<float> reference(static_cast<std::size_t>(references * dims));
    std::vector<float> query(static_cast<std::size_t>(queries * dims));
    for (std::size_t at = 0; at < reference.size(); ++at)
      reference[at] = float(RandomUniform(1, 0, at));
    for (std::size_t at = 0; at < query.size(); ++at) query[at] = float(RandomUniform(1, 1, at));
    std::vector<std::int32_t> indices;
    std::vector<float> distances;
    NearestNeighbors(reference, references, query, queries, dims, 7, false, 2, indices, distances);
    ASSERT_EQ(indices.size(), std::size_t(queries * 7));
    int differing = 0;
    for (std::int64_t q = 0; q < queries; ++q) {
      std::vector<std::pair<double, int>> exact;
      for (std::int64_t r = 0; r < references; ++r) {
        double sum = 0;
        for (int d = 0; d < dims; ++d) {
          const double diff = double(query[q * dims + d]) - reference[r * dims + d];
          sum += diff * diff;
        }
        exact.push_back({sum, static_cast<int>(r)});
      }
      std::partial_sort(exact.begin(), exact.begin() + 7, exact.end());
      for (int k = 0; k < 7; ++k) {
        EXPECT_NEAR(distances[q * 7 + k], exact[k].first, 1e-4);
        differing += indices[q * 7 + k] != exact[k].second;
      }
    }
    // Float distances may swap neighbours whose distances agree to rounding; almost never.
    EXPECT_LE(differing, 4);
    // The same neighbours with one thread.
    std::vector<std::int32_t> one_thread;
    std::vector<float> one_distances;
    NearestNeighbors(reference, references, query, queries, dims, 7, false, 1, one_thread,
                     one_distances);
    EXPECT_EQ(one_thread, indices);
    // Leave-one-out on the references never returns the row itself.
    NearestNeighbors(reference, references, reference, references, dims, 3, true, 2, indices,
                     distances);
    for (std::int64_t row = 0; row < references; ++row) {
      for (int k = 0; k < 3; ++k) ASSERT_NE(indices[row * 3 + k], row);
    }
  }
}

// The vector path of the dot products gives the portable path's bits (each product summed in
// dimension order with fused multiply-adds), whatever the tile shapes left over.
TEST(Knn, DotProductsAreTheSameOnEveryPath) {
  std::vector<float> query(9 * 40), columns(40 * 45);
  for (std::size_t at = 0; at < query.size(); ++at)
    query[at] = float(RandomUniform(3, 0, at)) - 0.5f;
  for (std::size_t at = 0; at < columns.size(); ++at) {
    columns[at] = float(RandomUniform(3, 1, at)) - 0.5f;
  }
  for (int dims : {1, 3, 16, 40}) {
    for (std::int64_t count : {1, 4, 5, 9}) {
      for (std::int64_t width : {1, 8, 15, 16, 17, 40}) {
        std::vector<float> fast(static_cast<std::size_t>(count * width));
        std::vector<float> portable(fast.size());
        Dots(query.data(), count, dims, columns.data(), 45, width, fast.data());
        PortableDots(query.data(), count, dims, columns.data(), 45, width, portable.data());
        ASSERT_EQ(fast, portable) << dims << " dims, " << count << " x " << width;
        // And they are dot products.
        double sum = 0;
        for (int d = 0; d < dims; ++d) sum += double(query[d]) * columns[d * 45];
        EXPECT_NEAR(fast[0], sum, 1e-5);
      }
    }
  }
}

// The direct search keeps the portable path's lists on the vector path too (the same
// distances, bit for bit, offered in the same order), whatever the references left past a whole
// 8, and they are the nearest references.
TEST(Knn, DirectSearchIsTheSameOnEveryPath) {
  constexpr std::int64_t kStride = 301;
  constexpr int kKeep = 7;
  std::vector<float> queries(5 * kMaxDirectDims), columns(kMaxDirectDims * kStride);
  for (std::size_t at = 0; at < queries.size(); ++at) {
    queries[at] = float(RandomUniform(5, 0, at)) - 0.5f;
  }
  for (std::size_t at = 0; at < columns.size(); ++at) {
    columns[at] = float(RandomUniform(5, 1, at)) - 0.5f;
  }
  for (int dims = 1; dims <= kMaxDirectDims; ++dims) {
    for (std::int64_t block : {8, 13, 64, 301}) {
      for (int q = 0; q < 5; ++q) {
        const float* query = queries.data() + q * kMaxDirectDims;
        const std::int64_t skip = q == 0 ? -1 : 17 * q;
        const float infinity = std::numeric_limits<float>::infinity();
        std::vector<float> fast(kKeep, infinity), portable(kKeep, infinity);
        std::vector<std::int32_t> fast_ids(kKeep, -1), portable_ids(kKeep, -1);
        for (std::int64_t start = 0; start < kStride; start += block) {
          const std::int64_t width = std::min(block, kStride - start);
          DirectSearch(query, dims, columns.data() + start, kStride, width, start, skip, kKeep,
                       fast.data(), fast_ids.data());
          PortableDirectSearch(query, dims, columns.data() + start, kStride, width, start, skip,
                               kKeep, portable.data(), portable_ids.data());
        }
        ASSERT_EQ(fast, portable) << dims << " dims, blocks of " << block;
        ASSERT_EQ(fast_ids, portable_ids) << dims << " dims, blocks of " << block;
        // The nearest kKeep references but `skip`, by distances summed in doubles.
        std::vector<std::pair<double, std::int32_t>> all;
        for (std::int64_t j = 0; j < kStride; ++j) {
          if (j == skip) continue;
          double sum = 0;
          for (int d = 0; d < dims; ++d) {
            const double difference = double(query[d]) - columns[d * kStride + j];
            sum += difference * difference;
          }
          all.push_back({sum, static_cast<std::int32_t>(j)});
        }
        std::sort(all.begin(), all.end());
        for (int at = 0; at < kKeep; ++at) {
          EXPECT_EQ(fast_ids[at], all[at].second) << dims << " dims, neighbour " << at;
          EXPECT_NEAR(fast[at], all[at].first, 1e-5);
        }
      }
    }
  }
}

// The search from dot products keeps the portable path's lists on the vector path too, and they
// hold the references of least SquaredDistance (ties to the lower reference), distances clamped
// at 0 included.
TEST(Knn, SearchFromDotsIsTheSameOnEveryPath) {
  constexpr std::int64_t kReferences = 203;
  constexpr int kKeep = 9;
  std::vector<float> norms(kReferences), dots(kReferences);
  for (std::int64_t j = 0; j < kReferences; ++j) {
    norms[j] = float(RandomUniform(7, 0, j)) * 4.0f;
    // Some dot products large enough to take the distance below 0 (clamped), so ties at 0.
    dots[j] = float(RandomUniform(7, 1, j)) * (j % 17 == 0 ? 8.0f : 2.0f);
  }
  const float query_norm = 1.5f;
  for (std::int64_t block : {8, 11, 64, 203}) {
    for (const std::int64_t skip : {std::int64_t(-1), std::int64_t(34)}) {
      const float infinity = std::numeric_limits<float>::infinity();
      std::vector<float> fast(kKeep, infinity), portable(kKeep, infinity);
      std::vector<std::int32_t> fast_ids(kKeep, -1), portable_ids(kKeep, -1);
      for (std::int64_t start = 0; start < kReferences; start += block) {
        const std::int64_t width = std::min(block, kReferences - start);
        SearchFromDots(query_norm, norms.data() + start, dots.data() + start, width, start, skip,
                       kKeep, fast.data(), fast_ids.data());
        PortableSearchFromDots(query_norm, norms.data() + start, dots.data() + start, width, start,
                               skip, kKeep, portable.data(), portable_ids.data());
      }
      ASSERT_EQ(fast, portable) << "blocks of " << block;
      ASSERT_EQ(fast_ids, portable_ids) << "blocks of " << block;
      std::vector<std::pair<float, std::int32_t>> all;
      for (std::int64_t j = 0; j < kReferences; ++j) {
        if (j != skip) {
          all.push_back(
              {SquaredDistance(query_norm, norms[j], dots[j]), static_cast<std::int32_t>(j)});
        }
      }
      std::sort(all.begin(), all.end());
      EXPECT_EQ(all[0].first, 0.0f) << "no distance was clamped: the test lost its ties";
      for (int at = 0; at < kKeep; ++at) {
        EXPECT_EQ(fast_ids[at], all[at].second) << "neighbour " << at;
        EXPECT_EQ(fast[at], all[at].first) << "neighbour " << at;
      }
    }
  }
}

TEST(Knn, OneNeighbourReproducesTheTrainingLabels) {
  const features::FeatureMatrix x = Numeric(2000, 4, 2);
  const std::vector<double> labels = Classes(x);
  auto model = CreateKnnModel(R"({"n_neighbors": 1})", Multiclass());
  model->Fit(x, labels, nullptr, {}, models::FitContext());
  const std::vector<double> probabilities = model->Predict(x, 2);
  for (std::int64_t row = 0; row < x.num_rows; ++row) {
    ASSERT_EQ(probabilities[row * 3 + static_cast<int>(labels[row])], 1.0) << row;
  }
}

TEST(Knn, LeaveOneOutPredictionsAndSaveLoad) {
  const features::FeatureMatrix x = Numeric(1500, 3, 3);
  const std::vector<double> labels = Classes(x);
  const features::FeatureMatrix test = Numeric(500, 3, 4);
  for (const char* params : {R"({"n_neighbors": 10})", R"({"weights": "distance"})"}) {
    auto model = CreateKnnModel(params, Multiclass());
    ASSERT_TRUE(model->HasOutOfFold());
    models::FitContext context;
    context.threads = 2;
    const std::vector<double> out_of_fold = model->FitOutOfFold(x, labels, context);
    ASSERT_EQ(out_of_fold.size(), 1500u * 3u);
    const double loo = metrics::Score("accuracy", labels, {out_of_fold, 3});
    const double in_sample = metrics::Score("accuracy", labels, {model->Predict(x, 2), 3});
    const double held = metrics::Score("accuracy", Classes(test), {model->Predict(test, 2), 3});
    EXPECT_GT(loo, 0.8);
    EXPECT_NEAR(loo, held, 0.05);
    EXPECT_GE(in_sample, loo);  // each row is its own nearest neighbour there
    for (std::int64_t row = 0; row < 1500; ++row) {
      ASSERT_NEAR(out_of_fold[row * 3] + out_of_fold[row * 3 + 1] + out_of_fold[row * 3 + 2], 1.0,
                  1e-12);
    }
    const std::string bytes = model->Serialize();
    auto loaded = DeserializeKnnModel(bytes, "knn.bin", Multiclass());
    EXPECT_EQ(loaded->Predict(test, 1), model->Predict(test, 2));
    EXPECT_THROW(DeserializeKnnModel(bytes.substr(0, bytes.size() / 2), "knn.bin", Multiclass()),
                 InvalidInput);
  }
}

// A model lays its references out once for the CPU search; rows searched one at a time get
// what the batch gets, and a second fit of the same model searches its new references.
TEST(Knn, RowsOneAtATimeMatchTheBatchAndARefitSearchesItsNewRows) {
  // Classes by the first feature's thirds, whatever the number of features.
  auto thirds = [](const features::FeatureMatrix& x) {
    std::vector<double> labels;
    for (std::int64_t row = 0; row < x.num_rows; ++row) {
      labels.push_back(std::min(2.0, std::floor(3.0 * x.NumericColumn(0)[row])));
    }
    return labels;
  };
  for (int dims : {4, 23}) {  // distances summed directly, and through dot products
    const features::FeatureMatrix x = Numeric(1200, dims, 5);
    const features::FeatureMatrix other = Numeric(900, dims, 6);
    const features::FeatureMatrix test = Numeric(40, dims, 7);
    auto model = CreateKnnModel(R"({"weights": "distance"})", Multiclass());
    model->Fit(x, thirds(x), nullptr, {}, models::FitContext());
    const std::vector<double> batch = model->Predict(test, 2);
    for (std::int64_t row = 0; row < test.num_rows; ++row) {
      const std::vector<double> one = model->Predict(features::SelectRows(test, {row}), 1);
      ASSERT_EQ(one, std::vector<double>(batch.begin() + row * 3, batch.begin() + row * 3 + 3))
          << "dims " << dims << ", row " << row;
    }
    model->Fit(other, thirds(other), nullptr, {}, models::FitContext());
    auto fresh = CreateKnnModel(R"({"weights": "distance"})", Multiclass());
    fresh->Fit(other, thirds(other), nullptr, {}, models::FitContext());
    EXPECT_EQ(model->Predict(test, 2), fresh->Predict(test, 2)) << "dims " << dims;
    EXPECT_NE(model->Predict(test, 2), batch) << "dims " << dims;
  }
}

TEST(Knn, ParametersAreValidatedWithTheirNames) {
  auto message = [](const std::string& json) {
    return testing::InvalidInputMessage([&] { KnnParams::FromJson(json); });
  };
  EXPECT_NE(message(R"({"k": 3})").find("n_neighbors"), std::string::npos);
  EXPECT_NE(message(R"({"n_neighbors": 0})").find("n_neighbors"), std::string::npos);
  EXPECT_NE(message(R"({"weights": "gaussian"})").find("uniform or distance"), std::string::npos);
  EXPECT_NE(message(R"({"p": 1})").find("Euclidean"), std::string::npos);
  EXPECT_TRUE(message(R"({"weights": "distance", "n_jobs": -1, "categorical": "onehot"})").empty());
}

// Adult's numeric features standardised, k = 10: scikit-learn reaches AUC 0.810.
TEST(Knn, AdultTestAuc) {
  TFG_REQUIRE_DATASETS();
  const testing::AdultFeatures adult = testing::LoadAdultFeatures();
  auto model = CreateKnnModel(R"({"n_neighbors": 10})", models::Task());
  model->Fit(adult.train, adult.train_labels, nullptr, {}, models::FitContext());
  const double auc =
      metrics::Score("roc_auc", adult.test_labels, {model->Predict(adult.test, 0), 2});
  EXPECT_GT(auc, 0.805);
}

}  // namespace
}  // namespace tabforge::knn
