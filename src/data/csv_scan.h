// Internal to the CSV reader: the field tokenizer and the quote-aware cutting of the text
// into chunks that start at record boundaries.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace tabforge::data::csv {

// How a field ended.
enum class FieldEnd : std::uint8_t {
  kDelimiter,       // more fields follow in this record
  kRecordEnd,       // '\n', "\r\n" or the end of the text
  kUnclosedQuote,   // a quoted field runs to the end of the text
  kJunkAfterQuote,  // a closing quote is followed by something other than a delimiter/newline
};

// One field, pointing into the text. For a quoted field, [begin, end) is the inside of the
// quotes and `escaped` says whether it holds doubled quotes ("") that must be unescaped.
struct Field {
  const char* begin = nullptr;
  const char* end = nullptr;
  bool quoted = false;
  bool escaped = false;
  std::string_view view() const { return std::string_view(begin, end - begin); }
};

// Reads the field starting at `pos` (< `end`, or == `end` for an empty last field) and
// returns the position after its terminator. A field is quoted when its first byte is '"'
// (RFC 4180); quotes inside an unquoted field are literal. A '\r' before '\n' is dropped.
inline const char* ReadField(const char* pos, const char* end, char delimiter, Field& field,
                             FieldEnd& how) {
  if (pos < end && *pos == '"') {
    const char* scan = pos + 1;
    field.quoted = true;
    field.escaped = false;
    while (true) {
      const void* found = std::memchr(scan, '"', static_cast<std::size_t>(end - scan));
      if (found == nullptr) {
        field.begin = pos + 1;
        field.end = end;
        how = FieldEnd::kUnclosedQuote;
        return pos;  // the position of the opening quote, for the error message
      }
      const char* quote = static_cast<const char*>(found);
      if (quote + 1 < end && quote[1] == '"') {
        field.escaped = true;
        scan = quote + 2;
        continue;
      }
      field.begin = pos + 1;
      field.end = quote;
      const char* after = quote + 1;
      if (after == end) {
        how = FieldEnd::kRecordEnd;
        return after;
      }
      if (*after == delimiter) {
        how = FieldEnd::kDelimiter;
        return after + 1;
      }
      if (*after == '\n') {
        how = FieldEnd::kRecordEnd;
        return after + 1;
      }
      if (*after == '\r' && after + 1 < end && after[1] == '\n') {
        how = FieldEnd::kRecordEnd;
        return after + 2;
      }
      if (*after == '\r' && after + 1 == end) {
        how = FieldEnd::kRecordEnd;
        return end;
      }
      how = FieldEnd::kJunkAfterQuote;
      return after;
    }
  }
  field.quoted = false;
  field.escaped = false;
  field.begin = pos;
  const char* scan = pos;
  while (scan < end && *scan != delimiter && *scan != '\n') ++scan;
  field.end = scan;
  if (scan < end && *scan == delimiter) {
    how = FieldEnd::kDelimiter;
    return scan + 1;
  }
  if (field.end > field.begin && field.end[-1] == '\r') --field.end;
  how = FieldEnd::kRecordEnd;
  return scan < end ? scan + 1 : end;
}

// The inside of a quoted field with doubled quotes made single, into `out`.
inline std::string_view Unescape(const Field& field, std::string& out) {
  if (!field.escaped) return field.view();
  out.clear();
  for (const char* at = field.begin; at < field.end; ++at) {
    out.push_back(*at);
    if (*at == '"') ++at;  // skip the second quote of a pair
  }
  return out;
}

// A piece of the body that starts at a record boundary, with an upper bound on the records it
// holds (blank lines are counted but produce no record).
struct Chunk {
  const char* begin;
  const char* end;
  std::int64_t max_records;
};

// Cuts [begin, end) into about `pieces` chunks at record boundaries, in parallel on
// `threads` threads, assuming every '"' opens or closes a quoted section (true for RFC 4180
// text). Returns an empty vector when the quotes do not balance, so the caller falls back to
// a sequential parse, which reports the error precisely.
std::vector<Chunk> SplitIntoChunks(const char* begin, const char* end, int pieces, int threads);

// The 1-based line number of `at` in `text`, counting every '\n' before it.
std::int64_t LineNumberAt(std::string_view text, const char* at);

}  // namespace tabforge::data::csv
