#include "data/csv_reader.h"

#include <fast_float/fast_float.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/context.h"
#include "core/error.h"
#include "core/strings.h"
#include "core/timer.h"
#include "data/column_stats.h"
#include "data/csv_scan.h"
#include "data/datetime.h"
#include "data/source.h"

namespace tabforge::data {
namespace {

using csv::Field;
using csv::FieldEnd;

// How the parser stores one column's fields.
enum class Kind : std::uint8_t { kSkip, kNumeric, kBoolean, kDatetime, kString };

struct ColumnPlan {
  Kind kind = Kind::kSkip;
  DateLayout layout = DateLayout::kIso;
};

// Where the parser writes one column's cells (row 0 of the whole table); unused ones are null.
struct ColumnSink {
  double* numeric = nullptr;
  std::int8_t* booleans = nullptr;
  std::int64_t* datetimes = nullptr;
  std::int32_t* codes = nullptr;
};

// Decides whether a trimmed field is a missing-value token.
class NaMatcher {
 public:
  explicit NaMatcher(const std::vector<std::string>& tokens) {
    for (const std::string& token : tokens) {
      std::string_view trimmed = TrimSpaces(token);
      tokens_.emplace_back(trimmed);
      if (trimmed.size() < 64) {
        length_mask_ |= 1ull << trimmed.size();
      } else {
        length_mask_ = ~0ull;
      }
      double number;
      const char* end = trimmed.data() + trimmed.size();
      auto parsed = fast_float::from_chars(trimmed.data(), end, number);
      // Tokens that read as NaN ("nan", "-NaN") give a missing value either way.
      const bool reads_as_number =
          parsed.ec == std::errc() && parsed.ptr == end && !std::isnan(number);
      numeric_tokens_ = numeric_tokens_ || reads_as_number || trimmed.starts_with('+');
    }
  }
  // Whether some token reads as a number (e.g. "-999"), so numbers must be checked first.
  bool HasNumericTokens() const { return numeric_tokens_; }
  bool IsNa(std::string_view trimmed) const {
    if (trimmed.size() < 64 && ((length_mask_ >> trimmed.size()) & 1) == 0) return false;
    for (const std::string& token : tokens_) {
      if (token == trimmed) return true;
    }
    return false;
  }

