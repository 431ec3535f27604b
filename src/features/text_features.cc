#include "features/text_features.h"

#include <fmt/format.h>
#include <omp.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <utility>

#include "core/context.h"
#include "core/error.h"
#include "core/strings.h"

namespace tabforge::features {
namespace {

using data::Column;
using data::ColumnType;
using data::kMissingCode;

constexpr std::string_view kSaveHeader = "tabforge-ngram v1\n";

int ResolveThreads(int threads) {
  Context context;
  context.num_threads = threads;
  return context.Threads();
}

void CheckStringColumn(const Column& column, std::string_view what) {
  if (column.type() != ColumnType::kText && column.type() != ColumnType::kCategorical) {
    throw InvalidInput(fmt::format(
        "column '{}' is {}, but {} need a text or categorical column; convert the column to "
        "text first",
        column.name(), data::ColumnTypeName(column.type()), what));
  }
}

bool IsSpace(unsigned char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

bool IsAsciiPunctuation(unsigned char c) {
  return (c >= '!' && c <= '/') || (c >= ':' && c <= '@') || (c >= '[' && c <= '`') ||
         (c >= '{' && c <= '~');
}

bool IsWordByte(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c >= 0x80;
}

// A UTF-8 continuation byte (10xxxxxx) does not start a code point.
bool StartsCodePoint(unsigned char c) { return (c & 0xC0) != 0x80; }

// Calls visit(n-gram) for every n-gram of `tokens` with min_n..max_n tokens. The view passed
// is valid only during the call (`joined` is the scratch for multi-token n-grams).
template <typename Visit>
void ForEachNgram(const std::vector<std::string_view>& tokens, int min_n, int max_n,
                  std::string& joined, Visit&& visit) {
  const int count = static_cast<int>(tokens.size());
  for (int n = min_n; n <= std::min(max_n, count); ++n) {
    for (int start = 0; start + n <= count; ++start) {
      if (n == 1) {
        visit(tokens[start]);
        continue;
      }
      joined.assign(tokens[start]);
      for (int next = start + 1; next < start + n; ++next) {
        joined += ' ';
        joined += tokens[next];
      }
      visit(std::string_view(joined));
    }
  }
}

// Scratch for turning one value into its tokens, reused across values by one thread.
class TokenScratch {
 public:
  // The tokens of `text`, lower-cased first when `lowercase`; valid until the next call.
  const std::vector<std::string_view>& Tokens(std::string_view text, bool lowercase) {
    if (lowercase) {
      lowered_.assign(text);
      for (char& c : lowered_) {
        if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
      }
      text = lowered_;
    }
    tokens_ = Tokenize(text);
    return tokens_;
  }

 private:
  std::string lowered_;
  std::vector<std::string_view> tokens_;
};

// Throws InvalidInput naming the first option out of range; `context` starts the message.
void ValidateOptions(const NgramOptions& options, const std::string& context) {
  auto fail = [&](std::string_view what) {
    throw InvalidInput(fmt::format("{}: {}", context, what));
  };
  if (options.min_df < 1)
    fail(fmt::format("ngram min_df must be at least 1 (got {})", options.min_df));
  if (options.min_n < 1)
    fail(fmt::format("ngram min_n must be at least 1 (got {})", options.min_n));
  if (options.max_n < options.min_n) {
    fail(fmt::format("ngram max_n ({}) must be at least min_n ({})", options.max_n, options.min_n));
  }
  if (options.max_features < 0) {
    fail(fmt::format("ngram max_features must be 0 (no limit) or positive (got {})",
                     options.max_features));
  }
}

// Document frequency and total count of one n-gram during Fit.
struct NgramStats {
  std::int64_t rows = 0;
  std::int64_t total = 0;
};

using StatsMap = std::unordered_map<std::string, NgramStats, StringViewHash, std::equal_to<>>;

// Reads the fields Save writes, throwing InvalidInput on the first mismatch.
class SavedReader {
 public:
  explicit SavedReader(std::string_view bytes) : bytes_(bytes) {}

  [[noreturn]] void Fail(std::string_view what) const {
    throw InvalidInput(fmt::format(
        "the n-gram model is corrupted or from another version of tabforge ({} at byte {}); "
        "fit the model again with this version",
        what, at_));
  }

  void Expect(std::string_view literal) {
    if (bytes_.substr(at_, literal.size()) != literal) {
      Fail(fmt::format("expected '{}'", Printable(literal)));
    }
    at_ += literal.size();
  }

  // A decimal written by Save: digits only, no leading zero, within int64; then `separator`.
  std::int64_t Integer(char separator) {
    const std::size_t begin = at_;
    while (at_ < bytes_.size() && bytes_[at_] >= '0' && bytes_[at_] <= '9') ++at_;
    const std::string_view digits = bytes_.substr(begin, at_ - begin);
    std::int64_t value = 0;
    if (digits.empty() || (digits.size() > 1 && digits[0] == '0') ||
        std::from_chars(digits.data(), digits.data() + digits.size(), value).ec != std::errc()) {
      at_ = begin;
      Fail("bad number");
    }
    Expect(std::string_view(&separator, 1));
    return value;
  }

  int Int(char separator) {
    std::int64_t value = Integer(separator);
    if (value > std::numeric_limits<int>::max()) Fail("number out of range");
    return static_cast<int>(value);
  }

  // "<length>:<bytes>\n".
  std::string_view String() {
    const std::int64_t length = Integer(':');
    if (static_cast<std::uint64_t>(length) > bytes_.size() - at_) Fail("truncated string");
    std::string_view value = bytes_.substr(at_, static_cast<std::size_t>(length));
    at_ += value.size();
    Expect("\n");
    return value;
  }

  bool AtEnd() const { return at_ == bytes_.size(); }
  std::size_t remaining() const { return bytes_.size() - at_; }

 private:
  std::string_view bytes_;
  std::size_t at_ = 0;
};

void AppendString(std::string& out, std::string_view value) {
  out += fmt::format("{}:", value.size());
  out += value;
  out += '\n';
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Special features

std::array<float, kNumSpecialFeatures> TextSpecialFeatures::Values() const {
  return {char_count,  word_count,   capital_ratio, lower_ratio, digit_count,
          digit_ratio, symbol_count, symbol_ratio,  space_ratio};
}

TextSpecialFeatures ComputeSpecialFeatures(std::string_view text) {
  std::int64_t chars = 0, capitals = 0, lowers = 0, digits = 0, symbols = 0, spaces = 0;
  for (char byte : text) {
    const auto c = static_cast<unsigned char>(byte);
    chars += StartsCodePoint(c);
    capitals += c >= 'A' && c <= 'Z';
    lowers += c >= 'a' && c <= 'z';
    digits += c >= '0' && c <= '9';
    symbols += IsAsciiPunctuation(c);
    spaces += IsSpace(c);
  }
  auto ratio = [chars](std::int64_t count) {
    return chars == 0 ? 0.0f : static_cast<float>(static_cast<double>(count) / chars);
  };
  TextSpecialFeatures features;
  features.char_count = static_cast<float>(chars);
  features.word_count = static_cast<float>(CountWords(text));
  features.capital_ratio = ratio(capitals);
  features.lower_ratio = ratio(lowers);
  features.digit_count = static_cast<float>(digits);
  features.digit_ratio = ratio(digits);
  features.symbol_count = static_cast<float>(symbols);
  features.symbol_ratio = ratio(symbols);
  features.space_ratio = ratio(spaces);
  return features;
}

std::vector<std::string> SpecialFeatureNames(const std::string& column) {
  static constexpr std::array<std::string_view, kNumSpecialFeatures> kSuffixes = {
      ".char_count",  ".word_count",   ".capital_ratio", ".lower_ratio", ".digit_count",
      ".digit_ratio", ".symbol_count", ".symbol_ratio",  ".space_ratio"};
  std::vector<std::string> names;
  names.reserve(kSuffixes.size());
  for (std::string_view suffix : kSuffixes) names.push_back(column + std::string(suffix));
  return names;
}

void ComputeSpecialFeatures(const Column& column, float* out, int threads) {
  CheckStringColumn(column, "text special features");
  threads = ResolveThreads(threads);
  const std::int32_t entries = column.dictionary().size();
  std::vector<std::array<float, kNumSpecialFeatures>> per_entry(entries);
#pragma omp parallel for num_threads(threads) schedule(dynamic, 256)
  for (std::int32_t code = 0; code < entries; ++code) {
    per_entry[code] = ComputeSpecialFeatures(column.dictionary()[code]).Values();
  }
  const std::int64_t rows = column.size();
  const std::int32_t* codes = column.codes().data();
  const float nan = std::numeric_limits<float>::quiet_NaN();
#pragma omp parallel for num_threads(threads)
  for (std::int64_t row = 0; row < rows; ++row) {
    const std::int32_t code = codes[row];
    for (int feature = 0; feature < kNumSpecialFeatures; ++feature) {
      out[feature * rows + row] = code == kMissingCode ? nan : per_entry[code][feature];
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Word n-grams

std::vector<std::string_view> Tokenize(std::string_view text) {
  std::vector<std::string_view> tokens;
  std::size_t at = 0;
  while (at < text.size()) {
    if (!IsWordByte(static_cast<unsigned char>(text[at]))) {
      ++at;
      continue;
    }
    const std::size_t begin = at;
    int code_points = 0;
    while (at < text.size() && IsWordByte(static_cast<unsigned char>(text[at]))) {
      code_points += StartsCodePoint(static_cast<unsigned char>(text[at]));
      ++at;
    }
    if (code_points >= 2) tokens.push_back(text.substr(begin, at - begin));
  }
  return tokens;
}

void NgramVectorizer::Fit(const Column& column, const NgramOptions& options, int threads) {
  CheckStringColumn(column, "word n-grams");
  ValidateOptions(options, fmt::format("column '{}'", column.name()));
  threads = ResolveThreads(threads);
  options_ = options;
  column_name_ = column.name();
  vocabulary_.clear();

  const data::StringDictionary& dictionary = column.dictionary();
  const std::int32_t entries = dictionary.size();
  std::vector<std::int64_t> entry_rows(entries, 0);
  for (std::int32_t code : column.codes()) {
    if (code != kMissingCode) ++entry_rows[code];
  }

  // Each thread counts the n-grams of its share of the distinct values; the sums are merged
  // afterwards, so the totals (and the vocabulary) do not depend on the split.
  std::vector<StatsMap> partial(threads);
#pragma omp parallel num_threads(threads)
  {
    StatsMap& stats = partial[omp_get_thread_num()];
    TokenScratch scratch;
    std::string joined;
    std::string buffer;
    std::vector<std::pair<std::size_t, std::size_t>> spans;
    std::vector<std::string_view> grams;
#pragma omp for schedule(dynamic, 64)
    for (std::int32_t code = 0; code < entries; ++code) {
      if (entry_rows[code] == 0) continue;
      const auto& tokens = scratch.Tokens(dictionary[code], options_.lowercase);
      buffer.clear();
      spans.clear();
      ForEachNgram(tokens, options_.min_n, options_.max_n, joined, [&](std::string_view gram) {
        spans.emplace_back(buffer.size(), gram.size());
        buffer += gram;
      });
      grams.clear();
      for (const auto& [offset, length] : spans) grams.emplace_back(buffer.data() + offset, length);
      std::sort(grams.begin(), grams.end());
      // Equal n-grams are adjacent: one document-frequency step per distinct n-gram.
      for (std::size_t first = 0; first < grams.size();) {
        std::size_t last = first + 1;
        while (last < grams.size() && grams[last] == grams[first]) ++last;
        auto found = stats.find(grams[first]);
        if (found == stats.end())
          found = stats.emplace(std::string(grams[first]), NgramStats{}).first;
        found->second.rows += entry_rows[code];
        found->second.total += static_cast<std::int64_t>(last - first) * entry_rows[code];
        first = last;
      }
    }
  }
  StatsMap& merged = partial[0];
  for (std::size_t part = 1; part < partial.size(); ++part) {
    StatsMap& other = partial[part];
    merged.merge(other);  // moves the n-grams merged lacks; those it holds stay in other
    for (const auto& [gram, stats] : other) {
      NgramStats& sum = merged.find(gram)->second;
      sum.rows += stats.rows;
      sum.total += stats.total;
    }
    StatsMap().swap(other);
  }

  std::vector<std::pair<std::int64_t, const std::string*>> kept;
  for (const auto& [gram, stats] : merged) {
    if (stats.rows >= options_.min_df) kept.emplace_back(stats.total, &gram);
  }
  const std::size_t limit = static_cast<std::size_t>(options_.max_features);
  if (limit > 0 && kept.size() > limit) {
    auto more_frequent = [](const auto& left, const auto& right) {
      if (left.first != right.first) return left.first > right.first;
      return *left.second < *right.second;
    };
    std::nth_element(kept.begin(), kept.begin() + static_cast<std::ptrdiff_t>(limit), kept.end(),
                     more_frequent);
    kept.resize(limit);
  }
  vocabulary_.reserve(kept.size());
  for (const auto& entry : kept) vocabulary_.push_back(*entry.second);
  std::sort(vocabulary_.begin(), vocabulary_.end());
  BuildIndex();
}

void NgramVectorizer::BuildIndex() {
  index_.clear();
  index_.reserve(vocabulary_.size());
  for (std::size_t feature = 0; feature < vocabulary_.size(); ++feature) {
    index_.emplace(vocabulary_[feature], static_cast<std::int32_t>(feature));
  }
}

SparseCounts NgramVectorizer::Transform(const Column& column, int threads) const {
  CheckStringColumn(column, "word n-grams");
  threads = ResolveThreads(threads);
  SparseCounts out;
  out.num_columns = num_features();
  out.info.reserve(vocabulary_.size());
  for (const std::string& gram : vocabulary_) {
    out.info.push_back({fmt::format("{}.__ngram__.{}", column_name_, gram), column_name_, 0, {}});
  }

  const std::int64_t rows = column.size();
  const std::int32_t* codes = column.codes().data();
  const data::StringDictionary& dictionary = column.dictionary();
  const std::int32_t entries = dictionary.size();

  // The sparse row of every distinct value that occurs, computed once.
  struct Entry {
    std::int32_t column;
    std::uint16_t count;
  };
  std::vector<std::vector<Entry>> per_entry(entries);
  if (!vocabulary_.empty()) {
    std::vector<std::uint8_t> used(entries, 0);
    for (std::int64_t row = 0; row < rows; ++row) {
      if (codes[row] != kMissingCode) used[codes[row]] = 1;
    }
#pragma omp parallel num_threads(threads)
    {
      TokenScratch scratch;
      std::string joined;
      std::vector<std::int32_t> found;
#pragma omp for schedule(dynamic, 64)
      for (std::int32_t code = 0; code < entries; ++code) {
        if (!used[code]) continue;
        const auto& tokens = scratch.Tokens(dictionary[code], options_.lowercase);
        found.clear();
        ForEachNgram(tokens, options_.min_n, options_.max_n, joined, [&](std::string_view gram) {
          auto hit = index_.find(gram);
          if (hit != index_.end()) found.push_back(hit->second);
        });
        std::sort(found.begin(), found.end());
        std::vector<Entry>& sparse = per_entry[code];
        for (std::size_t first = 0; first < found.size();) {
          std::size_t last = first + 1;
          while (last < found.size() && found[last] == found[first]) ++last;
          const std::size_t count = std::min<std::size_t>(last - first, 65535);
          sparse.push_back({found[first], static_cast<std::uint16_t>(count)});
          first = last;
        }
      }
    }
  }

  out.row_offsets.assign(static_cast<std::size_t>(rows) + 1, 0);
  for (std::int64_t row = 0; row < rows; ++row) {
    const std::size_t length = codes[row] == kMissingCode ? 0 : per_entry[codes[row]].size();
    out.row_offsets[row + 1] = out.row_offsets[row] + static_cast<std::int64_t>(length);
  }
  out.columns.resize(static_cast<std::size_t>(out.row_offsets[rows]));
  out.counts.resize(out.columns.size());
#pragma omp parallel for num_threads(threads)
  for (std::int64_t row = 0; row < rows; ++row) {
    if (codes[row] == kMissingCode) continue;
    std::int64_t at = out.row_offsets[row];
    for (const Entry& entry : per_entry[codes[row]]) {
      out.columns[at] = entry.column;
      out.counts[at] = entry.count;
      ++at;
    }
  }
  return out;
}

std::string NgramVectorizer::Save() const {
  std::string out(kSaveHeader);
  out += "column ";
  AppendString(out, column_name_);
  out += fmt::format("options {} {} {} {} {}\n", options_.min_df, options_.min_n, options_.max_n,
                     options_.max_features, options_.lowercase ? 1 : 0);
  out += fmt::format("vocabulary {}\n", vocabulary_.size());
  for (const std::string& gram : vocabulary_) AppendString(out, gram);
  out += "end\n";
  return out;
}

NgramVectorizer NgramVectorizer::Load(std::string_view bytes) {
  SavedReader reader(bytes);
  reader.Expect(kSaveHeader);
  NgramVectorizer vectorizer;
  reader.Expect("column ");
  vectorizer.column_name_ = std::string(reader.String());
  reader.Expect("options ");
  NgramOptions& options = vectorizer.options_;
  options.min_df = reader.Int(' ');
  options.min_n = reader.Int(' ');
  options.max_n = reader.Int(' ');
  options.max_features = reader.Int(' ');
  const int lowercase = reader.Int('\n');
  if (lowercase > 1) reader.Fail("bad lowercase flag");
  options.lowercase = lowercase == 1;
  try {
    ValidateOptions(options, "options");
  } catch (const InvalidInput& error) {
    reader.Fail(error.what());
  }
  reader.Expect("vocabulary ");
  const std::int64_t count = reader.Integer('\n');
  // Every entry takes at least 3 bytes ("0:\n"), which bounds a corrupted count.
  if (static_cast<std::uint64_t>(count) > reader.remaining() / 3)
    reader.Fail("truncated vocabulary");
  if (options.max_features > 0 && count > options.max_features) {
    reader.Fail("more n-grams than max_features");
  }
  vectorizer.vocabulary_.reserve(static_cast<std::size_t>(count));
  for (std::int64_t feature = 0; feature < count; ++feature) {
    std::string_view gram = reader.String();
    if (!vectorizer.vocabulary_.empty() && !(vectorizer.vocabulary_.back() < gram)) {
      reader.Fail("vocabulary not in ascending order");
    }
    vectorizer.vocabulary_.emplace_back(gram);
  }
  reader.Expect("end\n");
  if (!reader.AtEnd()) reader.Fail("unexpected bytes after the end");
  vectorizer.BuildIndex();
  return vectorizer;
}

}  // namespace tabforge::features
