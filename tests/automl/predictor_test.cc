#include "tabforge/predictor.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "core/error.h"
#include "core/sha256.h"
#include "core/timer.h"
#include "data/csv_reader.h"
#include "data/table.h"
#include "key_memory_model.h"
#include "models/model.h"
#include "test_support.h"

namespace tabforge {
namespace {

// Adult rows [first, first + count) of the training file.
data::Table AdultRows(std::int64_t first, std::int64_t count) {
  static const data::Table table = data::ReadCsv(testing::DatasetPath("adult_train.csv.gz"));
  std::vector<std::int64_t> rows;
  for (std::int64_t row = first; row < first + count && row < table.num_rows(); ++row) {
    rows.push_back(row);
  }
  return data::SelectRows(table, rows);
}

PredictorOptions Quiet() {
  PredictorOptions options;
  options.verbosity = 0;
  return options;
}

// The message of the InvalidInput a fit throws, or "no error".
std::string FitError(const std::string& label, const data::Table& table,
                     const FitOptions& options) {
  try {
    TabularPredictor(label, Quiet()).fit(table, options);
  } catch (const InvalidInput& error) {
    return error.what();
  }
  return "no error";
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

TEST(Predictor, HoldoutFitThenSaveAndLoadPredictIdentically) {
  TFG_REQUIRE_DATASETS();
  const data::Table train = AdultRows(0, 4000);
  const data::Table test = AdultRows(20000, 2000);
  TabularPredictor predictor("class", Quiet());
  FitOptions options;
  options.hyperparameters =
      R"({"GBM": [{"num_iterations": 300}, {"extra_trees": true, "ag_args": {"name_suffix": "XT"}}]})";
  predictor.fit(train, options);
  EXPECT_EQ(predictor.problem_type(), "binary");
  EXPECT_EQ(predictor.eval_metric(), "accuracy");
  const std::vector<LeaderboardRow> board = predictor.leaderboard(&test);
  std::set<std::string> names;
  for (const LeaderboardRow& row : board) {
    names.insert(row.model);
    EXPECT_TRUE(row.can_infer) << row.model << ": " << row.error;
    ASSERT_TRUE(row.score_val.has_value());
    ASSERT_TRUE(row.score_test.has_value());
    EXPECT_GT(*row.score_test, 0.82) << row.model;
  }
  EXPECT_EQ(names, (std::set<std::string>{"GBM", "GBMXT", "WeightedEnsemble_L2"}));
  const auto metrics = predictor.evaluate(test);
  ASSERT_FALSE(metrics.empty());
  EXPECT_EQ(metrics.front().first, "accuracy");
  EXPECT_GT(metrics.front().second, 0.84);

  const ProbabilityTable before = predictor.predict_proba(test);
  const PredictionColumn labels = predictor.predict(test);
  ASSERT_EQ(labels.labels.size(), 2000u);
  for (const std::string& label : labels.labels) {
    EXPECT_TRUE(label == predictor.class_labels()[0] || label == predictor.class_labels()[1]);
  }
  const std::string dir = testing::TempDir("predictor_roundtrip") + "/model";
  predictor.save(dir);
  const TabularPredictor loaded = TabularPredictor::load(dir);
  EXPECT_EQ(loaded.best_model(), predictor.best_model());
  const ProbabilityTable after = loaded.predict_proba(test);
  ASSERT_EQ(after.values.size(), before.values.size());
  EXPECT_EQ(0, std::memcmp(after.values.data(), before.values.data(),
                           before.values.size() * sizeof(double)));
  EXPECT_EQ(loaded.predict(test).labels, labels.labels);
  // Saving again replaces the directory whole.
  predictor.save(dir);
  EXPECT_EQ(TabularPredictor::load(dir).predict(test).labels, labels.labels);
}

// A loaded predictor reads the best model and the models it uses at once; the others when first
// needed, with the same predictions, and a file changed after the load is refused then.
TEST(Predictor, ModelsTheBestOneDoesNotUseAreReadWhenFirstNeeded) {
  TFG_REQUIRE_DATASETS();
  FitOptions options;
  options.refit_full = 1;  // the best model becomes a _FULL twin: the originals go unused
  options.hyperparameters = R"({"GBM": {"num_iterations": 100}, "KNN": {}})";
  TabularPredictor predictor("class", Quiet());
  predictor.fit(AdultRows(0, 3000), options);
  const data::Table test = AdultRows(20000, 1000);
  const std::string dir = testing::TempDir("predictor_lazy") + "/model";
  predictor.save(dir);
  // The models outside the best one's closure, from the manifest.
  const nlohmann::json manifest = nlohmann::json::parse(ReadAll(dir + "/manifest.json"));
  std::map<std::string, nlohmann::json> items;
  for (const nlohmann::json& item : manifest["models"]) items[item["name"]] = item;
  std::set<std::string> used;
  std::vector<std::string> stack{manifest["best_model"].get<std::string>()};
  while (!stack.empty()) {
    const std::string name = stack.back();
    stack.pop_back();
    if (!used.insert(name).second) continue;
    for (const char* field : {"members", "stack_inputs"}) {
      for (const auto& other : items[name][field]) stack.push_back(other.get<std::string>());
    }
  }
  std::vector<std::string> unused;
  for (const auto& [name, item] : items) {
    if (!used.count(name) && item.contains("data")) unused.push_back(name);
  }
  ASSERT_FALSE(unused.empty()) << "the best model uses every model; the test needs one it does not";
  const TabularPredictor loaded = TabularPredictor::load(dir);
  for (const LeaderboardRow& row : predictor.leaderboard()) {
    const ProbabilityTable before = predictor.predict_proba(test, row.model);
    const ProbabilityTable after = loaded.predict_proba(test, row.model);
    ASSERT_EQ(after.values.size(), before.values.size()) << row.model;
    EXPECT_EQ(0, std::memcmp(after.values.data(), before.values.data(),
                             before.values.size() * sizeof(double)))
        << row.model;
  }
  // Changed after a load: the best model predicts (read at the load); an unused one is refused.
  const TabularPredictor again = TabularPredictor::load(dir);
  const std::string file = dir + "/models/" + unused.front() + ".bin";
  std::string bytes = ReadAll(file);
  bytes[bytes.size() / 2] ^= 0x5a;
  testing::WriteFile(file, bytes);
  EXPECT_EQ(again.predict(test).labels, predictor.predict(test).labels);
  try {
    again.predict(test, unused.front());
    FAIL() << "a model file changed after the load was read";
  } catch (const InvalidInput& error) {
    EXPECT_NE(std::string(error.what()).find("changed after it was loaded"), std::string::npos)
        << error.what();
  }
  // And a new load checks every file.
  EXPECT_THROW(TabularPredictor::load(dir), InvalidInput);
}

TEST(Predictor, CorruptedOrNewerModelDirectoriesAreRefused) {
  TFG_REQUIRE_DATASETS();
  const data::Table train = AdultRows(0, 1500);
  TabularPredictor predictor("class", Quiet());
  FitOptions options;
  options.hyperparameters = R"({"GBM": {"num_iterations": 20}})";
  predictor.fit(train, options);
  const std::string dir = testing::TempDir("predictor_corrupt") + "/model";
  predictor.save(dir);
  const std::string model_file = dir + "/models/GBM.bin";
  std::string bytes = ReadAll(model_file);
  bytes[bytes.size() / 2] ^= 0x5a;
  testing::WriteFile(model_file, bytes);
  try {
    TabularPredictor::load(dir);
    FAIL() << "a corrupted model file loaded";
  } catch (const InvalidInput& error) {
    EXPECT_NE(std::string(error.what()).find("checksum"), std::string::npos) << error.what();
  }
  predictor.save(dir);
  nlohmann::json manifest = nlohmann::json::parse(ReadAll(dir + "/manifest.json"));
  manifest["schema_version"] = 99;
  testing::WriteFile(dir + "/manifest.json", manifest.dump());
  try {
    TabularPredictor::load(dir);
    FAIL() << "a newer model format loaded";
  } catch (const InvalidInput& error) {
    EXPECT_NE(std::string(error.what()).find("upgrade tabforge"), std::string::npos)
        << error.what();
  }
  EXPECT_THROW(TabularPredictor::load(testing::TempDir("predictor_empty")), IoError);
}

// Directories beside `dir` that a save in progress uses (".NAME.tmp-*").
int TemporaryDirectoriesBeside(const std::string& dir) {
  namespace fs = std::filesystem;
  const fs::path target(dir);
  int count = 0;
  for (const auto& item : fs::directory_iterator(target.parent_path())) {
    count +=
        item.path().filename().string().rfind("." + target.filename().string() + ".tmp-", 0) == 0;
  }
  return count;
}

TEST(Predictor, AFitGivenAPathWritesItsModelsAheadAndSaveCompletesThem) {
  TFG_REQUIRE_DATASETS();
  namespace fs = std::filesystem;
  const data::Table train = AdultRows(0, 3000);
  const data::Table test = AdultRows(20000, 500);
  const std::string dir = testing::TempDir("predictor_ahead") + "/model";
  FitOptions options;
  options.hyperparameters = R"({"GBM": [{"num_iterations": 30}, {"num_leaves": 7}]})";
  {
    PredictorOptions with_path = Quiet();
    with_path.path = dir;
    TabularPredictor predictor("class", with_path);
    predictor.fit(train, options);
    // The model files are written while fitting, into a directory save() completes.
    EXPECT_FALSE(fs::exists(dir));
    ASSERT_EQ(TemporaryDirectoriesBeside(dir), 1);
    const ProbabilityTable before = predictor.predict_proba(test);
    predictor.save();
    EXPECT_EQ(TemporaryDirectoriesBeside(dir), 0);
    const ProbabilityTable after = TabularPredictor::load(dir).predict_proba(test);
    ASSERT_EQ(after.values.size(), before.values.size());
    EXPECT_EQ(0, std::memcmp(after.values.data(), before.values.data(),
                             before.values.size() * sizeof(double)));
    // A second save (nothing written ahead now) replaces the directory with the same files.
    const std::string model_bytes = ReadAll(dir + "/models/GBM.bin");
    predictor.save();
    EXPECT_EQ(ReadAll(dir + "/models/GBM.bin"), model_bytes);
  }
  {
    // A fit that is never saved leaves nothing behind.
    PredictorOptions with_path = Quiet();
    with_path.path = testing::TempDir("predictor_unsaved") + "/model";
    {
      TabularPredictor predictor("class", with_path);
      predictor.fit(train, options);
      EXPECT_EQ(TemporaryDirectoriesBeside(with_path.path), 1);
    }
    EXPECT_EQ(TemporaryDirectoriesBeside(with_path.path), 0);
    EXPECT_FALSE(fs::exists(with_path.path));
  }
  {
    // A path that save() could not fill fails the fit before it trains.
    PredictorOptions bad_path = Quiet();
    bad_path.path = testing::TempDir("predictor_bad_path") + "/file";
    testing::WriteFile(bad_path.path, "not a model");
    TabularPredictor predictor("class", bad_path);
    try {
      predictor.fit(train, options);
      FAIL() << "a fit into a plain file's path started";
    } catch (const InvalidInput& error) {
      EXPECT_NE(std::string(error.what()).find("is not a directory"), std::string::npos)
          << error.what();
    }
  }
  {
    // Directories written before the manifest listed Checksum64 (SHA-256 per file) still load.
    nlohmann::json manifest = nlohmann::json::parse(ReadAll(dir + "/manifest.json"));
    auto to_sha = [&](nlohmann::json& ref) {
      ref["sha256"] = Sha256Hex(ReadAll(dir + "/" + ref.at("file").get<std::string>()));
      ref.erase("checksum");
    };
    to_sha(manifest["pipeline"]);
    for (nlohmann::json& item : manifest["models"]) {
      if (item.contains("data")) to_sha(item["data"]);
    }
    manifest["schema_version"] = 1;
    testing::WriteFile(dir + "/manifest.json", manifest.dump());
    EXPECT_EQ(TabularPredictor::load(dir).predict(test).labels.size(), 500u);
  }
}

TEST(Predictor, AFailingModelIsRecordedAndTheFitGoesOn) {
  TFG_REQUIRE_DATASETS();
  const data::Table train = AdultRows(0, 3000);
  TabularPredictor predictor("class", Quiet());
  FitOptions options;
  // 2^21 gradient levels overflow the histogram sums of 2800 rows: that model fails at fit.
  options.hyperparameters =
      R"({"GBM": [{"num_iterations": 50}, {"num_grad_quant_bins": 2097152, "ag_args": {"name_suffix": "Fine"}}]})";
  predictor.fit(train, options);
  bool found = false;
  for (const LeaderboardRow& row : predictor.leaderboard()) {
    if (row.model != "GBMFine") continue;
    found = true;
    EXPECT_FALSE(row.can_infer);
    EXPECT_NE(row.error.find("num_grad_quant_bins"), std::string::npos) << row.error;
  }
  EXPECT_TRUE(found);
  EXPECT_NE(predictor.best_model(), "GBMFine");
  EXPECT_NE(predictor.fit_summary().find("GBMFine: failed"), std::string::npos);
}

TEST(Predictor, TimeLimitIsHonoured) {
  TFG_REQUIRE_DATASETS();
  const data::Table train = AdultRows(0, 40000);
  // With a path the fit writes its model files as it goes: the limit covers them, and save()
  // has only the manifest left.
  PredictorOptions with_path = Quiet();
  with_path.path = testing::TempDir("predictor_time_limit") + "/model";
  TabularPredictor predictor("class", with_path);
  FitOptions options;
  options.time_limit = 6;
  options.num_bag_folds = 5;
  options.num_stack_levels = 1;
  Stopwatch watch;
  predictor.fit(train, options);
  predictor.save();
  const double seconds = watch.Seconds();
  EXPECT_LE(seconds, 6 + 2.0);
  // Whatever was skipped says why; the best model predicts.
  for (const LeaderboardRow& row : predictor.leaderboard()) {
    if (!row.can_infer) {
      EXPECT_NE(row.error.find("left of the time limit's share for level"), std::string::npos)
          << row.error;
    }
  }
  EXPECT_EQ(predictor.predict(AdultRows(0, 10)).labels.size(), 10u);
}

// Stack features of rows must come from models that never trained on them: the key-memory
// double predicts 1 for such rows, so at a stack level every stack feature must be 1.
int stack_feature_leaks = 0;
int stacked_fits = 0;
void CheckStackFeatures(const features::FeatureMatrix& train) {
  for (int feature = 0; feature < train.num_numeric(); ++feature) {
    if (train.numeric_info[feature].name.rfind("KEYS_BAG_L", 0) != 0) continue;
    ++stacked_fits;
    for (std::int64_t row = 0; row < train.num_rows; ++row) {
      stack_feature_leaks += train.NumericColumn(feature)[row] != 1.0f;
    }
  }
}

TEST(Predictor, StackedModelsLearnOnlyFromOutOfFoldPredictions) {
  models::RegisterFamily(
      {"KEYS",
       [](const std::string&, const models::Task&) -> std::unique_ptr<models::Model> {
         return std::make_unique<testing::KeyMemoryModel>(&CheckStackFeatures);
       },
       nullptr});
  std::string csv = "key,target\n";
  for (int row = 0; row < 300; ++row)
    csv += std::to_string(row) + ".25," + std::to_string(row % 7) + ".5\n";
  const data::Table table = data::ParseCsv(csv, "keys.csv");
  TabularPredictor predictor("target", Quiet());
  FitOptions options;
  options.hyperparameters = R"({"KEYS": {}})";
  options.num_bag_folds = 3;
  options.num_stack_levels = 2;
  predictor.fit(table, options);
  EXPECT_EQ(predictor.problem_type(), "regression");
  EXPECT_EQ(stacked_fits, 2 * 3);  // levels 2 and 3, three folds each
  EXPECT_EQ(stack_feature_leaks, 0);
}

// A stacked GBM's inputs rank the rows from its first rounds; its fold models still train until
// their probabilities are right, so its pooled out-of-fold predictions score about as its
// level-1 twin's (Adult, 8 folds: 0.002 short; 0.016 short when each fold stopped where the
// ranking peaked, its folds' predictions then differing in scale).
TEST(Predictor, StackedGbmOutOfFoldScoreKeepsUpWithLevelOne) {
  TFG_REQUIRE_DATASETS();
  FitOptions options;
  options.hyperparameters = R"({"GBM": {}})";
  options.num_bag_folds = 8;
  options.num_stack_levels = 1;
  options.dynamic_stacking = 0;
  PredictorOptions predictor_options = Quiet();
  predictor_options.eval_metric = "roc_auc";
  TabularPredictor predictor("class", predictor_options);
  predictor.fit(AdultRows(0, 40000), options);  // every row
  std::map<std::string, double> score;
  for (const LeaderboardRow& row : predictor.leaderboard()) {
    if (row.score_val) score[row.model] = *row.score_val;
  }
  ASSERT_TRUE(score.count("GBM_BAG_L1") && score.count("GBM_BAG_L2"));
  EXPECT_GT(score["GBM_BAG_L1"], 0.92);
  EXPECT_GT(score["GBM_BAG_L2"], score["GBM_BAG_L1"] - 0.006);
}

// Repeated bagging: every fold-bagged model gets its sets after the whole level has its first,
// each set on fresh folds; models with their own out-of-fold rows (forests' out-of-bag rows)
// train once. The manifest records each model's fold models.
TEST(Predictor, RepeatedBaggingGivesEveryBaggedModelItsSets) {
  TFG_REQUIRE_DATASETS();
  const data::Table train = AdultRows(0, 2000);
  FitOptions options;
  options.hyperparameters = R"({"GBM": {"num_iterations": 20}, "RF": {"n_estimators": 10}})";
  options.num_bag_folds = 3;
  options.num_bag_sets = 3;
  TabularPredictor predictor("class", Quiet());
  predictor.fit(train, options);
  const std::string dir = testing::TempDir("predictor_bag_sets") + "/model";
  predictor.save(dir);
  const nlohmann::json manifest = nlohmann::json::parse(ReadAll(dir + "/manifest.json"));
  std::map<std::string, int> folds;
  for (const nlohmann::json& model : manifest.at("models")) {
    folds[model.at("name").get<std::string>()] = model.at("bag_folds").get<int>();
  }
  EXPECT_EQ(folds.at("GBM_BAG_L1"), 9);
  EXPECT_EQ(folds.at("RF_BAG_L1"), 1);
  // Three sets of three folds predict as the average of nine models: the saved predictor
  // gives the same probabilities as the one in memory.
  const data::Table test = AdultRows(2000, 300);
  EXPECT_EQ(TabularPredictor::load(dir).predict_proba(test, "GBM_BAG_L1").values,
            predictor.predict_proba(test, "GBM_BAG_L1").values);
}

// With fewer rows than folds every row is a fold: no fold is left without held-out rows (models
// validated on no rows used to fail).
TEST(Predictor, MoreFoldsThanRowsGiveAFoldPerRow) {
  const data::Table table = data::ParseCsv("x,y\n1,1.5\n2,2.5\n3,0.5\n4,3.5\n5,1.0\n", "five.csv");
  FitOptions options;
  options.hyperparameters = R"({"GBM": {"num_iterations": 5}, "LR": {}})";
  options.num_bag_folds = 8;
  TabularPredictor predictor("y", Quiet());
  predictor.fit(table, options);
  for (const LeaderboardRow& row : predictor.leaderboard()) {
    EXPECT_TRUE(row.can_infer) << row.model << ": " << row.error;
  }
  const std::string dir = testing::TempDir("predictor_few_rows") + "/model";
  predictor.save(dir);
  const nlohmann::json manifest = nlohmann::json::parse(ReadAll(dir + "/manifest.json"));
  for (const nlohmann::json& model : manifest.at("models")) {
    if (model.at("name").get<std::string>() == "GBM_BAG_L1") {
      EXPECT_EQ(model.at("bag_folds").get<int>(), 5);
    }
  }
  EXPECT_EQ(manifest.at("fit").at("num_bag_folds").get<int>(), 5);
  // Too few rows for any model: the error gives each model's reason and, since none ran out of
  // time, does not ask for more time.
  FitOptions tiny;
  tiny.hyperparameters = R"({"GBM": {}})";
  tiny.num_bag_folds = 2;
  tiny.time_limit = 30;
  const std::string message =
      FitError("y", data::ParseCsv("x,y\n1,1.5\n2,2.5\n3,0.5\n", "three.csv"), tiny);
  EXPECT_NE(message.find("GBM_BAG_L1: failed"), std::string::npos) << message;
  EXPECT_EQ(message.find("time limit"), std::string::npos) << message;
}

// An infinite regression target is refused up front with its data row (counted in the file,
// unlabelled rows included), not left to fail every model one by one.
TEST(Predictor, InfiniteRegressionTargetsAreRefusedWithTheirRow) {
  std::string csv = "x,y\n";
  for (int row = 0; row < 40; ++row) {
    csv += std::to_string(row) + "," + (row == 30 ? "inf" : row == 3 ? "" : "1.5") + "\n";
  }
  csv[csv.size() - 2] = '7';  // two target values
  const std::string message = FitError("y", data::ParseCsv(csv, "inf.csv"), {});
  EXPECT_NE(message.find("data row 31"), std::string::npos) << message;
  EXPECT_NE(message.find("finite"), std::string::npos) << message;
}

// A table whose only column is dropped (row numbers) leaves no feature: every family still fits
// (a model of the label alone; feature sampling used to index an empty feature list) and
// predicts one value for every row.
TEST(Predictor, NoFeatureLeftFitsTheLabelAlone) {
  std::string csv = "id,y\n";
  for (int row = 0; row < 60; ++row)
    csv += std::to_string(row) + "," + (row % 4 ? "a" : "b") + "\n";
  const data::Table table = data::ParseCsv(csv, "ids.csv");
  FitOptions options;
  options.hyperparameters =
      R"({"GBM": [{}, {"feature_fraction": 0.7}, {"feature_fraction_bynode": 0.5}],
          "RF": {"max_features": 0.5}, "XT": {}, "LR": {}})";
  TabularPredictor predictor("y", Quiet());
  predictor.fit(table, options);
  for (const LeaderboardRow& row : predictor.leaderboard()) {
    EXPECT_TRUE(row.can_infer) << row.model << ": " << row.error;
  }
  const ProbabilityTable p = predictor.predict_proba(table);
  ASSERT_EQ(p.values.size(), 2u * 60u);
  for (std::size_t at = 0; at < p.values.size(); ++at) EXPECT_EQ(p.values[at], p.values[at % 2]);
}

// refit_full after a stacked fit: the best model and everything it stands on get a _FULL twin
// trained once on all rows, which becomes the best model, predicts well and survives save/load.
// (The refit loop once held pointers into the list it appends to.)
TEST(Predictor, RefitFullRetrainsTheBestModelsStackOnAllRows) {
  TFG_REQUIRE_DATASETS();
  const data::Table train = AdultRows(0, 3000);
  const data::Table test = AdultRows(3000, 1000);
  FitOptions options;
  options.hyperparameters =
      R"({"GBM": [{"num_iterations": 60}, {"num_iterations": 60, "extra_trees": true,
          "ag_args": {"name_suffix": "XT"}}], "LR": {}})";
  options.num_bag_folds = 3;
  options.num_stack_levels = 1;
  options.dynamic_stacking = 0;
  options.refit_full = 1;
  TabularPredictor predictor("class", Quiet());
  predictor.fit(train, options);
  const std::string best = predictor.best_model();
  ASSERT_TRUE(best.ends_with("_FULL")) << best;
  std::set<std::string> names;
  for (const LeaderboardRow& row : predictor.leaderboard()) names.insert(row.model);
  for (const std::string& name : names) {
    if (name.ends_with("_FULL")) {
      EXPECT_TRUE(names.count(name.substr(0, name.size() - 5))) << name;
    }
  }
  const std::string dir = testing::TempDir("predictor_refit") + "/model";
  predictor.save(dir);
  const nlohmann::json manifest = nlohmann::json::parse(ReadAll(dir + "/manifest.json"));
  int refit_models = 0;
  for (const nlohmann::json& model : manifest.at("models")) {
    const std::string name = model.at("name").get<std::string>();
    if (!name.ends_with("_FULL") || name.starts_with("WeightedEnsemble")) continue;
    ++refit_models;
    EXPECT_EQ(model.at("bag_folds").get<int>(), 0) << name;  // one model, not bagged
  }
  EXPECT_GE(refit_models, 2);  // a level-2 model and the level-1 models it reads
  double auc = 0;
  for (const auto& [metric, value] : predictor.evaluate(test)) {
    if (metric == "roc_auc") auc = value;
  }
  EXPECT_GT(auc, 0.87);
  EXPECT_EQ(TabularPredictor::load(dir).predict_proba(test).values,
            predictor.predict_proba(test).values);
}

