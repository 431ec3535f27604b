#include "data/csv_scan.h"

#include <algorithm>

namespace tabforge::data::csv {
namespace {

// Newline statistics of one byte range, computed without knowing whether the range starts
// inside a quoted section: `outside` counts newlines that are outside quotes if the range
// starts outside, `inside` those that are outside quotes if it starts inside.
struct RangeScan {
  std::int64_t quotes = 0;
  std::int64_t outside_count = 0;
  const char* outside_first = nullptr;
  std::int64_t inside_count = 0;
  const char* inside_first = nullptr;
};

// Counts '\n' in [begin, end) and finds the first one.
std::int64_t CountNewlines(const char* begin, const char* end, const char** first) {
  std::int64_t count = 0;
  const char* at = begin;
  while (at < end) {
    const void* found = std::memchr(at, '\n', static_cast<std::size_t>(end - at));
    if (found == nullptr) break;
    const char* newline = static_cast<const char*>(found);
    if (count == 0) *first = newline;
    ++count;
    at = newline + 1;
  }
  return count;
}

RangeScan ScanRange(const char* begin, const char* end) {
  RangeScan scan;
  bool in_quotes = false;  // assuming the range starts outside quotes
  const char* at = begin;
  while (at < end) {
    const void* found = std::memchr(at, '"', static_cast<std::size_t>(end - at));
    const char* stop = found ? static_cast<const char*>(found) : end;
    const char* first = nullptr;
    std::int64_t newlines = CountNewlines(at, stop, &first);
    if (newlines > 0) {
      std::int64_t& count = in_quotes ? scan.inside_count : scan.outside_count;
      const char*& first_of = in_quotes ? scan.inside_first : scan.outside_first;
      if (count == 0) first_of = first;
      count += newlines;
    }
    if (found == nullptr) break;
    ++scan.quotes;
    in_quotes = !in_quotes;
    at = stop + 1;
  }
  return scan;
}

}  // namespace

std::vector<Chunk> SplitIntoChunks(const char* begin, const char* end, int pieces, int threads) {
  pieces = std::max(1, pieces);
  const std::int64_t length = end - begin;
  std::vector<RangeScan> scans(static_cast<std::size_t>(pieces));
  std::vector<const char*> range_begin(static_cast<std::size_t>(pieces) + 1);
  for (int piece = 0; piece <= pieces; ++piece) {
    range_begin[piece] = begin + length * piece / pieces;
  }
#pragma omp parallel for num_threads(threads) schedule(dynamic, 1)
  for (int piece = 0; piece < pieces; ++piece) {
    scans[piece] = ScanRange(range_begin[piece], range_begin[piece + 1]);
  }

  std::vector<Chunk> chunks;
  chunks.push_back(Chunk{begin, end, 0});
  bool in_quotes = false;
  for (int piece = 0; piece < pieces; ++piece) {
    const RangeScan& scan = scans[piece];
    std::int64_t count = in_quotes ? scan.inside_count : scan.outside_count;
    const char* first = in_quotes ? scan.inside_first : scan.outside_first;
    if (count > 0) {
      if (piece == 0) {
        chunks.back().max_records += count;
      } else {
        // The first record-ending newline of this range closes the current chunk; a new
        // chunk starts after it (unless that is the end of the text).
        chunks.back().max_records += 1;
        if (first + 1 < end) {
          chunks.back().end = first + 1;
          chunks.push_back(Chunk{first + 1, end, count - 1});
        }
      }
    }
    if (scan.quotes % 2 == 1) in_quotes = !in_quotes;
  }
  if (in_quotes) return {};
  if (length > 0 && end[-1] != '\n') chunks.back().max_records += 1;
  return chunks;
}

std::int64_t LineNumberAt(std::string_view text, const char* at) {
  const char* begin = text.data();
  return 1 + std::count(begin, std::min(at, begin + text.size()), '\n');
}

}  // namespace tabforge::data::csv
