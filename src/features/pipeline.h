// The fitted feature pipeline: learns from a training Table how to turn any table with the
// same columns into a FeatureMatrix, as AutoGluon's AutoMLPipelineFeatureGenerator does.
//
//   numeric     -> float32 as is (NaN for missing), plus "<col>.is_missing" where the label
//                  differs between rows with and without a value (see PipelineOptions)
//   boolean     -> float32 0/1 (NaN for missing)
//   categorical -> codes by training frequency; rare and over-the-cap categories share the
//                  "rare" code, categories unseen at fit the "unknown" code, missing its own
//   datetime    -> "<col>" epoch seconds, ".year", ".month", ".day", ".dayofweek" (Monday 0)
//                  and ".hour" when the training values carry times
//   text        -> special features (counts and ratios) and word 1-3-gram counts (sparse)
// Dropped at fit, each with its reason: the label, columns entirely missing, constant
// columns, ID-like columns, and columns identical to an earlier kept one.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "data/column.h"
#include "data/table.h"
#include "features/feature_matrix.h"
#include "features/text_features.h"

namespace tabforge::features {

struct PipelineOptions {
  // Categories seen fewer times than this at fit share the "rare" code (AutoGluon: 2).
  int min_category_count = 2;
  // At most this many categories per column get their own code (the most frequent); the
  // rest share the "rare" code.
  int max_categories = 1000;
  // A numeric column gets an is-missing indicator when at least this many rows are missing
  // and the label's distribution in those rows differs from the rest by at least
  // missing_indicator_min_shift: total variation distance of the class frequencies for
  // classification, |difference of means| / standard deviation for regression.
  int missing_indicator_min_rows = 10;
  double missing_indicator_min_shift = 0.05;
  // Text columns: special features and n-grams.
  bool text_special_features = true;
  bool text_ngrams = true;
  NgramOptions ngram;
  // Threads for fitting; 0 means all.
  int num_threads = 0;
};

// What the pipeline does with one input column.
struct ColumnDecision {
  std::string column;
  data::ColumnType input_type = data::ColumnType::kNumeric;
  bool kept = false;
  std::string reason;                // why it was dropped, or how it is encoded
  std::vector<std::string> outputs;  // names of the features it produces
};

// Fitted per-column state (defined in pipeline.cc).
struct ColumnTransform;

class FeaturePipeline {
 public:
  FeaturePipeline();
  ~FeaturePipeline();
  FeaturePipeline(FeaturePipeline&&) noexcept;
  FeaturePipeline& operator=(FeaturePipeline&&) noexcept;

  // Learns the transformation from `train`; `label` names the label column, which is never a
  // feature (empty: none). Throws InvalidInput for a label that does not exist.
  static FeaturePipeline Fit(const data::Table& train, std::string_view label,
                             const PipelineOptions& options = {});

  // The features of `table`, which must hold every kept column (others, the label included,
  // are ignored). Deterministic: the same table gives the same bytes whatever the thread
  // count (0 = all). Throws InvalidInput naming the column when one is missing or holds
  // values of another type than at fit (with an example value).
  FeatureMatrix Transform(const data::Table& table, int threads = 0) const;

  // One decision per input column of the training table, in its column order.
  const std::vector<ColumnDecision>& decisions() const { return decisions_; }

  // Serialized form: versioned and checksummed. Deserialize rejects another format version
  // or a corrupted or truncated blob with InvalidInput naming `name`.
  std::string Serialize() const;
  static FeaturePipeline Deserialize(std::string_view bytes, const std::string& name);

  // Writes Serialize() to `path` atomically (a temporary name, then rename); reads it back.
  void Save(const std::string& path) const;
  static FeaturePipeline Load(const std::string& path);

 private:
  PipelineOptions options_;
  std::vector<ColumnDecision> decisions_;
  std::vector<std::unique_ptr<ColumnTransform>> transforms_;  // kept columns, in order
};

}  // namespace tabforge::features
