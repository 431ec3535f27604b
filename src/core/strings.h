// Small string helpers used across folders.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace tabforge {

// `text` without leading and trailing spaces and tabs.
inline std::string_view TrimSpaces(std::string_view text) {
  std::size_t first = 0;
  while (first < text.size() && (text[first] == ' ' || text[first] == '\t')) ++first;
  std::size_t last = text.size();
  while (last > first && (text[last - 1] == ' ' || text[last - 1] == '\t')) --last;
  return text.substr(first, last - first);
}

// The byte offset of the first invalid UTF-8 sequence in `text` (overlong forms, surrogates
// and code points above U+10FFFF are invalid), or npos when all of it is valid.
std::size_t FindInvalidUtf8(std::string_view text);

// `text` with control and non-ASCII bytes shown as \xNN, cut to `max_bytes`, for messages.
std::string Printable(std::string_view text, std::size_t max_bytes = 40);

// Joins `items` with `separator`.
std::string Join(const std::vector<std::string>& items, std::string_view separator);

// The number of whitespace-separated words in `text`.
int CountWords(std::string_view text);

}  // namespace tabforge