 private:
  std::vector<std::string> tokens_;
  std::uint64_t length_mask_ = 0;
  bool numeric_tokens_ = false;
};

bool ParseNumber(std::string_view trimmed, double& value) {
  const char* begin = trimmed.data();
  const char* end = begin + trimmed.size();
  if (begin == end) return false;
  if (*begin == '+') {
    ++begin;
    if (begin == end || *begin == '-' || *begin == '+') return false;
  }
  fast_float::from_chars_result result = fast_float::from_chars(begin, end, value);
  return result.ec == std::errc() && result.ptr == end;
}

bool EqualsIgnoreCase(std::string_view text, std::string_view lower) {
  if (text.size() != lower.size()) return false;
  for (std::size_t index = 0; index < text.size(); ++index) {
    char c = text[index];
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    if (c != lower[index]) return false;
  }
  return true;
}

// "true"/"false" in any case, as pandas' default true_values/false_values.
bool ParseBool(std::string_view trimmed, std::int8_t& value) {
  if (EqualsIgnoreCase(trimmed, "true")) {
    value = 1;
    return true;
  }
  if (EqualsIgnoreCase(trimmed, "false")) {
    value = 0;
    return true;
  }
  return false;
}

enum class ParseStatus : std::uint8_t {
  kOk,
  kOverflow,  // more records than the chunk's bound: the chunking was wrong
  kTooFewFields,
  kTooManyFields,
  kUnclosedQuote,
  kJunkAfterQuote,
};

struct ChunkResult {
  ParseStatus status = ParseStatus::kOk;
  std::int64_t rows = 0;
  const char* stop = nullptr;      // where parsing ended (the chunk's end when all went well)
  const char* error_at = nullptr;  // the record or byte an error refers to
  int error_column = 0;            // 0-based column of the error
  int error_fields = 0;            // fields seen in a record that had too few
  std::vector<StringDictionary> dictionaries;  // per column, for Kind::kString
  std::vector<std::uint8_t> failed;            // per column: a value did not fit its kind
};

struct ParseSetup {
  char delimiter = ',';
  int num_columns = 0;
  const std::vector<ColumnPlan>* plans = nullptr;
  const std::vector<ColumnSink>* sinks = nullptr;
  const NaMatcher* na = nullptr;
};

// Parses records from [begin, end) into the sinks starting at `first_row`, at most
// `max_rows` of them (negative: no bound).
ChunkResult ParseChunk(const char* begin, const char* end, std::int64_t first_row,
                       std::int64_t max_rows, const ParseSetup& setup) {
  const int num_columns = setup.num_columns;
  const std::vector<ColumnPlan>& plans = *setup.plans;
  ChunkResult result;
  result.dictionaries.resize(static_cast<std::size_t>(num_columns));
  result.failed.assign(static_cast<std::size_t>(num_columns), 0);
  std::string scratch;
  const char* pos = begin;
  std::int64_t row = 0;
  auto fail = [&](ParseStatus status, const char* at, int column) {
    result.status = status;
    result.error_at = at;
    result.error_column = column;
    result.rows = row;
    result.stop = at;
    return result;
  };
  while (pos < end) {
    if (*pos == '\n') {
      ++pos;
      continue;
    }
    if (*pos == '\r' && pos + 1 < end && pos[1] == '\n') {
      pos += 2;
      continue;
    }
    if (row == max_rows) return fail(ParseStatus::kOverflow, pos, 0);
    const char* record = pos;
    const std::int64_t out_row = first_row + row;
    for (int column = 0; column < num_columns; ++column) {
      const ColumnPlan& plan = plans[column];
      if (plan.kind == Kind::kNumeric && !setup.na->HasNumericTokens()) {
        // Fast path for a plain number: parse it in place and look only at the byte after it.
        double number;
        fast_float::from_chars_result parsed = fast_float::from_chars(pos, end, number);
        const char* after = parsed.ptr;
        if (parsed.ec == std::errc() && after > pos) {
          const bool last = column + 1 == num_columns;
          if (!last && after < end && *after == setup.delimiter) {
            (*setup.sinks)[column].numeric[out_row] = number;
            pos = after + 1;
            continue;
          }
          if (last && (after == end || *after == '\n' ||
                       (*after == '\r' && after + 1 < end && after[1] == '\n'))) {
            (*setup.sinks)[column].numeric[out_row] = number;
            pos = after == end ? end : after + (*after == '\r' ? 2 : 1);
            continue;
          }
        }
      }
      Field field;
      FieldEnd how;
      const char* next = csv::ReadField(pos, end, setup.delimiter, field, how);
      if (how == FieldEnd::kUnclosedQuote) return fail(ParseStatus::kUnclosedQuote, next, column);
      if (how == FieldEnd::kJunkAfterQuote) {
        return fail(ParseStatus::kJunkAfterQuote, next, column);
      }
      if (how == FieldEnd::kRecordEnd && column + 1 < num_columns) {
        result.error_fields = column + 1;
        return fail(ParseStatus::kTooFewFields, record, column);
      }
      if (how == FieldEnd::kDelimiter && column + 1 == num_columns) {
        return fail(ParseStatus::kTooManyFields, record, column);
      }
      pos = next;
      if (plan.kind == Kind::kSkip) continue;
      const ColumnSink& sink = (*setup.sinks)[column];
      std::string_view value = field.quoted ? csv::Unescape(field, scratch) : field.view();
      std::string_view trimmed = TrimSpaces(value);
      switch (plan.kind) {
        case Kind::kNumeric: {
          double number;
          if (setup.na->HasNumericTokens() && setup.na->IsNa(trimmed)) {
            number = std::numeric_limits<double>::quiet_NaN();
          } else if (!ParseNumber(trimmed, number)) {
            number = std::numeric_limits<double>::quiet_NaN();
            if (!setup.na->IsNa(trimmed)) result.failed[column] = 1;
          }
          sink.numeric[out_row] = number;
          break;
        }
        case Kind::kBoolean: {
          std::int8_t flag;
          if (!ParseBool(trimmed, flag)) {
            flag = kMissingBool;
            if (!setup.na->IsNa(trimmed)) result.failed[column] = 1;
          }
          sink.booleans[out_row] = flag;
          break;
        }
        case Kind::kDatetime: {
          std::int64_t seconds = kMissingDatetime;
          if (!setup.na->IsNa(trimmed)) {
            std::optional<ParsedDatetime> parsed = ParseDatetime(trimmed, plan.layout);
            if (parsed) {
              seconds = parsed->seconds;
            } else {
              result.failed[column] = 1;
            }
          }
          sink.datetimes[out_row] = seconds;
          break;
        }
        case Kind::kString:
          sink.codes[out_row] =
              setup.na->IsNa(trimmed) ? kMissingCode : result.dictionaries[column].Insert(value);
          break;
        case Kind::kSkip:
          break;
      }
    }
    ++row;
  }
  result.rows = row;
  result.stop = pos;
  return result;
}

std::string DelimiterName(char delimiter) {
  if (delimiter == '\t') return "tab";
  return fmt::format("'{}'", delimiter);
}

// Field counts of the first few records with `delimiter`, quote-aware; stops at 64 KiB.
std::vector<int> SniffFieldCounts(std::string_view text, char delimiter) {
  std::vector<int> counts;
  const char* pos = text.data();
  const char* end = text.data() + std::min<std::size_t>(text.size(), 1 << 16);
  const bool whole = end == text.data() + text.size();
  while (pos < end && counts.size() < 20) {
    if (*pos == '\n' || *pos == '\r') {
      ++pos;
      continue;
    }
    int fields = 0;
    FieldEnd how = FieldEnd::kDelimiter;
    while (how == FieldEnd::kDelimiter) {
      Field field;
      pos = csv::ReadField(pos, end, delimiter, field, how);
      ++fields;
    }
    if (how != FieldEnd::kRecordEnd) break;
    if (pos == end && !whole) break;  // the record may continue past the sniffed window
    counts.push_back(fields);
  }
  return counts;
}

char SniffDelimiter(std::string_view text) {
  char best = ',';
  int best_fields = 1;
  bool best_consistent = false;
  for (char candidate : {',', '\t', ';', '|'}) {
    std::vector<int> counts = SniffFieldCounts(text, candidate);
    if (counts.empty() || counts.front() < 2) continue;
    bool consistent = std::all_of(counts.begin(), counts.end(),
                                  [&](int count) { return count == counts.front(); });
    bool better = consistent != best_consistent ? consistent : counts.front() > best_fields;
    if (better) {
      best = candidate;
      best_fields = counts.front();
      best_consistent = consistent;
    }
  }
  return best;
}

// Chooses each column's storage kind from the first records: numeric when every present
// value is a number, boolean when every one is true/false, datetime when every one is a date
// in one common layout, otherwise string. Columns with no present value are numeric.
std::vector<ColumnPlan> InferColumnKinds(const std::vector<std::vector<std::string>>& sample,
                                         const NaMatcher& na) {
  std::vector<ColumnPlan> plans(sample.size());
  for (std::size_t column = 0; column < sample.size(); ++column) {
    bool numeric = true;
    bool boolean = true;
    unsigned layouts = 0b111;
    for (const std::string& value : sample[column]) {
      std::string_view trimmed = TrimSpaces(value);
      if (na.IsNa(trimmed)) continue;
      double number;
      std::int8_t flag;
      numeric = numeric && ParseNumber(trimmed, number);
      boolean = boolean && ParseBool(trimmed, flag);
      if (!numeric && !boolean && layouts != 0) layouts &= DateLayoutsMatching(trimmed);
      if (!numeric && !boolean && layouts == 0) break;
    }
    ColumnPlan& plan = plans[column];
    if (numeric) {
      plan.kind = Kind::kNumeric;
    } else if (boolean) {
      plan.kind = Kind::kBoolean;
    } else if (layouts != 0) {
      plan.kind = Kind::kDatetime;
      for (DateLayout layout : {DateLayout::kIso, DateLayout::kMonthDay, DateLayout::kDayMonth}) {
        if (layouts & (1u << static_cast<unsigned>(layout))) {
          plan.layout = layout;
          break;
        }
      }
    } else {
      plan.kind = Kind::kString;
    }
  }
  return plans;
}

// The reader of one text: holds what every step needs and turns parse failures into errors.
class CsvParser {
 public:
  CsvParser(std::string_view text, const std::string& name, const CsvOptions& options)
      : text_(text),
        name_(name),
        options_(options),
        na_(options.na_values ? *options.na_values : DefaultNaValues()) {}

