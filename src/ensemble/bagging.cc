#include "ensemble/bagging.h"

#include <cmath>
#include <exception>

#include "core/context.h"
#include "core/error.h"
#include "core/serialize.h"
#include "core/timer.h"

namespace tabforge::ensemble {
namespace {
constexpr std::string_view kGroupMagic = "TFGROUP";
constexpr std::uint32_t kGroupVersion = 1;

// Runs body(0..count-1) on `threads` threads (0: the process's); the first exception thrown is
// rethrown here.
template <typename Body>
void ForEachInParallel(std::int64_t count, const Body& body, int threads = 0) {
  Context context;
  context.num_threads = threads;
  std::exception_ptr failure;
#pragma omp parallel for num_threads(context.Threads()) schedule(dynamic)
  for (std::int64_t at = 0; at < count; ++at) {
    try {
      body(at);
    } catch (...) {
#pragma omp critical(tabforge_group_failure)
      if (!failure) failure = std::current_exception();
    }
  }
  if (failure) std::rethrow_exception(failure);
}

}  // namespace

std::vector<double> ModelGroup::Predict(const features::FeatureMatrix& features,
                                        int threads) const {
  TFG_CHECK(!members_.empty(), "model group without members");
  Context context;
  context.num_threads = threads;
  const int thread_count = context.Threads();
  std::vector<double> sum;
  if (features.num_rows < kSmallBatchRows && members_.size() > 1 && thread_count > 1) {
    // A single row, say: the members side by side (a bag's folds take about equal time).
    std::vector<std::vector<double>> parts(members_.size());
    ForEachInParallel(
        static_cast<std::int64_t>(members_.size()),
        [&](std::int64_t m) { parts[m] = members_[m]->Predict(features, 1); }, thread_count);
    sum = std::move(parts[0]);
    for (std::size_t m = 1; m < members_.size(); ++m) {
      for (std::size_t i = 0; i < sum.size(); ++i) sum[i] += parts[m][i];
    }
  } else {
    sum = members_[0]->Predict(features, threads);
    for (std::size_t m = 1; m < members_.size(); ++m) {
      const std::vector<double> part = members_[m]->Predict(features, threads);
      for (std::size_t i = 0; i < sum.size(); ++i) sum[i] += part[i];
    }
  }
  if (members_.size() > 1) {
    const double scale = 1.0 / double(members_.size());
    for (double& value : sum) value *= scale;
  }
  return sum;
}

void ModelGroup::Absorb(ModelGroup other) {
  for (std::unique_ptr<models::Model>& member : other.members_)
    members_.push_back(std::move(member));
}

int ModelGroup::MeanIterations() const {
  double total = 0;
  for (const auto& member : members_) total += member->Info().iterations;
  return members_.empty() ? 0 : static_cast<int>(std::lround(total / double(members_.size())));
}

// Members are serialized and read back in parallel: a bagged forest's fold models take
// seconds each.
std::string ModelGroup::Serialize() const {
  std::vector<std::string> parts(members_.size());
  ForEachInParallel(static_cast<std::int64_t>(members_.size()),
                    [&](std::int64_t m) { parts[m] = members_[m]->Serialize(); });
  ByteWriter writer = ByteWriter::Framed(kGroupMagic, kGroupVersion);
  std::size_t total = family_.size() + 64;
  for (const std::string& part : parts) total += part.size() + 8;
  writer.Reserve(total);
  writer.PutString(family_);
  writer.Put<std::uint32_t>(static_cast<std::uint32_t>(members_.size()));
  for (std::string& part : parts) {
    writer.PutString(part);
    std::string().swap(part);
  }
  return std::move(writer).Frame();
}

ModelGroup ModelGroup::Deserialize(std::string_view bytes, const std::string& name,
                                   const models::Task& task) {
  ByteReader reader(UnframeBytes(bytes, kGroupMagic, kGroupVersion, name), name);
  ModelGroup group;
  group.family_ = reader.GetString();
  const models::Family& family = models::GetFamily(group.family_);
  const auto count = reader.Get<std::uint32_t>();
  if (count == 0 || count > 10000) reader.Corrupted("implausible member count");
  std::vector<std::string_view> parts;
  for (std::uint32_t m = 0; m < count; ++m) parts.push_back(reader.GetStringView());
  if (!reader.AtEnd()) reader.Corrupted("bytes after the last member");
  group.members_.resize(parts.size());
  ForEachInParallel(static_cast<std::int64_t>(parts.size()), [&](std::int64_t m) {
    group.members_[m] = family.deserialize(parts[m], name, task);
  });
  return group;
}

BagResult FitBagged(const std::function<std::unique_ptr<models::Model>()>& make,
                    const std::string& family, const features::FeatureMatrix& train,
                    std::span<const double> labels,
                    const std::vector<std::vector<std::int32_t>>& fold_sets, int folds,
                    const models::Task& task, const models::FitContext& context, int first_set,
                    bool own_out_of_fold) {
  const std::int64_t rows = train.num_rows;
  const int outputs = task.outputs();
  BagResult result;
  result.out_of_fold.assign(static_cast<std::size_t>(rows * outputs), 0.0);
  std::vector<std::unique_ptr<models::Model>> members;
  // A model that predicts its own training rows without them (out-of-bag, leave-one-out)
  // trains once on every row instead of once per fold (AutoGluon's use_child_oof).
  if (std::unique_ptr<models::Model> whole = make(); own_out_of_fold && whole->HasOutOfFold()) {
    result.out_of_fold = whole->FitOutOfFold(train, labels, context);
    TFG_CHECK(result.out_of_fold.size() == static_cast<std::size_t>(rows * outputs),
              "{} out-of-fold predictions for {} rows x {} outputs", result.out_of_fold.size(),
              rows, outputs);
    members.push_back(std::move(whole));
    result.group = ModelGroup(family, std::move(members));
    return result;
  }
  const int total_fits = static_cast<int>(fold_sets.size()) * folds;
  int fits_done = 0;
  for (std::size_t set = 0; set < fold_sets.size(); ++set) {
    const std::vector<std::int32_t>& fold_of = fold_sets[set];
    for (int fold = 0; fold < folds; ++fold) {
      std::vector<std::int64_t> fit_rows, held_rows;
      for (std::int64_t row = 0; row < rows; ++row) {
        (fold_of[row] == fold ? held_rows : fit_rows).push_back(row);
      }
      const features::FeatureMatrix fit = features::SelectRows(train, fit_rows);
      const features::FeatureMatrix held = features::SelectRows(train, held_rows);
      std::vector<double> fit_labels, held_labels;
      for (std::int64_t row : fit_rows) fit_labels.push_back(labels[row]);
      for (std::int64_t row : held_rows) held_labels.push_back(labels[row]);
      models::FitContext fold_context = context;
      const double left = context.deadline.SecondsLeft();
      if (left < 1e299) fold_context.deadline = Deadline::In(left / (total_fits - fits_done));
      fold_context.seed =
          context.seed + std::uint64_t(first_set + set) * folds + std::uint64_t(fold);
      std::unique_ptr<models::Model> model = make();
      if (!own_out_of_fold && model->HasOutOfFold()) model->ShareAmongFolds(folds);
      model->Fit(fit, fit_labels, &held, held_labels, fold_context);
      Stopwatch predict_watch;
      const std::vector<double> predicted = model->Predict(held, context.threads);
      result.predict_seconds += predict_watch.Seconds();
      for (std::size_t i = 0; i < held_rows.size(); ++i) {
        for (int k = 0; k < outputs; ++k) {
          result.out_of_fold[held_rows[i] * outputs + k] += predicted[i * outputs + k];
        }
      }
      members.push_back(std::move(model));
      ++fits_done;
    }
  }
  if (fold_sets.size() > 1) {
    const double scale = 1.0 / double(fold_sets.size());
    for (double& value : result.out_of_fold) value *= scale;
  }
  result.group = ModelGroup(family, std::move(members));
  return result;
}

}  // namespace tabforge::ensemble
