// Adult's train and test files through one feature pipeline fitted on train, with labels 1 for
// ">50K" (the tests of the model families share it). Call after TFG_REQUIRE_DATASETS().
#pragma once

#include <vector>

#include "data/csv_reader.h"
#include "features/pipeline.h"
#include "test_support.h"

namespace tabforge::testing {

struct AdultFeatures {
  features::FeatureMatrix train;
  features::FeatureMatrix test;
  std::vector<double> train_labels;
  std::vector<double> test_labels;
};

inline AdultFeatures LoadAdultFeatures() {
  const data::Table train = data::ReadCsv(DatasetPath("adult_train.csv.gz"));
  const data::Table test = data::ReadCsv(DatasetPath("adult_test.csv.gz"));
  const features::FeaturePipeline pipeline = features::FeaturePipeline::Fit(train, "class");
  auto labels = [](const data::Table& table) {
    std::vector<double> out;
    const data::Column& column = table.ColumnByName("class");
    for (std::int64_t row = 0; row < table.num_rows(); ++row) {
      out.push_back(column.CellText(row).starts_with(">50K") ? 1.0 : 0.0);
    }
    return out;
  };
  return {pipeline.Transform(train), pipeline.Transform(test), labels(train), labels(test)};
}

}  // namespace tabforge::testing