  Table Parse(CsvReadStats* stats);

 private:
  void ReadHeader();
  std::vector<std::vector<std::string>> ReadSample() const;
  // Parses the chunks into `columns` with `plans`; false when the chunking was wrong.
  bool ParseChunks(const std::vector<csv::Chunk>& chunks, const std::vector<ColumnPlan>& plans,
                   std::vector<Column>& columns, std::vector<ChunkResult>& results);
  void MergeAndCompact(const std::vector<csv::Chunk>& chunks, const std::vector<ColumnPlan>& plans,
                       std::vector<Column>& columns, std::vector<ChunkResult>& results);
  [[noreturn]] void ThrowParseError(const ChunkResult& result) const;
  void CheckUtf8(const std::vector<Column>& columns) const;
  std::string Where(const char* at, int column) const;
  // The first byte of data record `row` (0-based, blank lines not counted); only for errors.
  const char* RecordStart(std::int64_t row) const;

  std::string_view text_;
  const std::string& name_;
  const CsvOptions& options_;
  NaMatcher na_;
  char delimiter_ = ',';
  std::vector<std::string> names_;
  const char* body_ = nullptr;  // the first byte after the header
  int threads_ = 1;
};

const char* CsvParser::RecordStart(std::int64_t row) const {
  const char* pos = body_;
  const char* end = text_.data() + text_.size();
  for (std::int64_t record = 0; pos < end;) {
    if (*pos == '\n' || *pos == '\r') {
      ++pos;
      continue;
    }
    if (record == row) return pos;
    FieldEnd how = FieldEnd::kDelimiter;
    while (how == FieldEnd::kDelimiter) {
      Field field;
      pos = csv::ReadField(pos, end, delimiter_, field, how);
    }
    ++record;
  }
  return end;
}

std::string CsvParser::Where(const char* at, int column) const {
  std::string where = fmt::format("{}: line {}", name_, csv::LineNumberAt(text_, at));
  if (column >= 0 && column < static_cast<int>(names_.size())) {
    where += fmt::format(", column {} ('{}')", column + 1, names_[column]);
  }
  return where;
}

void CsvParser::ThrowParseError(const ChunkResult& result) const {
  const int expected = static_cast<int>(names_.size());
  switch (result.status) {
    case ParseStatus::kTooFewFields:
      throw InvalidInput(fmt::format(
          "{}: line {}: this record has {} field(s) but the header has {}. Every record needs "
          "one field per column: add the missing fields (empty fields are allowed) and quote any "
          "field that contains the delimiter {}.",
          name_, csv::LineNumberAt(text_, result.error_at), result.error_fields, expected,
          DelimiterName(delimiter_)));
    case ParseStatus::kTooManyFields:
      throw InvalidInput(fmt::format(
          "{}: line {}: this record has more than the {} fields of the header. Quote fields that "
          "contain the delimiter {}, or pass the right delimiter with --delimiter.",
          name_, csv::LineNumberAt(text_, result.error_at), expected, DelimiterName(delimiter_)));
    case ParseStatus::kUnclosedQuote:
      throw InvalidInput(fmt::format(
          "{}: a quoted field starts here but its closing quote is missing. Close the quote; a "
          "quote character inside a quoted field is written twice (\"\").",
          Where(result.error_at, result.error_column)));
    case ParseStatus::kJunkAfterQuote:
      throw InvalidInput(fmt::format(
          "{}: unexpected character '{}' after the closing quote of a field. A quoted field must "
          "end at a delimiter or the end of the line; write a quote inside it twice (\"\").",
          Where(result.error_at, result.error_column),
          Printable(std::string_view(result.error_at, 1))));
    case ParseStatus::kOk:
    case ParseStatus::kOverflow:
      break;
  }
  TFG_CHECK(false, "no error to report (status {})", static_cast<int>(result.status));
}

void CsvParser::ReadHeader() {
  const char* pos = text_.data();
  const char* end = text_.data() + text_.size();
  while (pos < end && (*pos == '\n' || *pos == '\r')) ++pos;
  const char* record = pos;
  std::vector<std::string> fields;
  FieldEnd how = FieldEnd::kDelimiter;
  std::string scratch;
  while (how == FieldEnd::kDelimiter) {
    Field field;
    const char* next = csv::ReadField(pos, end, delimiter_, field, how);
    if (how == FieldEnd::kUnclosedQuote || how == FieldEnd::kJunkAfterQuote) {
      ChunkResult error;
      error.status = how == FieldEnd::kUnclosedQuote ? ParseStatus::kUnclosedQuote
                                                     : ParseStatus::kJunkAfterQuote;
      error.error_at = next;
      error.error_column = static_cast<int>(fields.size());
      ThrowParseError(error);
    }
    fields.emplace_back(field.quoted ? csv::Unescape(field, scratch) : field.view());
    pos = next;
  }
  if (!options_.header) {
    for (std::size_t index = 0; index < fields.size(); ++index) {
      names_.push_back(std::to_string(index));
    }
    body_ = record;
    return;
  }
  body_ = pos;
  for (std::size_t index = 0; index < fields.size(); ++index) {
    std::string& name = fields[index];
    if (std::size_t bad = FindInvalidUtf8(name); bad != std::string::npos) {
      throw InvalidInput(fmt::format(
          "{}: line {}: column name {} '{}' is not valid UTF-8 (byte 0x{:02X}). Save the file "
          "as UTF-8, e.g. iconv -f latin1 -t utf-8 in.csv > out.csv.",
          name_, csv::LineNumberAt(text_, record), index + 1, Printable(name),
          static_cast<unsigned char>(name[bad])));
    }
    if (name.empty()) name = fmt::format("Unnamed: {}", index);  // as pandas names it
    for (std::size_t earlier = 0; earlier < index; ++earlier) {
      if (fields[earlier] == name) {
        throw InvalidInput(fmt::format(
            "{}: line {}: the column name '{}' appears twice (columns {} and {}). Column "
            "names must be unique: rename one of them.",
            name_, csv::LineNumberAt(text_, record), name, earlier + 1, index + 1));
      }
    }
  }
  names_ = std::move(fields);
}

std::vector<std::vector<std::string>> CsvParser::ReadSample() const {
  std::vector<std::vector<std::string>> sample(names_.size());
  const char* pos = body_;
  const char* end = text_.data() + text_.size();
  std::string scratch;
  for (std::int64_t record = 0; record < options_.type_sample_rows && pos < end;) {
    if (*pos == '\n' || *pos == '\r') {
      ++pos;
      continue;
    }
    std::size_t column = 0;
    FieldEnd how = FieldEnd::kDelimiter;
    while (how == FieldEnd::kDelimiter) {
      Field field;
      pos = csv::ReadField(pos, end, delimiter_, field, how);
      if (how == FieldEnd::kUnclosedQuote || how == FieldEnd::kJunkAfterQuote) return sample;
      if (column < sample.size()) {
        sample[column].emplace_back(field.quoted ? csv::Unescape(field, scratch) : field.view());
      }
      ++column;
    }
    if (column != names_.size()) return sample;  // the full parse reports the ragged record
    ++record;
  }
  return sample;
}

std::vector<ColumnSink> MakeSinks(const std::vector<ColumnPlan>& plans,
                                  std::vector<Column>& columns, std::int64_t rows) {
  std::vector<ColumnSink> sinks(plans.size());
  for (std::size_t index = 0; index < plans.size(); ++index) {
    Column& column = columns[index];
    auto size = static_cast<std::size_t>(rows);
    switch (plans[index].kind) {
      case Kind::kNumeric:
        column = Column(column.name(), ColumnType::kNumeric);
        column.numeric().resize(size);
        sinks[index].numeric = column.numeric().data();
        break;
      case Kind::kBoolean:
        column = Column(column.name(), ColumnType::kBoolean);
        column.booleans().resize(size);
        sinks[index].booleans = column.booleans().data();
        break;
      case Kind::kDatetime:
        column = Column(column.name(), ColumnType::kDatetime);
        column.datetimes().resize(size);
        sinks[index].datetimes = column.datetimes().data();
        break;
      case Kind::kString:
        column = Column(column.name(), ColumnType::kCategorical);
        column.codes().resize(size);
        sinks[index].codes = column.codes().data();
        break;
      case Kind::kSkip:
        break;
    }
  }
  return sinks;
}

bool CsvParser::ParseChunks(const std::vector<csv::Chunk>& chunks,
                            const std::vector<ColumnPlan>& plans, std::vector<Column>& columns,
                            std::vector<ChunkResult>& results) {
  std::int64_t total = 0;
  std::vector<std::int64_t> first_rows;
  for (const csv::Chunk& chunk : chunks) {
    first_rows.push_back(total);
    total += chunk.max_records;
  }
  std::vector<ColumnSink> sinks = MakeSinks(plans, columns, total);
  ParseSetup setup{delimiter_, static_cast<int>(names_.size()), &plans, &sinks, &na_};
  results.assign(chunks.size(), ChunkResult{});
  const int count = static_cast<int>(chunks.size());
#pragma omp parallel for num_threads(threads_) schedule(dynamic, 1)
  for (int index = 0; index < count; ++index) {
    results[index] = ParseChunk(chunks[index].begin, chunks[index].end, first_rows[index],
                                chunks[index].max_records, setup);
  }
  for (int index = 0; index < count; ++index) {
    if (results[index].status != ParseStatus::kOk || results[index].stop != chunks[index].end) {
      return false;
    }
  }
  return true;
}

// Renumbers each chunk's dictionary codes into one dictionary per column (in order of first
// appearance in the file, so the result does not depend on the chunking), then closes the gaps
// left where chunks held fewer records than their bound (blank lines).
void CsvParser::MergeAndCompact(const std::vector<csv::Chunk>& chunks,
                                const std::vector<ColumnPlan>& plans, std::vector<Column>& columns,
                                std::vector<ChunkResult>& results) {
  const int count = static_cast<int>(chunks.size());
  std::vector<std::int64_t> first_rows;
  std::int64_t bound = 0;
  for (const csv::Chunk& chunk : chunks) {
    first_rows.push_back(bound);
    bound += chunk.max_records;
  }
  for (std::size_t index = 0; index < plans.size(); ++index) {
    if (plans[index].kind != Kind::kString) continue;
    Column& column = columns[index];
    std::vector<std::vector<std::int32_t>> remaps(chunks.size());
    for (int chunk = 0; chunk < count; ++chunk) {
      StringDictionary& local = results[chunk].dictionaries[index];
      remaps[chunk].resize(static_cast<std::size_t>(local.size()));
      for (std::int32_t id = 0; id < local.size(); ++id) {
        remaps[chunk][id] = column.dictionary().Insert(local[id]);
      }
      local = StringDictionary();
    }
    std::int32_t* codes = column.codes().data();
#pragma omp parallel for num_threads(threads_) schedule(dynamic, 1)
    for (int chunk = 0; chunk < count; ++chunk) {
      const std::vector<std::int32_t>& remap = remaps[chunk];
      std::int32_t* first = codes + first_rows[chunk];
      for (std::int64_t row = 0; row < results[chunk].rows; ++row) {
        if (first[row] != kMissingCode) first[row] = remap[first[row]];
      }
    }
  }
  std::int64_t rows = 0;
  for (int chunk = 0; chunk < count; ++chunk) {
    const std::int64_t produced = results[chunk].rows;
    if (rows != first_rows[chunk]) {
      for (std::size_t index = 0; index < plans.size(); ++index) {
        Column& column = columns[index];
        auto move_down = [&](auto& values) {
          std::copy(values.begin() + first_rows[chunk],
                    values.begin() + first_rows[chunk] + produced, values.begin() + rows);
        };
        switch (plans[index].kind) {
          case Kind::kNumeric:
            move_down(column.numeric());
            break;
          case Kind::kBoolean:
            move_down(column.booleans());
            break;
          case Kind::kDatetime:
            move_down(column.datetimes());
            break;
          case Kind::kString:
            move_down(column.codes());
            break;
          case Kind::kSkip:
            break;
        }
      }
    }
    rows += produced;
  }
  if (rows != bound) {
    for (std::size_t index = 0; index < plans.size(); ++index) {
      Column& column = columns[index];
      auto size = static_cast<std::size_t>(rows);
      switch (plans[index].kind) {
        case Kind::kNumeric:
          column.numeric().resize(size);
          break;
        case Kind::kBoolean:
          column.booleans().resize(size);
          break;
        case Kind::kDatetime:
          column.datetimes().resize(size);
          break;
        case Kind::kString:
          column.codes().resize(size);
          break;
        case Kind::kSkip:
          break;
      }
    }
  }
}

void CsvParser::CheckUtf8(const std::vector<Column>& columns) const {
  for (std::size_t index = 0; index < columns.size(); ++index) {
    const Column& column = columns[index];
    if (column.type() != ColumnType::kCategorical) continue;
    const StringDictionary& dictionary = column.dictionary();
    for (std::int32_t id = 0; id < dictionary.size(); ++id) {
      std::string_view value = dictionary[id];
      std::size_t bad = FindInvalidUtf8(value);
      if (bad == std::string::npos) continue;
      // Find the first row holding this value, for the line number.
      std::int64_t row = 0;
      while (column.codes()[row] != id) ++row;
      throw InvalidInput(fmt::format(
          "{}: the value '{}' is not valid UTF-8 (byte 0x{:02X}). tabforge reads UTF-8 text: "
          "convert the file, e.g. iconv -f latin1 -t utf-8 in.csv > out.csv.",
          Where(RecordStart(row), static_cast<int>(index)), Printable(value),
          static_cast<unsigned char>(value[bad])));
    }
  }
}

Table CsvParser::Parse(CsvReadStats* stats) {
  Stopwatch watch;
  if (text_.size() >= 3 && text_.substr(0, 3) == "\xEF\xBB\xBF") text_.remove_prefix(3);
  if (text_.find_first_not_of(" \t\r\n") == std::string_view::npos) {
    throw InvalidInput(
        fmt::format("{}: the file is empty; expected a header row followed by "
                    "data rows.",
                    name_));
  }
  delimiter_ = options_.delimiter != 0 ? options_.delimiter : SniffDelimiter(text_);
  ReadHeader();
  const char* end = text_.data() + text_.size();
  if (std::string_view(body_, end - body_).find_first_not_of("\r\n") == std::string_view::npos) {
    throw InvalidInput(
        fmt::format("{}: the file has a header row but no data rows; a table "
                    "needs at least one row.",
                    name_));
  }
  std::vector<ColumnPlan> plans = InferColumnKinds(ReadSample(), na_);

  Context context;
  context.num_threads = options_.num_threads;
  threads_ = context.Threads();
  const std::int64_t body_bytes = end - body_;
  int pieces = 1;
  if (threads_ > 1 && body_bytes >= (1 << 20)) {
    pieces = static_cast<int>(std::min<std::int64_t>(threads_ * 8, body_bytes / (256 << 10)));
  }
  std::vector<csv::Chunk> chunks = csv::SplitIntoChunks(body_, end, pieces, threads_);
  std::vector<Column> columns;
  for (const std::string& name : names_) columns.emplace_back(name, ColumnType::kNumeric);
  std::vector<ChunkResult> results;
  bool sequential = chunks.empty() || !ParseChunks(chunks, plans, columns, results);
  if (sequential) {
    // Count the records with the parser itself (which also finds the first error), then
    // parse again with an exact bound.
    std::vector<ColumnPlan> skip(plans.size());
    ParseSetup counting{delimiter_, static_cast<int>(names_.size()), &skip, nullptr, &na_};
    ChunkResult counted = ParseChunk(body_, end, 0, -1, counting);
    if (counted.status != ParseStatus::kOk) ThrowParseError(counted);
    chunks = {csv::Chunk{body_, end, counted.rows}};
    bool parsed = ParseChunks(chunks, plans, columns, results);
    TFG_CHECK(parsed, "second sequential parse of {} failed", name_);
  }
  MergeAndCompact(chunks, plans, columns, results);

  // Columns where a value did not fit the sampled type become string columns.
  std::vector<ColumnPlan> demoted(plans.size());
  bool any_demoted = false;
  for (std::size_t index = 0; index < plans.size(); ++index) {
    bool failed = std::any_of(results.begin(), results.end(),
                              [&](const ChunkResult& result) { return result.failed[index]; });
    if (failed) {
      demoted[index].kind = Kind::kString;
      any_demoted = true;
    }
  }
  if (any_demoted) {
    std::vector<Column> reparsed;
    for (const std::string& name : names_) reparsed.emplace_back(name, ColumnType::kNumeric);
    bool parsed = ParseChunks(chunks, demoted, reparsed, results);
    TFG_CHECK(parsed, "re-parse of demoted columns of {} failed", name_);
    MergeAndCompact(chunks, demoted, reparsed, results);
    for (std::size_t index = 0; index < plans.size(); ++index) {
      if (demoted[index].kind == Kind::kString) columns[index] = std::move(reparsed[index]);
    }
  }
  CheckUtf8(columns);

  Table table;
  for (Column& column : columns) {
    if (column.type() == ColumnType::kCategorical) {
      column.SetStringType(ClassifyStringColumn(column));
    }
    table.AddColumn(std::move(column));
  }
  if (stats != nullptr) {
    stats->input_bytes = text_.size();
    stats->parse_seconds = watch.Seconds();
    stats->threads = threads_;
    stats->chunks = static_cast<int>(chunks.size());
    stats->sequential_fallback = sequential;
    stats->delimiter = delimiter_;
  }
  return table;
}

}  // namespace

const std::vector<std::string>& DefaultNaValues() {
  static const std::vector<std::string> kTokens = {
      "",     "#N/A",   "#N/A N/A", "#NA",  "-1.#IND", "-1.#QNAN", "-NaN",
      "-nan", "1.#IND", "1.#QNAN",  "<NA>", "N/A",     "NA",       "NULL",
      "NaN",  "None",   "n/a",      "nan",  "null",    "?"};
  return kTokens;
}

Table ParseCsv(std::string_view text, const std::string& name, const CsvOptions& options,
               CsvReadStats* stats) {
  if (options.delimiter == '"' || options.delimiter == '\n' || options.delimiter == '\r') {
    throw InvalidInput("the delimiter cannot be a quote or a line break; pick e.g. ',' or tab");
  }
  CsvParser parser(text, name, options);
  return parser.Parse(stats);
}

Table ReadCsv(const std::string& source, const CsvOptions& options, CsvReadStats* stats) {
  Stopwatch watch;
  ByteBuffer bytes = LoadSource(source);
  double load_seconds = watch.Seconds();
  Table table = ParseCsv(bytes.view(), source, options, stats);
  if (stats != nullptr) stats->load_seconds = load_seconds;
  return table;
}

}  // namespace tabforge::data
