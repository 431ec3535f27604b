// Reading CSV/TSV into a Table: RFC 4180 quoting, header row, delimiter sniffing, UTF-8 BOM,
// CRLF, gzip (by magic bytes), local paths and http(s) URLs. Parsing runs on all threads:
// the text is cut into chunks at record boundaries (quotes respected) and each chunk is parsed
// straight into the typed columns. Column types are inferred (see InferColumnKinds in
// csv_reader.cc and ClassifyStringColumn in column_stats.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "data/table.h"

namespace tabforge::data {

// The missing-value tokens used when CsvOptions::na_values is not set: those pandas users
// know, plus "?" (compared after trimming spaces, so the original Adult files' " ?" is missing).
const std::vector<std::string>& DefaultNaValues();

struct CsvOptions {
  // Field delimiter; 0 means sniff it from the first lines among ',', '\t', ';' and '|'.
  char delimiter = 0;
  // Whether the first record names the columns; without one, columns are named "0", "1", ...
  bool header = true;
  // Tokens that mean "missing" (compared after trimming spaces and tabs). When set, they
  // replace DefaultNaValues() entirely; an empty field is missing only if "" is listed.
  std::optional<std::vector<std::string>> na_values;
  // Threads for parsing; 0 means all hardware threads.
  int num_threads = 0;
  // Records read up front to choose each column's type (numeric, boolean, datetime, string).
  // A later value that does not fit the chosen type turns the column into a string column.
  std::int64_t type_sample_rows = 10000;
};

// Timings and sizes of one read, for `inspect` and the benchmark.
struct CsvReadStats {
  std::size_t input_bytes = 0;       // bytes of CSV text (after decompression)
  double load_seconds = 0;           // reading the file or URL, and gunzip
  double parse_seconds = 0;          // everything after the bytes are in memory
  int threads = 1;                   // threads used for parsing
  int chunks = 1;                    // chunks parsed in parallel
  bool sequential_fallback = false;  // chunking was not trusted (stray quotes) and the text
                                     // was parsed again on one thread
  char delimiter = ',';
};

// Reads `source` (a path or http(s) URL; gzip detected by content). Throws IoError when it
// cannot be read and InvalidInput, naming the source, line and column and the remedy, when
// its contents are not a valid table.
Table ReadCsv(const std::string& source, const CsvOptions& options = {},
              CsvReadStats* stats = nullptr);

// Parses CSV text already in memory (no gzip, no BOM handling beyond a leading UTF-8 BOM).
// `name` is used in error messages.
Table ParseCsv(std::string_view text, const std::string& name, const CsvOptions& options = {},
               CsvReadStats* stats = nullptr);

}  // namespace tabforge::data