TEST(Predictor, OptionErrorsNameTheRemedy) {
  TFG_REQUIRE_DATASETS();
  const data::Table train = AdultRows(0, 500);
  auto message = [&](FitOptions options) {
    try {
      TabularPredictor("class", Quiet()).fit(train, options);
    } catch (const InvalidInput& error) {
      return std::string(error.what());
    }
    return std::string("no error");
  };
  FitOptions stacked;
  stacked.num_stack_levels = 1;
  EXPECT_NE(message(stacked).find("num_bag_folds"), std::string::npos);
  FitOptions preset;
  preset.presets = "ultra";
  EXPECT_NE(message(preset).find("best_quality"), std::string::npos);
  FitOptions family;
  family.hyperparameters = R"({"XGBOOST": {}})";
  EXPECT_NE(message(family).find("GBM"), std::string::npos);
  FitOptions param;
  param.hyperparameters = R"({"GBM": {"num_leafs": 8}})";
  EXPECT_NE(message(param).find("num_leaves"), std::string::npos);
  FitOptions args;
  args.hyperparameters = R"({"GBM": {"ag_args": {"suffix": "X"}}})";
  EXPECT_NE(message(args).find("name_suffix"), std::string::npos);
  EXPECT_NE(message(FitOptions{}).find("no error"), std::string::npos);
  const data::Table unseen_class = data::ParseCsv("age,workclass,class\n30,Private,maybe\n",
                                                  "tuning.csv");  // and most columns missing
  FitOptions tuning;
  tuning.tuning_data = &unseen_class;
  EXPECT_EQ(message(tuning).rfind("tuning data: ", 0), 0u) << message(tuning);
  try {
    TabularPredictor("no_such_column", Quiet()).fit(train, {});
    FAIL();
  } catch (const InvalidInput& error) {
    EXPECT_NE(std::string(error.what()).find("class"), std::string::npos) << error.what();
  }
}

}  // namespace
}  // namespace tabforge
