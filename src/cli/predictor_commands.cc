// `tabforge fit | predict | evaluate | leaderboard | summary`: the predictor's workflow on
// files, as AutoGluon's TabularPredictor offers it in Python.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "cli/commands.h"
#include "core/error.h"
#include "core/serialize.h"
#include "core/strings.h"
#include "core/timer.h"
#include "data/csv_reader.h"
#include "data/table.h"
#include "device/cuda_device.h"
#include "tabforge/predictor.h"

namespace tabforge::cli {
namespace {

data::Table ReadTable(const std::string& source, int threads) {
  data::CsvOptions options;
  options.num_threads = threads;
  return data::ReadCsv(source, options);
}

// The -q / -v flags on top of the default verbosity 2.
int Verbosity(int quiet, int verbose) { return std::max(0, 2 - quiet + verbose); }

std::string Score(const std::optional<double>& value) {
  return value ? fmt::format("{:.6f}", *value) : std::string("");
}

std::string Seconds(const std::optional<double>& value) {
  return value ? fmt::format("{:.3f}", *value) : std::string("");
}

void PrintLeaderboard(const std::vector<LeaderboardRow>& rows, bool with_test, bool json) {
  if (json) {
    nlohmann::json out = nlohmann::json::array();
    for (const LeaderboardRow& row : rows) {
      nlohmann::json item{{"model", row.model},
                          {"eval_metric", row.eval_metric},
                          {"pred_time_val", row.pred_time_val},
                          {"fit_time", row.fit_time},
                          {"stack_level", row.stack_level},
                          {"can_infer", row.can_infer},
                          {"fit_order", row.fit_order}};
      item["score_val"] = row.score_val ? nlohmann::json(*row.score_val) : nlohmann::json();
      if (with_test) {
        item["score_test"] = row.score_test ? nlohmann::json(*row.score_test) : nlohmann::json();
        item["pred_time_test"] =
            row.pred_time_test ? nlohmann::json(*row.pred_time_test) : nlohmann::json();
      }
      if (!row.error.empty()) item["error"] = row.error;
      out.push_back(std::move(item));
    }
    fmt::print("{}\n", out.dump(2));
    return;
  }
  std::size_t width = 5;
  for (const LeaderboardRow& row : rows) width = std::max(width, row.model.size());
  std::string header = fmt::format("{:<{}}", "model", width);
  if (with_test) header += fmt::format("  {:>10}", "score_test");
  header += fmt::format("  {:>10}  {:<24}", "score_val", "eval_metric");
  if (with_test) header += fmt::format("  {:>14}", "pred_time_test");
  header += fmt::format("  {:>13}  {:>9}  {:>11}  {:>9}  {:>9}", "pred_time_val", "fit_time",
                        "stack_level", "can_infer", "fit_order");
  fmt::print("{}\n", header);
  for (const LeaderboardRow& row : rows) {
    std::string line = fmt::format("{:<{}}", row.model, width);
    if (with_test) line += fmt::format("  {:>10}", Score(row.score_test));
    line += fmt::format("  {:>10}  {:<24}", Score(row.score_val), row.eval_metric);
    if (with_test) line += fmt::format("  {:>14}", Seconds(row.pred_time_test));
    line +=
        fmt::format("  {:>13.3f}  {:>9.3f}  {:>11}  {:>9}  {:>9}", row.pred_time_val, row.fit_time,
                    row.stack_level, row.can_infer ? "True" : "False", row.fit_order);
    if (!row.error.empty()) line += "  " + row.error;
    fmt::print("{}\n", line);
  }
}

void PrintEvaluation(const std::vector<std::pair<std::string, double>>& metrics, bool json) {
  if (json) {
    nlohmann::json out = nlohmann::json::object();
    for (const auto& [name, value] : metrics) out[name] = value;
    fmt::print("{}\n", out.dump(2));
    return;
  }
  for (const auto& [name, value] : metrics) fmt::print("{:<26} {:.6f}\n", name, value);
}

// A CSV field, quoted when it holds a delimiter, quote or line break.
std::string CsvField(const std::string& text) {
  if (text.find_first_of(",\"\r\n") == std::string::npos) return text;
  std::string out = "\"";
  for (char c : text) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

struct FitArgs {
  std::string train, label, tuning, test, presets, eval_metric, problem_type, hyperparameters,
      output;
  double time_limit = 0;
  double holdout_frac = -1;
  int num_bag_folds = -1, num_bag_sets = -1, num_stack_levels = -1, cpus = 0;
  std::string gpus = "auto";
  std::string dynamic_stacking = "auto";
  double gpu_memory_fraction = 0.9;
  bool refit_full = false;
  std::uint64_t seed = 0;
  int quiet = 0, verbose = 0;
};

void RunFit(const FitArgs& args) {
  Stopwatch watch;
  PredictorOptions options;
  options.problem_type = args.problem_type;
  options.eval_metric = args.eval_metric;
  options.path = args.output;
  options.verbosity = Verbosity(args.quiet, args.verbose);
  FitOptions fit;
  fit.time_limit = args.time_limit;
  fit.presets = args.presets;
  fit.hyperparameters = args.hyperparameters;
  fit.num_bag_folds = args.num_bag_folds;
  fit.num_bag_sets = args.num_bag_sets;
  fit.num_stack_levels = args.num_stack_levels;
  fit.holdout_frac = args.holdout_frac;
  if (args.refit_full) fit.refit_full = 1;
  fit.dynamic_stacking = args.dynamic_stacking == "auto"   ? -1
                         : args.dynamic_stacking == "true" ? 1
                                                           : 0;
  fit.num_cpus = args.cpus;
  if (args.gpus == "auto") {
    fit.num_gpus = -1;
  } else {
    char* end = nullptr;
    const long gpus = std::strtol(args.gpus.c_str(), &end, 10);
    if (args.gpus.empty() || *end != '\0' || gpus < 0 || gpus > 64) {
      throw InvalidInput(fmt::format(
          "--gpus '{}' is not valid: give auto (use a GPU when one is usable), 0 (CPU only) or "
          "the number of GPUs",
          args.gpus));
    }
    fit.num_gpus = static_cast<int>(gpus);
  }
  fit.gpu_memory_fraction = args.gpu_memory_fraction;
  fit.seed = args.seed;
  // A fit that may use a GPU starts the CUDA runtime while the data is read.
  std::optional<device::CudaWarmUp> warm_up;
  if (fit.num_gpus != 0) warm_up.emplace(0);
  const data::Table train = ReadTable(args.train, args.cpus);
  data::Table tuning;
  if (!args.tuning.empty()) {
    tuning = ReadTable(args.tuning, args.cpus);
    fit.tuning_data = &tuning;
  }
  // The test file is read before training so that a bad path fails fast.
  data::Table test;
  if (!args.test.empty()) test = ReadTable(args.test, args.cpus);
  if (warm_up) warm_up->Wait();
  if (fit.time_limit > 0) fit.time_limit = std::max(fit.time_limit - watch.Seconds(), 1e-3);
  TabularPredictor predictor(args.label, options);
  predictor.fit(train, fit);
  predictor.save(args.output);
  if (options.verbosity >= 1) {
    fmt::print("\n");
    PrintLeaderboard(predictor.leaderboard(args.test.empty() ? nullptr : &test), !args.test.empty(),
                     false);
    fmt::print("\nbest model: {}; saved to {}\n", predictor.best_model(), args.output);
    if (!args.test.empty()) {
      fmt::print("\ntest metrics of {}:\n", predictor.best_model());
      PrintEvaluation(predictor.evaluate(test), false);
    }
  }
}

}  // namespace

void AddPredictorCommands(CLI::App& app) {
  {
    auto args = std::make_shared<FitArgs>();
    CLI::App* command = app.add_subcommand(
        "fit", "Train a portfolio of models on a table and save the best ensemble");
    command->add_option("--train", args->train, "Training table: file path or http(s) URL")
        ->required();
    command->add_option("--label", args->label, "Name of the label column")->required();
    command->add_option("--tuning", args->tuning, "Validation table (holdout fits only)");
    command->add_option("--test", args->test, "Test table: scored after the fit");
    command->add_option("--time-limit", args->time_limit,
                        "Seconds for the whole fit, reading the data included (0: no limit)");
    command->add_option("--presets", args->presets,
                        "medium_quality (default), good_quality, high_quality, best_quality");
    command->add_option("--eval-metric", args->eval_metric,
                        "Metric to optimise (default: accuracy, or root_mean_squared_error)");
    command->add_option("--problem-type", args->problem_type,
                        "binary, multiclass or regression (default: inferred)");
    command->add_option("--hyperparameters", args->hyperparameters,
                        "Portfolio: JSON in AutoGluon's shape, a file holding it, or a set name");
    command->add_option("--num-bag-folds", args->num_bag_folds, "k-fold bagging (0: holdout)");
    command->add_option("--num-bag-sets", args->num_bag_sets, "Repeats of the k-fold bagging");
    command->add_option("--num-stack-levels", args->num_stack_levels, "Stack levels above L1");
    command
        ->add_option("--dynamic-stacking", args->dynamic_stacking,
                     "Check on held-out rows that stacking helps before a stacked fit: auto "
                     "(as the preset says), true, false")
        ->check(CLI::IsMember({"auto", "true", "false"}));
    command->add_option("--holdout-frac", args->holdout_frac,
                        "Holdout fraction (default: by rows)");
    command->add_flag("--refit-full", args->refit_full,
                      "Retrain the best model's members on all rows");
    command->add_option("--cpus", args->cpus, "Threads (default: all)");
    command->add_option("--gpu-memory-fraction", args->gpu_memory_fraction,
                        "Most of a GPU's free memory one model may take (default 0.9)");
    command->add_option("--gpus", args->gpus,
                        "GPUs to use: auto (default: one when usable and worthwhile), 0, or N");
    command->add_option("--seed", args->seed, "Seed of every random choice");
    command->add_option("-o,--output", args->output, "Model directory to write")->required();
    command->add_flag("-q,--quiet", args->quiet, "Less output (repeat for none)");
    command->add_flag("-v,--verbose", args->verbose, "More output");
    command->callback([args] { RunFit(*args); });
  }
  {
    struct Args {
      std::string model, data, output, model_name;
      bool proba = false;
      int cpus = 0;
    };
    auto args = std::make_shared<Args>();
    CLI::App* command =
        app.add_subcommand("predict", "Predict a table with a saved model, keeping its row order");
    command->add_option("-m,--model", args->model, "Model directory (from fit)")->required();
    command->add_option("--data", args->data, "Table to predict: file path or URL")->required();
    command->add_flag("--proba", args->proba, "Write class probabilities, one column per class");
    command->add_option("-o,--output", args->output, "CSV to write")->required();
    command->add_option("--cpus", args->cpus, "Threads (default: all)");
    command->add_option("--model-name", args->model_name,
                        "Predict with this model of the leaderboard (default: the best)");
    command->callback([args] {
      const TabularPredictor predictor = TabularPredictor::load(args->model);
      const data::Table table = ReadTable(args->data, args->cpus);
      std::string out;
      if (args->proba) {
        const ProbabilityTable proba = predictor.predict_proba(table, args->model_name);
        std::vector<std::string> header;
        for (const std::string& name : proba.classes) header.push_back(CsvField(name));
        out = Join(header, ",") + "\n";
        const std::size_t classes = proba.classes.size();
        for (std::size_t row = 0; row * classes < proba.values.size(); ++row) {
          for (std::size_t k = 0; k < classes; ++k) {
            fmt::format_to(std::back_inserter(out), "{}{}", k ? "," : "",
                           proba.values[row * classes + k]);
          }
          out += '\n';
        }
      } else {
        const PredictionColumn column = predictor.predict(table, args->model_name);
        out = CsvField(predictor.label()) + "\n";
        for (const std::string& label : column.labels) out += CsvField(label) + "\n";
        for (double value : column.values) fmt::format_to(std::back_inserter(out), "{}\n", value);
      }
      WriteFileAtomically(args->output, out);
    });
  }
  {
    struct Args {
      std::string model, data, model_name;
      bool json = false;
    };
    auto args = std::make_shared<Args>();
    CLI::App* command = app.add_subcommand("evaluate", "Score a saved model on labelled data");
    command->add_option("-m,--model", args->model, "Model directory (from fit)")->required();
    command->add_option("--data", args->data, "Labelled table: file path or URL")->required();
    command->add_flag("--json", args->json, "Print the metrics as JSON");
    command->add_option("--model-name", args->model_name,
                        "Score this model of the leaderboard (default: the best)");
    command->callback([args] {
      const TabularPredictor predictor = TabularPredictor::load(args->model);
      const data::Table table = ReadTable(args->data, 0);
      PrintEvaluation(predictor.evaluate(table, args->model_name), args->json);
    });
  }
  {
    struct Args {
      std::string model, data;
      bool json = false;
    };
    auto args = std::make_shared<Args>();
    CLI::App* command =
        app.add_subcommand("leaderboard", "Every model of a fit: validation (and test) scores");
    command->add_option("-m,--model", args->model, "Model directory (from fit)")->required();
    command->add_option("--data", args->data, "Labelled table for test scores");
    command->add_flag("--json", args->json, "Print the leaderboard as JSON");
    command->callback([args] {
      const TabularPredictor predictor = TabularPredictor::load(args->model);
      data::Table table;
      if (!args->data.empty()) table = ReadTable(args->data, 0);
      PrintLeaderboard(predictor.leaderboard(args->data.empty() ? nullptr : &table),
                       !args->data.empty(), args->json);
    });
  }
  {
    auto model = std::make_shared<std::string>();
    CLI::App* command = app.add_subcommand("summary", "What a fit did: models, ensemble, time");
    command->add_option("-m,--model", *model, "Model directory (from fit)")->required();
    command->callback([model] { fmt::print("{}", TabularPredictor::load(*model).fit_summary()); });
  }
}

}  // namespace tabforge::cli
