#include "features/pipeline.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <unordered_map>

#include "core/context.h"
#include "core/error.h"
#include "core/strings.h"
#include "data/column_stats.h"
#include "data/datetime.h"
#include "data/problem_type.h"
#include "data/source.h"
#include "features/column_transform.h"

namespace tabforge::features {

using data::Column;
using data::ColumnType;

namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

// The cell as a string for columns stored as strings; other types through their CSV text,
// so a column that was categorical at fit still maps when a file happens to hold numbers only.
class StringCells {
 public:
  explicit StringCells(const Column& column) : column_(column) {}
  bool Missing(std::int64_t row) const { return column_.IsMissing(row); }
  std::string_view Get(std::int64_t row, std::string& scratch) const {
    if (column_.type() == ColumnType::kCategorical || column_.type() == ColumnType::kText) {
      return column_.dictionary()[column_.codes()[row]];
    }
    scratch = column_.CellText(row);
    return scratch;
  }

 private:
  const Column& column_;
};

// Whether a numeric ID-like column: integer-valued and either named like an identifier with
// mostly distinct values, or unique and monotonic (a row number).
bool LooksLikeNumericId(const Column& column, const data::ColumnStats& stats) {
  if (stats.missing > 0 || stats.rows < 2) return false;
  const std::vector<double>& values = column.numeric();
  for (double value : values) {
    if (value != std::floor(value)) return false;
  }
  std::string name;
  for (char c : column.name()) name.push_back(static_cast<char>(std::tolower(c)));
  auto ends_with_word = [&](std::string_view word) {
    if (!name.ends_with(word)) return false;
    if (name.size() == word.size()) return true;
    char before = name[name.size() - word.size() - 1];
    return before == '_' || before == ' ' || before == '-' || before == '.';
  };
  bool id_name = ends_with_word("id") || ends_with_word("nbr") || ends_with_word("key") ||
                 ends_with_word("uuid") || name.ends_with("_number") ||
                 (name.size() > 2 && name.ends_with("id") &&
                  std::isupper(static_cast<unsigned char>(column.name()[name.size() - 2])));
  if (id_name && double(stats.distinct) >= 0.5 * double(stats.rows)) return true;
  if (stats.distinct != stats.rows) return false;
  bool increasing = std::is_sorted(values.begin(), values.end());
  bool decreasing = std::is_sorted(values.rbegin(), values.rend());
  return increasing || decreasing;
}

// A per-row key of the label for comparing distributions (class code or value); NaN missing.
std::vector<double> LabelKeys(const Column& label) {
  std::vector<double> keys(static_cast<std::size_t>(label.size()));
  for (std::int64_t row = 0; row < label.size(); ++row) {
    if (label.IsMissing(row)) {
      keys[row] = std::nan("");
    } else if (label.type() == ColumnType::kNumeric) {
      keys[row] = label.numeric()[row];
    } else if (label.type() == ColumnType::kBoolean) {
      keys[row] = label.booleans()[row];
    } else {
      keys[row] = label.codes()[row];
    }
  }
  return keys;
}

// How much the label's distribution differs between rows where `column` is missing and the
// others (see PipelineOptions::missing_indicator_min_shift).
double LabelShift(const Column& column, const std::vector<double>& keys, bool regression) {
  if (regression) {
    double sums[2] = {0, 0}, counts[2] = {0, 0}, total = 0, total_squares = 0, n = 0;
    for (std::int64_t row = 0; row < column.size(); ++row) {
      if (std::isnan(keys[row])) continue;
      int missing = column.IsMissing(row) ? 1 : 0;
      sums[missing] += keys[row];
      counts[missing] += 1;
      total += keys[row];
      total_squares += keys[row] * keys[row];
      n += 1;
    }
    if (counts[0] == 0 || counts[1] == 0) return 0;
    double mean = total / n;
    double stddev = std::sqrt(std::max(1e-300, total_squares / n - mean * mean));
    return std::abs(sums[1] / counts[1] - sums[0] / counts[0]) / stddev;
  }
  std::map<double, double> frequency[2];
  double counts[2] = {0, 0};
  for (std::int64_t row = 0; row < column.size(); ++row) {
    if (std::isnan(keys[row])) continue;
    int missing = column.IsMissing(row) ? 1 : 0;
    frequency[missing][keys[row]] += 1;
    counts[missing] += 1;
  }
  if (counts[0] == 0 || counts[1] == 0) return 0;
  std::map<double, double> difference;
  for (int side = 0; side < 2; ++side) {
    for (const auto& [key, count] : frequency[side]) {
      difference[key] += (side == 0 ? 1 : -1) * count / counts[side];
    }
  }
  double distance = 0;
  for (const auto& [key, value] : difference) distance += std::abs(value);
  return distance / 2;
}

// A content hash of a column's cells (strings by value, not by code), for duplicate search.
std::uint64_t ContentHash(const Column& column) {
  std::uint64_t hash = 1469598103934665603ull ^ static_cast<std::uint64_t>(column.type());
  std::string scratch;
  StringCells cells(column);
  for (std::int64_t row = 0; row < column.size(); ++row) {
    std::uint64_t cell = 0;
    switch (column.type()) {
      case ColumnType::kNumeric: {
        double value = column.numeric()[row];
        if (std::isnan(value)) value = std::numeric_limits<double>::quiet_NaN();
        std::memcpy(&cell, &value, sizeof(cell));
        break;
      }
      case ColumnType::kCategorical:
      case ColumnType::kText:
        cell = column.codes()[row] < 0 ? 0 : Fnv1a(cells.Get(row, scratch)) | 1;
        break;
      case ColumnType::kDatetime:
        cell = static_cast<std::uint64_t>(column.datetimes()[row]);
        break;
      case ColumnType::kBoolean:
        cell = static_cast<std::uint64_t>(column.booleans()[row] + 2);
        break;
    }
    hash = (hash ^ cell) * 1099511628211ull;
  }
  return hash;
}

bool SameCells(const Column& a, const Column& b) {
  if (a.type() != b.type() || a.size() != b.size()) return false;
  std::string scratch_a, scratch_b;
  StringCells cells_a(a), cells_b(b);
  for (std::int64_t row = 0; row < a.size(); ++row) {
    if (a.IsMissing(row) != b.IsMissing(row)) return false;
    if (a.IsMissing(row)) continue;
    switch (a.type()) {
      case ColumnType::kNumeric:
        if (a.numeric()[row] != b.numeric()[row]) return false;
        break;
      case ColumnType::kCategorical:
      case ColumnType::kText:
        if (cells_a.Get(row, scratch_a) != cells_b.Get(row, scratch_b)) return false;
        break;
      case ColumnType::kDatetime:
        if (a.datetimes()[row] != b.datetimes()[row]) return false;
        break;
      case ColumnType::kBoolean:
        if (a.booleans()[row] != b.booleans()[row]) return false;
        break;
    }
  }
  return true;
}

// Kept categories ordered by training frequency (ties: byte order), at most max_categories,
// each seen at least min_category_count times; the other seen values go to `rare`.
std::vector<std::string> ChooseCategories(const Column& column, const PipelineOptions& options,
                                          std::vector<std::string>& rare) {
  std::vector<std::int64_t> counts(static_cast<std::size_t>(column.dictionary().size()), 0);
  for (std::int32_t code : column.codes()) {
    if (code != data::kMissingCode) ++counts[code];
  }
  std::vector<std::int32_t> order;
  std::vector<std::int32_t> folded;
  for (std::int32_t code = 0; code < column.dictionary().size(); ++code) {
    if (counts[code] >= options.min_category_count) {
      order.push_back(code);
    } else if (counts[code] > 0) {
      folded.push_back(code);
    }
  }
  std::sort(order.begin(), order.end(), [&](std::int32_t a, std::int32_t b) {
    if (counts[a] != counts[b]) return counts[a] > counts[b];
    return column.dictionary()[a] < column.dictionary()[b];
  });
  if (order.size() > static_cast<std::size_t>(options.max_categories)) {
    folded.insert(folded.end(), order.begin() + options.max_categories, order.end());
    order.resize(static_cast<std::size_t>(options.max_categories));
  }
  std::sort(folded.begin(), folded.end(), [&](std::int32_t a, std::int32_t b) {
    return column.dictionary()[a] < column.dictionary()[b];
  });
  rare.clear();
  for (std::int32_t code : folded) rare.emplace_back(column.dictionary()[code]);
  std::vector<std::string> categories;
  for (std::int32_t code : order) categories.emplace_back(column.dictionary()[code]);
  return categories;
}

bool AnyTimeOfDay(const Column& column) {
  for (std::int64_t seconds : column.datetimes()) {
    if (seconds != data::kMissingDatetime && ((seconds % 86400) + 86400) % 86400 != 0) return true;
  }
  return false;
}

std::vector<std::string> OutputNames(const ColumnTransform& transform) {
  const std::string& name = transform.column;
  switch (transform.encoding) {
    case Encoding::kNumeric:
      if (transform.missing_indicator) return {name, name + ".is_missing"};
      return {name};
    case Encoding::kBoolean:
    case Encoding::kCategorical:
      return {name};
    case Encoding::kDatetime: {
      std::vector<std::string> names = {name, name + ".year", name + ".month", name + ".day",
                                        name + ".dayofweek"};
      if (transform.has_time) names.push_back(name + ".hour");
      return names;
    }
    case Encoding::kText: {
      std::vector<std::string> names;
      if (transform.special) names = SpecialFeatureNames(name);
      if (transform.ngrams) {
        names.push_back(
            fmt::format("{} n-gram counts ({} terms)", name, transform.vectorizer.num_features()));
      }
      return names;
    }
  }
  return {};
}

std::string EncodingText(const ColumnTransform& transform) {
  switch (transform.encoding) {
    case Encoding::kNumeric:
      return transform.missing_indicator
                 ? "numeric as float32, with an is-missing indicator (missingness tells about "
                   "the label)"
                 : "numeric as float32";
    case Encoding::kBoolean:
      return "boolean as 0/1";
    case Encoding::kCategorical:
      return fmt::format(
          "categorical: {} categories by frequency, plus rare, unknown and "
          "missing codes",
          transform.categories.size());
    case Encoding::kDatetime:
      return transform.has_time ? "datetime: epoch seconds, year, month, day, weekday, hour"
                                : "datetime: epoch seconds, year, month, day, weekday";
    case Encoding::kText:
      return fmt::format("text: {}{}", transform.special ? "special features" : "",
                         transform.ngrams
                             ? fmt::format("{}{} word n-grams", transform.special ? " and " : "",
                                           transform.vectorizer.num_features())
                             : "");
  }
  return "";
}

}  // namespace

