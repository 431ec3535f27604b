// `tabforge inspect`: reads a table and reports what tabforge infers about it.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <optional>

#include "cli/commands.h"
#include "core/error.h"
#include "core/strings.h"
#include "core/timer.h"
#include "data/column_stats.h"
#include "data/csv_reader.h"
#include "data/problem_type.h"
#include "features/pipeline.h"

namespace tabforge::cli {
namespace {

struct InspectOptions {
  std::string source;
  std::string label;
  std::string problem_type;
  std::string delimiter;
  std::vector<std::string> na_values;
  bool na_values_set = false;
  bool no_header = false;
  bool json = false;
  bool features = false;
  int threads = 0;
};

std::string Thousands(std::int64_t value) {
  std::string digits = std::to_string(value < 0 ? -value : value);
  std::string out;
  for (std::size_t index = 0; index < digits.size(); ++index) {
    if (index > 0 && (digits.size() - index) % 3 == 0) out.push_back(',');
    out.push_back(digits[index]);
  }
  return value < 0 ? "-" + out : out;
}

char ParseDelimiterOption(const std::string& text) {
  if (text.empty() || text == "auto") return 0;
  if (text == "\\t" || text == "tab") return '\t';
  if (text.size() == 1 && text != "\"" && text != "\n") return text[0];
  throw InvalidInput(
      fmt::format("--delimiter '{}' is not valid: give one character (e.g. ',' "
                  "';' '|'), 'tab' or 'auto'.",
                  text));
}

void RunInspect(const InspectOptions& options) {
  data::CsvOptions csv;
  csv.delimiter = ParseDelimiterOption(options.delimiter);
  csv.header = !options.no_header;
  csv.num_threads = options.threads;
  if (options.na_values_set) csv.na_values = options.na_values;
  std::optional<ProblemType> forced;
  if (!options.problem_type.empty()) forced = data::ParseProblemType(options.problem_type);

  data::CsvReadStats stats;
  data::Table table = data::ReadCsv(options.source, csv, &stats);
  std::vector<data::ColumnStats> column_stats = data::ComputeTableStats(table, options.threads);
  std::optional<data::LabelSummary> label;
  if (!options.label.empty()) label = data::AnalyzeLabel(table, options.label, forced);
  std::optional<features::FeaturePipeline> pipeline;
  if (options.features) {
    features::PipelineOptions pipeline_options;
    pipeline_options.num_threads = options.threads;
    pipeline = features::FeaturePipeline::Fit(table, options.label, pipeline_options);
  }
  const double seconds = stats.load_seconds + stats.parse_seconds;
  const double megabytes = double(stats.input_bytes) / 1e6;

  if (options.json) {
    nlohmann::ordered_json out;
    out["source"] = options.source;
    out["rows"] = table.num_rows();
    out["columns"] = table.num_columns();
    out["bytes"] = stats.input_bytes;
    out["delimiter"] = std::string(1, stats.delimiter);
    out["load_seconds"] = stats.load_seconds;
    out["parse_seconds"] = stats.parse_seconds;
    out["threads"] = stats.threads;
    nlohmann::ordered_json columns = nlohmann::ordered_json::array();
    for (int index = 0; index < table.num_columns(); ++index) {
      const data::ColumnStats& column = column_stats[index];
      columns.push_back({{"name", table.column(index).name()},
                         {"type", data::ColumnTypeName(table.column(index).type())},
                         {"missing", column.missing},
                         {"missing_fraction", column.MissingFraction()},
                         {"distinct", column.distinct},
                         {"is_id", column.is_id}});
    }
    out["column_info"] = columns;
    if (label) {
      nlohmann::ordered_json info;
      info["column"] = label->label;
      info["problem_type"] = ProblemTypeName(label->problem_type);
      info["inferred"] = label->inferred;
      info["reason"] = label->reason;
      info["missing"] = label->missing;
      if (label->problem_type == ProblemType::kRegression) {
        info["min"] = label->min;
        info["max"] = label->max;
        info["mean"] = label->mean;
        info["stddev"] = label->stddev;
      } else {
        nlohmann::ordered_json classes = nlohmann::ordered_json::array();
        for (std::size_t index = 0; index < label->classes.size(); ++index) {
          classes.push_back(
              {{"class", label->classes[index]}, {"count", label->class_counts[index]}});
        }
        info["classes"] = classes;
        if (!label->positive_class.empty()) info["positive_class"] = label->positive_class;
      }
      out["label"] = info;
    }
    if (pipeline) {
      nlohmann::ordered_json decisions = nlohmann::ordered_json::array();
      for (const features::ColumnDecision& decision : pipeline->decisions()) {
        decisions.push_back({{"column", decision.column},
                             {"kept", decision.kept},
                             {"reason", decision.reason},
                             {"outputs", decision.outputs}});
      }
      out["features"] = decisions;
    }
    std::puts(out.dump(2).c_str());
    return;
  }

  fmt::print("{}: {} rows x {} columns; {:.2f} MB read in {:.3f} s ({:.0f} MB/s, {} thread{})\n",
             options.source, Thousands(table.num_rows()), table.num_columns(), megabytes, seconds,
             seconds > 0 ? megabytes / seconds : 0.0, stats.threads, stats.threads == 1 ? "" : "s");
  std::size_t name_width = 6;
  for (const std::string& name : table.ColumnNames())
    name_width = std::max(name_width, name.size());
  fmt::print("\n  {:>3}  {:<{}}  {:<11}  {:>8}  {:>9}  {}\n", "#", "column", name_width, "type",
             "missing", "distinct", "notes");
  for (int index = 0; index < table.num_columns(); ++index) {
    const data::Column& column = table.column(index);
    const data::ColumnStats& column_info = column_stats[index];
    std::string notes;
    if (column_info.is_id) notes = "ID (every value unique)";
    if (label && column.name() == label->label) notes = notes.empty() ? "label" : "label; " + notes;
    if (column_info.distinct == 1) notes = notes.empty() ? "constant" : notes + "; constant";
    fmt::print("  {:>3}  {:<{}}  {:<11}  {:>7.1f}%  {:>9}  {}\n", index + 1, column.name(),
               name_width, data::ColumnTypeName(column.type()), 100 * column_info.MissingFraction(),
               Thousands(column_info.distinct), notes);
  }
  if (pipeline) {
    fmt::print("\nfeatures (what the fitted feature pipeline makes of each column):\n");
    for (const features::ColumnDecision& decision : pipeline->decisions()) {
      if (!decision.kept) {
        fmt::print("  {:<{}}  dropped: {}\n", decision.column, name_width, decision.reason);
        continue;
      }
      std::string outputs = decision.outputs.size() == 1 && decision.outputs[0] == decision.column
                                ? std::string()
                                : " -> " + Join(decision.outputs, ", ");
      fmt::print("  {:<{}}  {}{}\n", decision.column, name_width, decision.reason, outputs);
    }
  }
  if (!label) return;
  fmt::print("\nlabel '{}': {} ({}{})\n", label->label, ProblemTypeName(label->problem_type),
             label->inferred ? "inferred: " : "", label->reason);
  if (label->missing > 0) {
    fmt::print("  {} rows have no label and would be dropped for training\n",
               Thousands(label->missing));
  }
  if (label->problem_type == ProblemType::kRegression) {
    fmt::print("  range {} to {}, mean {:.6g}, standard deviation {:.6g}\n", label->min, label->max,
               label->mean, label->stddev);
    return;
  }
  const std::int64_t present = label->rows - label->missing;
  constexpr std::size_t kShown = 30;
  std::string balance;
  for (std::size_t index = 0; index < label->classes.size() && index < kShown; ++index) {
    balance += fmt::format("{}{} {} ({:.1f}%)", index == 0 ? "" : ", ", label->classes[index],
                           Thousands(label->class_counts[index]),
                           100.0 * double(label->class_counts[index]) / double(present));
  }
  if (label->classes.size() > kShown) {
    balance += fmt::format(", ... ({} classes in all)", label->classes.size());
  }
  fmt::print("  classes: {}\n", balance);
  if (!label->positive_class.empty()) {
    fmt::print("  positive class: {} (the last in sorted order, as AutoGluon chooses it)\n",
               label->positive_class);
  }
}

}  // namespace

void AddInspectCommand(CLI::App& app) {
  auto options = std::make_shared<InspectOptions>();
  CLI::App* command = app.add_subcommand(
      "inspect", "Read a table (CSV/TSV, .gz, URL) and show its inferred schema and problem type");
  command->add_option("source", options->source, "File path or http(s) URL of the table")
      ->required();
  command->add_option("--label", options->label,
                      "Label column: also infer the problem type and show the class balance");
  command->add_option("--problem-type", options->problem_type,
                      "Override the inferred problem type: binary, multiclass or regression");
  command->add_option("--delimiter", options->delimiter,
                      "Field delimiter: one character, 'tab', or 'auto' (default: sniffed)");
  CLI::Option* na = command->add_option(
      "--na-values", options->na_values,
      "Comma-separated missing-value tokens, replacing the defaults (\"\", NA, N/A, NaN, nan, "
      "null, NULL, None, ?, ...)");
  na->delimiter(',')->allow_extra_args(false);
  command->add_flag("--no-header", options->no_header,
                    "The first row is data; columns are named 0, 1, ...");
  command->add_option("--threads", options->threads, "Parsing threads (default: all)")
      ->check(CLI::NonNegativeNumber);
  command->add_flag("--features", options->features,
                    "Also fit the feature pipeline and show what it makes of each column "
                    "(kept or dropped and why, output features)");
  command->add_flag("--json", options->json, "Print the report as JSON");
  command->callback([options, na] {
    options->na_values_set = na->count() > 0;
    RunInspect(*options);
  });
}

}  // namespace tabforge::cli
