// End-to-end tests of the tabforge program: run it as a user would and check what it prints
// and its exit status.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "test_support.h"

namespace {

struct CommandResult {
  int status = -1;
  std::string output;  // stdout and stderr together
};

// Runs tabforge with `environment` ("NAME=value ..." assignments, or "") before it.
CommandResult TabforgeWith(const std::string& environment, const std::string& arguments) {
  std::string command = environment + std::string(TABFORGE_CLI_PATH) + " " + arguments + " 2>&1";
  CommandResult run;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return run;
  std::array<char, 4096> buffer;
  while (std::size_t got = std::fread(buffer.data(), 1, buffer.size(), pipe)) {
    run.output.append(buffer.data(), got);
  }
  int status = pclose(pipe);
  run.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return run;
}

CommandResult Tabforge(const std::string& arguments) { return TabforgeWith("", arguments); }

TEST(Cli, VersionAndHelp) {
  CommandResult version = Tabforge("--version");
  EXPECT_EQ(version.status, 0);
  EXPECT_NE(version.output.find("tabforge 0."), std::string::npos) << version.output;
  CommandResult help = Tabforge("inspect --help");
  EXPECT_EQ(help.status, 0);
  EXPECT_NE(help.output.find("--label"), std::string::npos) << help.output;
  EXPECT_NE(help.output.find("--na-values"), std::string::npos) << help.output;
  EXPECT_NE(Tabforge("").status, 0);  // a subcommand is required
}

TEST(Cli, InspectAdultWithLabel) {
  TFG_REQUIRE_DATASETS();
  CommandResult run = Tabforge("inspect " + tabforge::testing::DatasetPath("adult_train.csv.gz") +
                               " --label class");
  ASSERT_EQ(run.status, 0) << run.output;
  EXPECT_NE(run.output.find("32,561 rows x 15 columns"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("label 'class': binary"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("positive class: >50K"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("workclass"), std::string::npos);
}

TEST(Cli, InspectJson) {
  TFG_REQUIRE_DATASETS();
  CommandResult run =
      Tabforge("inspect " + tabforge::testing::DatasetPath("california_housing.csv.gz") +
               " --label median_house_value --json");
  ASSERT_EQ(run.status, 0) << run.output;
  nlohmann::json report = nlohmann::json::parse(run.output);
  EXPECT_EQ(report["rows"], 20640);
  EXPECT_EQ(report["columns"], 10);
  EXPECT_EQ(report["label"]["problem_type"], "regression");
  EXPECT_EQ(report["label"]["max"], 500001.0);
  bool found = false;
  for (const auto& column : report["column_info"]) {
    if (column["name"] == "total_bedrooms") {
      found = true;
      EXPECT_EQ(column["missing"], 207);
      EXPECT_EQ(column["type"], "numeric");
    }
    if (column["name"] == "ocean_proximity") {
      EXPECT_EQ(column["type"], "categorical");
    }
  }
  EXPECT_TRUE(found);
}

TEST(Cli, ErrorsAreOneClearLineWithExitStatus) {
  CommandResult missing = Tabforge("inspect /nonexistent/data.csv");
  EXPECT_EQ(missing.status, 2);
  EXPECT_NE(missing.output.find("no such file"), std::string::npos) << missing.output;
  std::string dir = tabforge::testing::TempDir("cli");
  tabforge::testing::WriteFile(dir + "/ragged.csv", "a,b\n1,2\n3\n");
  CommandResult ragged = Tabforge("inspect " + dir + "/ragged.csv");
  EXPECT_EQ(ragged.status, 1);
  EXPECT_NE(ragged.output.find("ragged.csv: line 3"), std::string::npos) << ragged.output;
  tabforge::testing::WriteFile(dir + "/ok.csv", "a,b\n1,x\n2,y\n");
  CommandResult no_label = Tabforge("inspect " + dir + "/ok.csv --label target");
  EXPECT_EQ(no_label.status, 1);
  EXPECT_NE(no_label.output.find("the columns are: 'a', 'b'"), std::string::npos)
      << no_label.output;
  CommandResult bad_delimiter = Tabforge("inspect " + dir + "/ok.csv --delimiter ab");
  EXPECT_EQ(bad_delimiter.status, 1);
  EXPECT_NE(bad_delimiter.output.find("--delimiter"), std::string::npos);
}

TEST(Cli, NaValuesOption) {
  std::string dir = tabforge::testing::TempDir("cli_na");
  tabforge::testing::WriteFile(dir + "/na.csv", "a,b\n-1,NA\n2,x\n");
  CommandResult run = Tabforge("inspect " + dir + "/na.csv --json --na-values=-1");
  ASSERT_EQ(run.status, 0) << run.output;
  nlohmann::json report = nlohmann::json::parse(run.output);
  EXPECT_EQ(report["column_info"][0]["missing"], 1);
  EXPECT_EQ(report["column_info"][1]["missing"], 0);
}

TEST(Cli, InspectFeaturesShowsDropsAndOutputs) {
  TFG_REQUIRE_DATASETS();
  CommandResult run =
      Tabforge("inspect " + tabforge::testing::DatasetPath("bike_sharing_hour.csv.gz") +
               " --label cnt --features");
  ASSERT_EQ(run.status, 0) << run.output;
  EXPECT_NE(run.output.find("instant"), std::string::npos);
  EXPECT_NE(run.output.find("dropped: ID-like"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("dteday.dayofweek"), std::string::npos) << run.output;
  CommandResult json =
      Tabforge("inspect " + tabforge::testing::DatasetPath("bike_sharing_hour.csv.gz") +
               " --label cnt --features --json");
  ASSERT_EQ(json.status, 0) << json.output;
  nlohmann::json report = nlohmann::json::parse(json.output);
  ASSERT_TRUE(report.contains("features"));
  EXPECT_EQ(report["features"][0]["column"], "instant");
  EXPECT_FALSE(report["features"][0]["kept"]);
}

}  // namespace

namespace {

std::string ReadText(const std::string& path) {
  std::FILE* file = std::fopen(path.c_str(), "rb");
  std::string text;
  if (file == nullptr) return text;
  std::array<char, 4096> buffer;
  while (std::size_t got = std::fread(buffer.data(), 1, buffer.size(), file)) {
    text.append(buffer.data(), got);
  }
  std::fclose(file);
  return text;
}

int CountLines(const std::string& text) {
  int lines = 0;
  for (char c : text) lines += c == '\n';
  return lines;
}

}  // namespace

TEST(Cli, FitPredictEvaluateLeaderboardSummaryOnTitanic) {
  TFG_REQUIRE_DATASETS();
  const std::string data = tabforge::testing::DatasetPath("titanic.csv.gz");
  const std::string dir = tabforge::testing::TempDir("cli_fit");
  CommandResult fit = Tabforge("fit --train " + data + " --label survived --time-limit 30 -o " +
                               dir + "/model --test " + data);
  ASSERT_EQ(fit.status, 0) << fit.output;
  EXPECT_NE(fit.output.find("GBM: val accuracy"), std::string::npos) << fit.output;
  EXPECT_NE(fit.output.find("WeightedEnsemble_L2"), std::string::npos) << fit.output;
  EXPECT_NE(fit.output.find("best model:"), std::string::npos) << fit.output;
  EXPECT_NE(fit.output.find("score_test"), std::string::npos) << fit.output;

  CommandResult predict =
      Tabforge("predict -m " + dir + "/model --data " + data + " -o " + dir + "/labels.csv");
  ASSERT_EQ(predict.status, 0) << predict.output;
  const std::string labels = ReadText(dir + "/labels.csv");
  EXPECT_EQ(labels.rfind("survived\n", 0), 0u) << labels.substr(0, 40);
  EXPECT_EQ(CountLines(labels), 892);  // header + 891 rows, in the input's order
  CommandResult proba =
      Tabforge("predict -m " + dir + "/model --data " + data + " --proba -o " + dir + "/proba.csv");
  ASSERT_EQ(proba.status, 0) << proba.output;
  EXPECT_EQ(ReadText(dir + "/proba.csv").rfind("0,1\n", 0), 0u);

  CommandResult evaluate = Tabforge("evaluate -m " + dir + "/model --data " + data + " --json");
  ASSERT_EQ(evaluate.status, 0) << evaluate.output;
  const nlohmann::json metrics = nlohmann::json::parse(evaluate.output);
  EXPECT_GT(metrics.at("accuracy").get<double>(), 0.8);
  EXPECT_GT(metrics.at("roc_auc").get<double>(), 0.85);

  CommandResult board = Tabforge("leaderboard -m " + dir + "/model --data " + data + " --json");
  ASSERT_EQ(board.status, 0) << board.output;
  const nlohmann::json rows = nlohmann::json::parse(board.output);
  ASSERT_GE(rows.size(), 2u);
  EXPECT_TRUE(rows[0].contains("score_val"));
  // --model-name scores (and predicts with) one model of the leaderboard: its accuracy is the
  // leaderboard's score_test for it.
  for (const nlohmann::json& row : rows) {
    const std::string name = row.at("model").get<std::string>();
    CommandResult one =
        Tabforge("evaluate -m " + dir + "/model --data " + data + " --json --model-name " + name);
    ASSERT_EQ(one.status, 0) << one.output;
    EXPECT_NEAR(nlohmann::json::parse(one.output).at("accuracy").get<double>(),
                row.at("score_test").get<double>(), 1e-9)
        << name;
  }
  CommandResult unknown = Tabforge("predict -m " + dir + "/model --data " + data + " -o " + dir +
                                   "/x.csv --model-name NoSuchModel");
  EXPECT_EQ(unknown.status, 1) << unknown.output;
  EXPECT_NE(unknown.output.find("the models are:"), std::string::npos) << unknown.output;
  CommandResult summary = Tabforge("summary -m " + dir + "/model");
  ASSERT_EQ(summary.status, 0) << summary.output;
  EXPECT_NE(summary.output.find("best model:"), std::string::npos) << summary.output;

  // Errors name the remedy and exit with status 1 (input) or 2 (files).
  CommandResult missing = Tabforge("evaluate -m " + dir + "/nothing --data " + data);
  EXPECT_EQ(missing.status, 2) << missing.output;
  EXPECT_NE(missing.output.find("tabforge model directory"), std::string::npos) << missing.output;
  CommandResult stacked = Tabforge("fit --train " + data +
                                   " --label survived --num-stack-levels 1 -o " + dir + "/stacked");
  EXPECT_EQ(stacked.status, 1) << stacked.output;
  EXPECT_NE(stacked.output.find("num_bag_folds"), std::string::npos) << stacked.output;
}

// Repeated bagging goes set by set: every model of the level has its first set before any gets
// its second (so a time limit cuts repeats, not models), and each further set is one line.
TEST(Cli, BagSetsComeAfterEveryModelsFirstSet) {
  TFG_REQUIRE_DATASETS();
  const std::string data = tabforge::testing::DatasetPath("titanic.csv.gz");
  const std::string dir = tabforge::testing::TempDir("cli_bag_sets");
  CommandResult fit =
      Tabforge("fit --train " + data + " --label survived --num-bag-folds 3 --num-bag-sets 2 " +
               "--hyperparameters '{\"GBM\": [{\"num_iterations\": 20}, {\"num_iterations\": 30, " +
               "\"ag_args\": {\"name_suffix\": \"B\"}}]}' -o " + dir + "/model");
  ASSERT_EQ(fit.status, 0) << fit.output;
  const std::size_t second_first = fit.output.find("GBMB_BAG_L1: val");
  const std::size_t first_repeat = fit.output.find("GBM_BAG_L1: bag set 2");
  ASSERT_NE(second_first, std::string::npos) << fit.output;
  ASSERT_NE(first_repeat, std::string::npos) << fit.output;
  EXPECT_LT(second_first, first_repeat) << fit.output;
  EXPECT_NE(fit.output.find("GBMB_BAG_L1: bag set 2"), std::string::npos) << fit.output;
}

namespace {

// `tabforge doctor` with an environment pretended through TABFORGE_INJECT_* (read only by the
// discovery layer): its report, JSON and exit status.
TEST(Cli, DoctorExitStatusFollowsTheEnvironment) {
  const std::string healthy =
      "TABFORGE_INJECT_RUNTIME=13.0 TABFORGE_INJECT_ARCHITECTURES='75;80;86;89;90' "
      "TABFORGE_INJECT_DRIVER=13.0 TABFORGE_INJECT_DEVICES='NVIDIA H200,9.0,150,140' ";
  CommandResult ok = TabforgeWith(healthy, "doctor");
  EXPECT_EQ(ok.status, 0) << ok.output;
  EXPECT_NE(ok.output.find("GPU training will work: GPU 0 (NVIDIA H200)"), std::string::npos)
      << ok.output;
  CommandResult no_driver = TabforgeWith("TABFORGE_INJECT_DRIVER=missing ", "doctor --json");
  EXPECT_EQ(no_driver.status, 1) << no_driver.output;
  const nlohmann::json report = nlohmann::json::parse(no_driver.output);
  EXPECT_EQ(report["exit_status"], 1);
  EXPECT_EQ(report["checks"][1]["id"], "driver");
  EXPECT_EQ(report["checks"][1]["status"], "error");
  CommandResult old = TabforgeWith(healthy + "TABFORGE_INJECT_DRIVER=12.2 ", "doctor");
  EXPECT_EQ(old.status, 2) << old.output;
  EXPECT_NE(old.output.find("remedy: update the NVIDIA driver to at least 580.65.06"),
            std::string::npos)
      << old.output;
  CommandResult table = Tabforge("doctor --markdown");
  EXPECT_EQ(table.status, 0);
  EXPECT_NE(table.output.find("| `memory` |"), std::string::npos) << table.output;
}

// On a machine without a usable GPU, `fit --gpus 1` trains on the CPU and says why in one line.
TEST(Cli, FitWithGpusFallsBackToTheCpuWithOneLine) {
  TFG_REQUIRE_DATASETS();
  const std::string data = tabforge::testing::DatasetPath("titanic.csv.gz");
  const std::string dir = tabforge::testing::TempDir("cli_gpus");
  CommandResult fit = TabforgeWith(
      "TABFORGE_INJECT_DRIVER=missing ",
      "fit --train " + data + " --label survived --time-limit 20 --gpus 1 -o " + dir + "/model");
  ASSERT_EQ(fit.status, 0) << fit.output;
  // The injected driver answer reaches only a CUDA build; a CPU-only build gives its own reason.
  const std::string line = TABFORGE_TEST_CUDA_BUILD
                               ? "GPU: --gpus 1 asked, but no usable GPU (no NVIDIA driver"
                               : "GPU: --gpus 1 asked, but no usable GPU (this tabforge was built "
                                 "without CUDA support)";
  const std::size_t at = fit.output.find(line);
  ASSERT_NE(at, std::string::npos) << fit.output;
  EXPECT_EQ(fit.output.find(line, at + 1), std::string::npos) << "said more than once";
  EXPECT_NE(fit.output.find("training on the CPU"), std::string::npos);
  EXPECT_NE(fit.output.find("best model:"), std::string::npos) << fit.output;
  CommandResult bad =
      Tabforge("fit --train " + data + " --label survived --gpus many -o " + dir + "/other");
  EXPECT_EQ(bad.status, 1) << bad.output;
  EXPECT_NE(bad.output.find("--gpus 'many' is not valid"), std::string::npos) << bad.output;
  CommandResult fraction = Tabforge(
      "fit --train " + data + " --label survived --gpu-memory-fraction 1.5 -o " + dir + "/third");
  EXPECT_EQ(fraction.status, 1) << fraction.output;
  EXPECT_NE(fraction.output.find("gpu_memory_fraction 1.5 is out of range"), std::string::npos)
      << fraction.output;
}

}  // namespace

namespace {

// With a GPU granted, each model's line says where it trained, and why when not on the GPU.
// Discovery is told of a healthy GPU; the GBM then asks the CUDA runtime itself, so on a machine
// without one it trains on the CPU and its line gives the runtime's reason.
TEST(Cli, FitLinesSayWhereEachModelTrained) {
  TFG_REQUIRE_DATASETS();
  const std::string data = tabforge::testing::DatasetPath("titanic.csv.gz");
  const std::string dir = tabforge::testing::TempDir("cli_device_lines");
  CommandResult fit = TabforgeWith(
      "TABFORGE_INJECT_RUNTIME=13.0 TABFORGE_INJECT_ARCHITECTURES='75;80;86;89;90' "
      "TABFORGE_INJECT_DRIVER=13.0 TABFORGE_INJECT_DEVICES='NVIDIA H200,9.0,150,140' ",
      "fit --train " + data + " --label survived --time-limit 20 --gpus 1 -o " + dir + "/model");
  ASSERT_EQ(fit.status, 0) << fit.output;
  EXPECT_NE(fit.output.find("GPU: 0 (NVIDIA H200) for the models that use one"), std::string::npos)
      << fit.output;
  const std::size_t line = fit.output.find("\nGBM: val accuracy");
  ASSERT_NE(line, std::string::npos) << fit.output;
  const std::string text = fit.output.substr(line + 1, fit.output.find('\n', line + 1) - line - 1);
  EXPECT_TRUE(text.find("| cuda:0 ") != std::string::npos ||
              text.find("| cpu (CUDA not used: ") != std::string::npos)
      << text;
}

}  // namespace