FeaturePipeline::FeaturePipeline() = default;
FeaturePipeline::~FeaturePipeline() = default;
FeaturePipeline::FeaturePipeline(FeaturePipeline&&) noexcept = default;
FeaturePipeline& FeaturePipeline::operator=(FeaturePipeline&&) noexcept = default;

FeaturePipeline FeaturePipeline::Fit(const data::Table& train, std::string_view label,
                                     const PipelineOptions& options) {
  FeaturePipeline pipeline;
  pipeline.options_ = options;
  Context context;
  context.num_threads = options.num_threads;
  const int threads = context.Threads();
  const int label_index = label.empty() ? -1 : train.ColumnIndex(label);
  std::vector<double> label_keys;
  bool regression = false;
  if (label_index >= 0) {
    const Column& label_column = train.column(label_index);
    label_keys = LabelKeys(label_column);
    regression = data::AnalyzeLabel(train, label).problem_type == ProblemType::kRegression;
  }
  std::vector<data::ColumnStats> stats = data::ComputeTableStats(train, threads);
  std::unordered_multimap<std::uint64_t, int> kept_by_hash;

  for (int index = 0; index < train.num_columns(); ++index) {
    const Column& column = train.column(index);
    const data::ColumnStats& column_stats = stats[index];
    ColumnDecision decision;
    decision.column = column.name();
    decision.input_type = column.type();
    auto drop = [&](std::string reason) {
      decision.reason = std::move(reason);
      pipeline.decisions_.push_back(decision);
    };
    if (index == label_index) {
      drop("the label");
      continue;
    }
    if (column_stats.missing == column_stats.rows) {
      drop("every value is missing");
      continue;
    }
    if (column_stats.distinct <= 1 && column_stats.missing == 0) {
      drop(fmt::format("constant (every row is '{}')", column.CellText(0)));
      continue;
    }
    if (column.type() == ColumnType::kCategorical && column_stats.is_id) {
      drop("ID-like: a different value in every row");
      continue;
    }
    if (column.type() == ColumnType::kNumeric && LooksLikeNumericId(column, column_stats)) {
      drop("ID-like: integer identifiers (mostly distinct, or a row number)");
      continue;
    }
    std::uint64_t hash = ContentHash(column);
    auto [first, last] = kept_by_hash.equal_range(hash);
    int duplicate_of = -1;
    for (auto it = first; it != last; ++it) {
      if (SameCells(column, train.column(it->second))) duplicate_of = it->second;
    }
    if (duplicate_of >= 0) {
      drop(fmt::format("duplicate of column '{}'", train.column(duplicate_of).name()));
      continue;
    }
    kept_by_hash.emplace(hash, index);

    auto transform = std::make_unique<ColumnTransform>();
    transform->column = column.name();
    transform->input_type = column.type();
    switch (column.type()) {
      case ColumnType::kNumeric:
        transform->encoding = Encoding::kNumeric;
        transform->missing_indicator =
            label_index >= 0 && column_stats.missing >= options.missing_indicator_min_rows &&
            LabelShift(column, label_keys, regression) >= options.missing_indicator_min_shift;
        break;
      case ColumnType::kBoolean:
        transform->encoding = Encoding::kBoolean;
        break;
      case ColumnType::kDatetime:
        transform->encoding = Encoding::kDatetime;
        transform->has_time = AnyTimeOfDay(column);
        break;
      case ColumnType::kCategorical:
        transform->encoding = Encoding::kCategorical;
        transform->categories = ChooseCategories(column, options, transform->rare);
        transform->BuildLookup();
        break;
      case ColumnType::kText:
        transform->encoding = Encoding::kText;
        transform->special = options.text_special_features;
        if (options.text_ngrams) {
          transform->vectorizer.Fit(column, options.ngram, threads);
          transform->ngrams = transform->vectorizer.num_features() > 0;
        }
        if (!transform->special && !transform->ngrams) {
          drop("text with no features enabled (or no n-gram frequent enough)");
          continue;
        }
        break;
    }
    decision.kept = true;
    decision.reason = EncodingText(*transform);
    decision.outputs = OutputNames(*transform);
    pipeline.decisions_.push_back(std::move(decision));
    pipeline.transforms_.push_back(std::move(transform));
  }
  return pipeline;
}

