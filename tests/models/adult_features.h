// UCI Adult's training rows (32,561 rows, numeric and categorical features, missing values)
// through one feature pipeline, with labels 1 for ">50K" and 0 otherwise. Call after
// TFG_REQUIRE_DATASETS().
#pragma once

#include <vector>

#include "data/csv_reader.h"
#include "features/pipeline.h"
#include "test_support.h"

namespace tabforge::testing {

struct AdultFeatures {
  features::FeatureMatrix rows;
  std::vector<double> labels;
};

inline AdultFeatures LoadAdultTrainFeatures() {
  const data::Table table = data::ReadCsv(DatasetPath("adult_train.csv.gz"));
  AdultFeatures adult;
  adult.rows = features::FeaturePipeline::Fit(table, "class").Transform(table);
  const data::Column& column = table.ColumnByName("class");
  for (std::int64_t row = 0; row < table.num_rows(); ++row) {
    adult.labels.push_back(column.CellText(row) == ">50K" ? 1.0 : 0.0);
  }
  return adult;
}

}  // namespace tabforge::testing
