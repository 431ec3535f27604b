#include "metrics/metric.h"

#include <fmt/format.h>

#include <array>
#include <cmath>
#include <string>

#include "core/error.h"
#include "metrics/metric_internal.h"

namespace tabforge::metrics {
namespace {

using internal::Averaging;
using internal::MetricInput;
using internal::PrfScore;
using internal::ScoreFn;

enum class Direction { kMinimize, kMaximize };
enum class Reads { kLabels, kProba };
enum class Classes { kAny, kBinaryOnly };
enum class Weights { kSupported, kUnsupported };

constexpr MetricInfo Classifier(std::string_view name, Direction direction, Reads reads,
                                Classes classes) {
  return MetricInfo{name,
                    direction == Direction::kMaximize,
                    reads == Reads::kProba,
                    /*for_classification=*/true,
                    classes == Classes::kBinaryOnly,
                    /*for_regression=*/false,
                    /*supports_weights=*/true};
}

constexpr MetricInfo Regressor(std::string_view name, Direction direction, Weights weights) {
  return MetricInfo{name,
                    direction == Direction::kMaximize,
                    /*needs_proba=*/false,
                    /*for_classification=*/false,
                    /*binary_only=*/false,
                    /*for_regression=*/true,
                    weights == Weights::kSupported};
}

struct MetricEntry {
  MetricInfo info;
  ScoreFn score;
  std::string_view multiclass_remedy;  // what to use instead on multiclass (binary_only metrics)
};

constexpr Direction kMax = Direction::kMaximize;
constexpr Direction kMin = Direction::kMinimize;
constexpr Reads kLabels = Reads::kLabels;
constexpr Reads kProba = Reads::kProba;
constexpr Classes kAny = Classes::kAny;
constexpr Classes kBinary = Classes::kBinaryOnly;
constexpr Weights kWeighted = Weights::kSupported;
constexpr Weights kUnweighted = Weights::kUnsupported;

template <PrfScore score, Averaging averaging>
double Prf(const MetricInput& input) {
  return internal::PrecisionRecallF1(input, score, averaging);
}

// The registry, in the order MetricNames() reports. Each entry matches the scikit-learn (or
// scipy) function named beside it, called with sample_weight where supported.
constexpr std::array kMetrics = {
    // accuracy_score
    MetricEntry{Classifier("accuracy", kMax, kLabels, kAny), internal::Accuracy, ""},
    // balanced_accuracy_score (adjusted=False)
    MetricEntry{Classifier("balanced_accuracy", kMax, kLabels, kAny), internal::BalancedAccuracy,
                ""},
    // log_loss as sklearn 1.2: clip to [1e-15, 1 - 1e-15], renormalise each row
    MetricEntry{Classifier("log_loss", kMin, kProba, kAny), internal::LogLoss, ""},
    // roc_auc_score
    MetricEntry{Classifier("roc_auc", kMax, kProba, kBinary), internal::RocAuc,
                "use roc_auc_ovr for multiclass"},
    // roc_auc_score(multi_class="ovr", average="macro")
    MetricEntry{Classifier("roc_auc_ovr", kMax, kProba, kAny), internal::RocAucOvr, ""},
    // average_precision_score
    MetricEntry{Classifier("average_precision", kMax, kProba, kBinary), internal::AveragePrecision,
                "use roc_auc_ovr or log_loss for multiclass"},
    // f1_score / precision_score / recall_score with average="binary", pos_label=1
    MetricEntry{Classifier("f1", kMax, kLabels, kBinary), Prf<PrfScore::kF1, Averaging::kBinary>,
                "use f1_macro, f1_micro or f1_weighted for multiclass"},
    MetricEntry{Classifier("precision", kMax, kLabels, kBinary),
                Prf<PrfScore::kPrecision, Averaging::kBinary>,
                "use precision_macro, precision_micro or precision_weighted for multiclass"},
    MetricEntry{Classifier("recall", kMax, kLabels, kBinary),
                Prf<PrfScore::kRecall, Averaging::kBinary>,
                "use recall_macro, recall_micro or recall_weighted for multiclass"},
    // f1_score / precision_score / recall_score with average="macro" | "micro" | "weighted"
    MetricEntry{Classifier("f1_macro", kMax, kLabels, kAny), Prf<PrfScore::kF1, Averaging::kMacro>,
                ""},
    MetricEntry{Classifier("f1_micro", kMax, kLabels, kAny), Prf<PrfScore::kF1, Averaging::kMicro>,
                ""},
    MetricEntry{Classifier("f1_weighted", kMax, kLabels, kAny),
                Prf<PrfScore::kF1, Averaging::kWeighted>, ""},
    MetricEntry{Classifier("precision_macro", kMax, kLabels, kAny),
                Prf<PrfScore::kPrecision, Averaging::kMacro>, ""},
    MetricEntry{Classifier("precision_micro", kMax, kLabels, kAny),
                Prf<PrfScore::kPrecision, Averaging::kMicro>, ""},
    MetricEntry{Classifier("precision_weighted", kMax, kLabels, kAny),
                Prf<PrfScore::kPrecision, Averaging::kWeighted>, ""},
    MetricEntry{Classifier("recall_macro", kMax, kLabels, kAny),
                Prf<PrfScore::kRecall, Averaging::kMacro>, ""},
    MetricEntry{Classifier("recall_micro", kMax, kLabels, kAny),
                Prf<PrfScore::kRecall, Averaging::kMicro>, ""},
    MetricEntry{Classifier("recall_weighted", kMax, kLabels, kAny),
                Prf<PrfScore::kRecall, Averaging::kWeighted>, ""},
    // matthews_corrcoef
    MetricEntry{Classifier("mcc", kMax, kLabels, kBinary), internal::Mcc,
                "use balanced_accuracy or f1_macro for multiclass"},
    // root_mean_squared_error, mean_squared_error, mean_absolute_error
    MetricEntry{Regressor("root_mean_squared_error", kMin, kWeighted),
                internal::RootMeanSquaredError, ""},
    MetricEntry{Regressor("mean_squared_error", kMin, kWeighted), internal::MeanSquaredError, ""},
    MetricEntry{Regressor("mean_absolute_error", kMin, kWeighted), internal::MeanAbsoluteError, ""},
    // median_absolute_error (sklearn >= 1.8 weighted median: averaged inverted CDF)
    MetricEntry{Regressor("median_absolute_error", kMin, kWeighted), internal::MedianAbsoluteError,
                ""},
    // r2_score (force_finite=True)
    MetricEntry{Regressor("r2", kMax, kWeighted), internal::R2, ""},
    // scipy.stats.pearsonr(...).statistic, scipy.stats.spearmanr(...).statistic
    MetricEntry{Regressor("pearsonr", kMax, kUnweighted), internal::PearsonR, ""},
    MetricEntry{Regressor("spearmanr", kMax, kUnweighted), internal::SpearmanR, ""},
    // mean_absolute_percentage_error
    MetricEntry{Regressor("mean_absolute_percentage_error", kMin, kWeighted),
                internal::MeanAbsolutePercentageError, ""},
    // mean_pinball_loss(alpha=params.quantile)
    MetricEntry{Regressor("pinball_loss", kMin, kWeighted), internal::PinballLoss, ""},
};

struct Alias {
  std::string_view alias;
  std::string_view canonical;
};

constexpr std::array kAliases = {
    Alias{"acc", "accuracy"},
    Alias{"nll", "log_loss"},
    Alias{"roc_auc_ovr_macro", "roc_auc_ovr"},
    Alias{"rmse", "root_mean_squared_error"},
    Alias{"mse", "mean_squared_error"},
    Alias{"mae", "mean_absolute_error"},
    Alias{"mape", "mean_absolute_percentage_error"},
    Alias{"pinball", "pinball_loss"},
};

// Probability rows may carry the rounding of a float32 softmax; anything further off is not a
// probability row.
constexpr double kRowSumTolerance = 1e-5;

// "accuracy, balanced_accuracy, ... (aliases: acc = accuracy, ...)", for error messages.
std::string ValidNames() {
  std::string joined;
  for (const MetricEntry& entry : kMetrics) {
    if (!joined.empty()) joined += ", ";
    joined += entry.info.name;
  }
  joined += " (aliases:";
  for (const Alias& alias : kAliases) {
    joined += fmt::format(" {} = {}{}", alias.alias, alias.canonical,
                          &alias == &kAliases.back() ? ")" : ",");
  }
  return joined;
}

const MetricEntry& FindEntry(std::string_view name) {
  std::string_view canonical = name;
  for (const Alias& alias : kAliases) {
    if (alias.alias == name) canonical = alias.canonical;
  }
  for (const MetricEntry& entry : kMetrics) {
    if (entry.info.name == canonical) return entry;
  }
  throw InvalidInput(
      fmt::format("unknown eval metric '{}'; valid metrics are: {}", name, ValidNames()));
}

ProblemType ProblemTypeOf(int num_classes) {
  if (num_classes == 1) return ProblemType::kRegression;
  return num_classes == 2 ? ProblemType::kBinary : ProblemType::kMulticlass;
}

void CheckProblemType(const MetricEntry& entry, int num_classes) {
  const MetricInfo& info = entry.info;
  if (num_classes < 1) {
    throw InvalidInput(fmt::format(
        "metric '{}': Predictions::num_classes is {}; set it to 1 for regression or to the "
        "number of classes (>= 2) for classification",
        info.name, num_classes));
  }
  const ProblemType type = ProblemTypeOf(num_classes);
  if (IsValidFor(info, type)) return;
  if (type == ProblemType::kRegression) {
    throw InvalidInput(fmt::format(
        "metric '{}' is a classification metric but the predictions are for regression "
        "(num_classes = 1); use a regression metric such as root_mean_squared_error, or pass "
        "class probabilities with num_classes set to the number of classes",
        info.name));
  }
  if (info.for_regression) {
    throw InvalidInput(fmt::format(
        "metric '{}' is a regression metric but the predictions are for {} classification "
        "(num_classes = {}); use a classification metric such as accuracy or log_loss",
        info.name, ProblemTypeName(type), num_classes));
  }
  throw InvalidInput(
      fmt::format("metric '{}' is defined for binary problems only but the "
                  "predictions have {} classes; {}",
                  info.name, num_classes, entry.multiclass_remedy));
}

void CheckWeights(const MetricInfo& info, std::span<const double> weights, std::size_t rows) {
  if (weights.empty()) return;
  if (!info.supports_weights) {
    throw NotSupported(fmt::format(
        "metric '{}' does not support sample weights; pass empty weights or choose a metric "
        "that supports them (e.g. r2 or root_mean_squared_error)",
        info.name));
  }
  if (weights.size() != rows) {
    throw InvalidInput(
        fmt::format("metric '{}': {} weights for {} rows; pass one weight per row "
                    "or none",
                    info.name, weights.size(), rows));
  }
  double total = 0.0;
  for (std::size_t row = 0; row < rows; ++row) {
    if (!std::isfinite(weights[row]) || weights[row] < 0.0) {
      throw InvalidInput(
          fmt::format("metric '{}': weight {} of row {} is not a finite "
                      "non-negative number",
                      info.name, weights[row], row));
    }
    total += weights[row];
  }
  if (total <= 0.0) {
    throw InvalidInput(
        fmt::format("metric '{}': the sample weights sum to 0; give at least one "
                    "row a positive weight",
                    info.name));
  }
}

void CheckClassification(const MetricInput& input) {
  const auto num_classes = static_cast<std::size_t>(input.num_classes);
  for (std::size_t row = 0; row < input.rows(); ++row) {
    const double label = input.y_true[row];
    if (!(label >= 0.0 && label < static_cast<double>(num_classes)) || label != std::floor(label)) {
      throw InvalidInput(
          fmt::format("metric '{}': y_true[{}] = {} is not a class index in "
                      "0..{}; encode labels as 0-based class indices",
                      input.name, row, label, num_classes - 1));
    }
    double row_sum = 0.0;
    for (std::size_t label_index = 0; label_index < num_classes; ++label_index) {
      const double proba = input.values[row * num_classes + label_index];
      if (!(proba >= 0.0 && proba <= 1.0)) {
        throw InvalidInput(
            fmt::format("metric '{}': probability {} (row {}, class {}) is "
                        "outside [0, 1]; pass class probabilities, not scores",
                        input.name, proba, row, label_index));
      }
      row_sum += proba;
    }
    if (std::abs(row_sum - 1.0) > kRowSumTolerance) {
      throw InvalidInput(
          fmt::format("metric '{}': the probabilities of row {} sum to {}, not "
                      "1; normalise each row over the {} classes",
                      input.name, row, row_sum, num_classes));
    }
  }
}

void CheckRegression(const MetricInput& input) {
  for (std::size_t row = 0; row < input.rows(); ++row) {
    if (!std::isfinite(input.y_true[row]) || !std::isfinite(input.values[row])) {
      throw InvalidInput(
          fmt::format("metric '{}': row {} has a non-finite target ({}) or "
                      "prediction ({}); drop or impute such rows first",
                      input.name, row, input.y_true[row], input.values[row]));
    }
  }
}

}  // namespace

const MetricInfo& GetMetric(std::string_view name) { return FindEntry(name).info; }

std::vector<std::string_view> MetricNames() {
  std::vector<std::string_view> names;
  names.reserve(kMetrics.size());
  for (const MetricEntry& entry : kMetrics) names.push_back(entry.info.name);
  return names;
}

bool IsValidFor(const MetricInfo& info, ProblemType type) {
  switch (type) {
    case ProblemType::kBinary:
      return info.for_classification;
    case ProblemType::kMulticlass:
      return info.for_classification && !info.binary_only;
    case ProblemType::kRegression:
      return info.for_regression;
  }
  return false;
}

std::string_view DefaultMetric(ProblemType type) {
  return type == ProblemType::kRegression ? "root_mean_squared_error" : "accuracy";
}

double Score(std::string_view name, std::span<const double> y_true, const Predictions& pred,
             std::span<const double> weights, const MetricParams& params) {
  const MetricEntry& entry = FindEntry(name);
  const MetricInfo& info = entry.info;
  if (y_true.empty()) {
    throw InvalidInput(
        fmt::format("metric '{}' needs at least one row; y_true is empty", info.name));
  }
  CheckProblemType(entry, pred.num_classes);
  const std::size_t rows = y_true.size();
  const std::size_t expected_values = rows * static_cast<std::size_t>(pred.num_classes);
  if (pred.values.size() != expected_values) {
    throw InvalidInput(fmt::format(
        "metric '{}': {} prediction values for {} rows and {} class(es); expected {} "
        "(row-major rows x classes for classification, one value per row for regression)",
        info.name, pred.values.size(), rows, pred.num_classes, expected_values));
  }
  CheckWeights(info, weights, rows);
  const MetricInput input{info.name, y_true, pred.values, pred.num_classes, weights, params};
  if (pred.num_classes == 1) {
    CheckRegression(input);
  } else {
    CheckClassification(input);
  }
  return entry.score(input);
}

bool IsBetter(const MetricInfo& info, double candidate, double incumbent) {
  return info.greater_is_better ? candidate > incumbent : candidate < incumbent;
}

}  // namespace tabforge::metrics