namespace {

// Where one transform writes: its first numeric and categorical output feature.
struct Slot {
  int numeric = 0;
  int categorical = 0;
};

std::string ExampleValue(const Column& column) {
  for (std::int64_t row = 0; row < column.size(); ++row) {
    if (!column.IsMissing(row)) return Printable(column.CellText(row));
  }
  return "";
}

[[noreturn]] void ThrowTypeChange(const ColumnTransform& transform, const Column& column) {
  throw InvalidInput(fmt::format(
      "column '{}' was {} in the training data, but here holds {} values such as '{}'. Give "
      "this column the same kind of values as at training (check for a shifted or renamed "
      "column, or a different missing-value marker).",
      transform.column, data::ColumnTypeName(transform.input_type),
      data::ColumnTypeName(column.type()), ExampleValue(column)));
}

void CheckInputType(const ColumnTransform& transform, const Column& column) {
  switch (transform.encoding) {
    case Encoding::kNumeric:
      if (column.type() != ColumnType::kNumeric && column.type() != ColumnType::kBoolean) {
        ThrowTypeChange(transform, column);
      }
      break;
    case Encoding::kBoolean:
      if (column.type() == ColumnType::kBoolean) break;
      if (column.type() == ColumnType::kNumeric) {
        for (double value : column.numeric()) {
          if (!std::isnan(value) && value != 0 && value != 1) ThrowTypeChange(transform, column);
        }
        break;
      }
      ThrowTypeChange(transform, column);
    case Encoding::kDatetime:
      if (column.type() != ColumnType::kDatetime) ThrowTypeChange(transform, column);
      break;
    case Encoding::kCategorical:
    case Encoding::kText:
      break;
  }
}

float NumericCell(const Column& column, std::int64_t row) {
  if (column.type() == ColumnType::kBoolean) {
    std::int8_t flag = column.booleans()[row];
    return flag == data::kMissingBool ? kNaN : static_cast<float>(flag);
  }
  return static_cast<float>(column.numeric()[row]);
}

// A string column holding `column`'s cells, for text transforms of non-string input.
Column AsStringColumn(const Column& column) {
  Column strings(column.name(), ColumnType::kCategorical);
  strings.codes().resize(static_cast<std::size_t>(column.size()));
  for (std::int64_t row = 0; row < column.size(); ++row) {
    strings.codes()[row] = column.IsMissing(row)
                               ? data::kMissingCode
                               : strings.dictionary().Insert(column.CellText(row));
  }
  return strings;
}

// Fills rows [begin, end) of one transform's dense outputs.
void FillDense(const ColumnTransform& transform, const Column& column,
               const std::vector<std::int32_t>& code_map, std::int64_t begin, std::int64_t end,
               std::int64_t rows, float* numeric, std::int32_t* categorical) {
  switch (transform.encoding) {
    case Encoding::kNumeric:
    case Encoding::kBoolean:
      for (std::int64_t row = begin; row < end; ++row) {
        float value = NumericCell(column, row);
        numeric[row] = value;
        if (transform.missing_indicator) numeric[rows + row] = std::isnan(value) ? 1.0f : 0.0f;
      }
      break;
    case Encoding::kCategorical: {
      std::string scratch;
      StringCells cells(column);
      const bool by_code =
          column.type() == ColumnType::kCategorical || column.type() == ColumnType::kText;
      for (std::int64_t row = begin; row < end; ++row) {
        if (column.IsMissing(row)) {
          categorical[row] = transform.MissingCode();
        } else if (by_code) {
          categorical[row] = code_map[column.codes()[row]];
        } else {
          categorical[row] = transform.CodeOf(cells.Get(row, scratch));
        }
      }
      break;
    }
    case Encoding::kDatetime:
      for (std::int64_t row = begin; row < end; ++row) {
        std::int64_t seconds = column.datetimes()[row];
        const int parts = transform.has_time ? 6 : 5;
        if (seconds == data::kMissingDatetime) {
          for (int part = 0; part < parts; ++part) numeric[part * rows + row] = kNaN;
          continue;
        }
        data::CivilTime civil = data::ToCivil(seconds);
        numeric[row] = static_cast<float>(seconds);
        numeric[rows + row] = static_cast<float>(civil.year);
        numeric[2 * rows + row] = static_cast<float>(civil.month);
        numeric[3 * rows + row] = static_cast<float>(civil.day);
        numeric[4 * rows + row] = static_cast<float>(civil.weekday);
        if (transform.has_time) numeric[5 * rows + row] = static_cast<float>(civil.hour);
      }
      break;
    case Encoding::kText:
      break;
  }
}

// Appends the columns of `right` to `left`, row by row.
SparseCounts ConcatenateColumns(SparseCounts left, const SparseCounts& right) {
  if (left.info.empty()) return right;
  SparseCounts out;
  out.num_columns = left.num_columns + right.num_columns;
  out.info = std::move(left.info);
  out.info.insert(out.info.end(), right.info.begin(), right.info.end());
  const std::size_t rows = left.row_offsets.size() - 1;
  out.columns.reserve(left.columns.size() + right.columns.size());
  out.counts.reserve(out.columns.capacity());
  for (std::size_t row = 0; row < rows; ++row) {
    for (std::int64_t at = left.row_offsets[row]; at < left.row_offsets[row + 1]; ++at) {
      out.columns.push_back(left.columns[at]);
      out.counts.push_back(left.counts[at]);
    }
    for (std::int64_t at = right.row_offsets[row]; at < right.row_offsets[row + 1]; ++at) {
      out.columns.push_back(right.columns[at] + static_cast<std::int32_t>(left.num_columns));
      out.counts.push_back(right.counts[at]);
    }
    out.row_offsets.push_back(static_cast<std::int64_t>(out.columns.size()));
  }
  return out;
}

}  // namespace

