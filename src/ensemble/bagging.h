// k-fold bagging (AutoGluon's "bagged" models): one model configuration trained once per fold
// on the other folds, validated (early-stopped) on its own fold, for num_bag_sets repeats with
// fresh folds. Every training row gets an out-of-fold prediction, averaged over the sets; the
// bag predicts new rows with the average of all its fold models.
#pragma once

#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "features/feature_matrix.h"
#include "models/model.h"

namespace tabforge::ensemble {

// Fitted models whose predictions are averaged: the folds of a bag, or a single model.
class ModelGroup {
 public:
  ModelGroup() = default;
  ModelGroup(std::string family, std::vector<std::unique_ptr<models::Model>> members)
      : family_(std::move(family)), members_(std::move(members)) {}

  const std::string& family() const { return family_; }
  const std::vector<std::unique_ptr<models::Model>>& members() const { return members_; }
  // The average of the members' predictions (row-major n x outputs). Batches of fewer than
  // kSmallBatchRows rows, which a member cannot spread over threads, are predicted by several
  // members at once, one thread each; either way the sum runs in member order, so the result
  // is the same bits.
  std::vector<double> Predict(const features::FeatureMatrix& features, int threads) const;
  static constexpr std::int64_t kSmallBatchRows = 256;
  // The members' mean iteration count (rounded), for refitting on all rows.
  int MeanIterations() const;
  // Takes `other`'s members (another set of the same configuration's folds) as its own.
  void Absorb(ModelGroup other);

  // Versioned, checksummed; Deserialize rejects corrupted bytes naming `name`.
  std::string Serialize() const;
  static ModelGroup Deserialize(std::string_view bytes, const std::string& name,
                                const models::Task& task);

 private:
  std::string family_;
  std::vector<std::unique_ptr<models::Model>> members_;
};

struct BagResult {
  ModelGroup group;
  std::vector<double> out_of_fold;  // n x outputs, every row predicted by the folds not
                                    // trained on it, averaged over the sets
  double predict_seconds = 0;       // time the fold models took to predict their folds
};

// Trains the bag. `fold_sets[s][row]` is the row's fold in set s (see AssignFolds), and set s
// is set first_set + s of the fit (its fold models' seeds follow from that number); `make`
// creates a fresh model of the configuration. Each fold gets an equal share of the time left
// before the context's deadline. With `own_out_of_fold`, a model with its own out-of-fold
// predictions (Model::HasOutOfFold: forests' out-of-bag rows, KNN's leave-one-out) is trained
// once on every row instead, and the bag holds that one model (stacked levels pass false:
// there the other rows' features carry each row's label through the level below, and
// out-of-bag scores come out optimistic; such a model is then bagged by folds, each fold model
// taking its Model::ShareAmongFolds share). Errors of a fold propagate (the caller records
// them).
BagResult FitBagged(const std::function<std::unique_ptr<models::Model>()>& make,
                    const std::string& family, const features::FeatureMatrix& train,
                    std::span<const double> labels,
                    const std::vector<std::vector<std::int32_t>>& fold_sets, int folds,
                    const models::Task& task, const models::FitContext& context, int first_set = 0,
                    bool own_out_of_fold = true);

}  // namespace tabforge::ensemble
