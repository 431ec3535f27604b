// UCI letter (20,000 rows, 16 numeric features, 26 classes) through one feature pipeline, with
// labels as class indices (the tests of the model families share it). Call after
// TFG_REQUIRE_DATASETS().
#pragma once

#include <algorithm>
#include <vector>

#include "data/csv_reader.h"
#include "data/problem_type.h"
#include "features/pipeline.h"
#include "test_support.h"

namespace tabforge::testing {

struct LetterFeatures {
  features::FeatureMatrix rows;
  std::vector<double> labels;  // class indices in `classes`' order
  int classes = 0;
};

inline LetterFeatures LoadLetterFeatures() {
  const data::Table table = data::ReadCsv(DatasetPath("letter.csv.gz"));
  const data::LabelSummary summary = data::AnalyzeLabel(table, "lettr");
  LetterFeatures letter;
  letter.rows = features::FeaturePipeline::Fit(table, "lettr").Transform(table);
  const data::Column& column = table.ColumnByName("lettr");
  for (std::int64_t row = 0; row < table.num_rows(); ++row) {
    letter.labels.push_back(
        double(std::find(summary.classes.begin(), summary.classes.end(), column.CellText(row)) -
               summary.classes.begin()));
  }
  letter.classes = static_cast<int>(summary.classes.size());
  return letter;
}

}  // namespace tabforge::testing