FeatureMatrix FeaturePipeline::Transform(const data::Table& table, int threads) const {
  Context context;
  context.num_threads = threads;
  threads = context.Threads();
  std::vector<std::string> missing;
  std::vector<const Column*> inputs;
  for (const auto& transform : transforms_) {
    int index = table.FindColumn(transform->column);
    if (index < 0) {
      missing.push_back("'" + transform->column + "'");
      inputs.push_back(nullptr);
      continue;
    }
    inputs.push_back(&table.column(index));
  }
  if (!missing.empty()) {
    throw InvalidInput(fmt::format(
        "the data lacks column{} {} that the model was trained with; add {} (values may be "
        "missing, but the column must be there).",
        missing.size() == 1 ? "" : "s", Join(missing, ", "), missing.size() == 1 ? "it" : "them"));
  }
  const std::int64_t rows = table.num_rows();
  FeatureMatrix matrix;
  matrix.num_rows = rows;
  matrix.ngrams.row_offsets.assign(static_cast<std::size_t>(rows) + 1, 0);
  std::vector<Slot> slots(transforms_.size());
  std::vector<std::vector<std::int32_t>> code_maps(transforms_.size());
  for (std::size_t index = 0; index < transforms_.size(); ++index) {
    const ColumnTransform& transform = *transforms_[index];
    const Column& column = *inputs[index];
    CheckInputType(transform, column);
    slots[index] = {matrix.num_numeric(), matrix.num_categorical()};
    std::vector<std::string> names = OutputNames(transform);
    if (transform.encoding == Encoding::kCategorical) {
      matrix.categorical_info.push_back(
          {names[0], transform.column, transform.Cardinality(), transform.sorted_rank});
      if (column.type() == ColumnType::kCategorical || column.type() == ColumnType::kText) {
        // Map each distinct input string once; rows then only gather.
        std::vector<std::int32_t>& map = code_maps[index];
        map.resize(static_cast<std::size_t>(column.dictionary().size()));
        for (std::int32_t code = 0; code < column.dictionary().size(); ++code) {
          map[code] = transform.CodeOf(column.dictionary()[code]);
        }
      }
      continue;
    }
    if (transform.encoding == Encoding::kText) {
      if (transform.special) {
        for (const std::string& name : SpecialFeatureNames(transform.column)) {
          matrix.numeric_info.push_back({name, transform.column, 0, {}});
        }
      }
      continue;
    }
    for (const std::string& name : names) {
      matrix.numeric_info.push_back({name, transform.column, 0, {}});
    }
  }
  matrix.numeric.resize(static_cast<std::size_t>(rows) * matrix.num_numeric());
  matrix.categorical.resize(static_cast<std::size_t>(rows) * matrix.num_categorical());

  // Dense outputs: work items are (column, block of rows), so both wide and long tables use
  // every thread.
  constexpr std::int64_t kBlockRows = 1 << 16;
  const std::int64_t blocks = std::max<std::int64_t>(1, (rows + kBlockRows - 1) / kBlockRows);
  const std::int64_t items = static_cast<std::int64_t>(transforms_.size()) * blocks;
#pragma omp parallel for num_threads(threads) schedule(dynamic, 1)
  for (std::int64_t item = 0; item < items; ++item) {
    const std::size_t index = static_cast<std::size_t>(item / blocks);
    const std::int64_t begin = item % blocks * kBlockRows;
    const std::int64_t end = std::min(rows, begin + kBlockRows);
    const ColumnTransform& transform = *transforms_[index];
    if (transform.encoding == Encoding::kText) continue;
    FillDense(transform, *inputs[index], code_maps[index], begin, end, rows,
              matrix.numeric.data() + slots[index].numeric * rows,
              matrix.categorical.data() + slots[index].categorical * rows);
  }
  // Text columns, each threaded inside.
  for (std::size_t index = 0; index < transforms_.size(); ++index) {
    const ColumnTransform& transform = *transforms_[index];
    if (transform.encoding != Encoding::kText) continue;
    const Column* column = inputs[index];
    Column converted;
    if (column->type() != ColumnType::kCategorical && column->type() != ColumnType::kText) {
      converted = AsStringColumn(*column);
      column = &converted;
    }
    if (transform.special) {
      ComputeSpecialFeatures(*column, matrix.numeric.data() + slots[index].numeric * rows, threads);
    }
    if (transform.ngrams) {
      matrix.ngrams = ConcatenateColumns(std::move(matrix.ngrams),
                                         transform.vectorizer.Transform(*column, threads));
    }
  }
  return matrix;
}

}  // namespace tabforge::features
