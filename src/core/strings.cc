#include "core/strings.h"

#include <fmt/format.h>

#include <cstdint>
#include <cstring>

namespace tabforge {

std::size_t FindInvalidUtf8(std::string_view text) {
  const auto* bytes = reinterpret_cast<const unsigned char*>(text.data());
  const std::size_t size = text.size();
  std::size_t at = 0;
  while (at < size) {
    // Fast path: eight ASCII bytes at a time.
    if (at + 8 <= size) {
      std::uint64_t word;
      std::memcpy(&word, bytes + at, 8);
      if ((word & 0x8080808080808080ull) == 0) {
        at += 8;
        continue;
      }
    }
    unsigned char lead = bytes[at];
    if (lead < 0x80) {
      ++at;
      continue;
    }
    std::size_t length;
    std::uint32_t min_code;
    std::uint32_t code;
    if ((lead & 0xE0) == 0xC0) {
      length = 2, min_code = 0x80, code = lead & 0x1F;
    } else if ((lead & 0xF0) == 0xE0) {
      length = 3, min_code = 0x800, code = lead & 0x0F;
    } else if ((lead & 0xF8) == 0xF0) {
      length = 4, min_code = 0x10000, code = lead & 0x07;
    } else {
      return at;
    }
    if (at + length > size) return at;
    for (std::size_t next = 1; next < length; ++next) {
      unsigned char continuation = bytes[at + next];
      if ((continuation & 0xC0) != 0x80) return at;
      code = (code << 6) | (continuation & 0x3F);
    }
    if (code < min_code || code > 0x10FFFF || (code >= 0xD800 && code <= 0xDFFF)) return at;
    at += length;
  }
  return std::string_view::npos;
}

std::string Printable(std::string_view text, std::size_t max_bytes) {
  std::string out;
  for (std::size_t index = 0; index < text.size() && index < max_bytes; ++index) {
    unsigned char byte = static_cast<unsigned char>(text[index]);
    if (byte < 0x20 || byte >= 0x7F) {
      out += fmt::format("\\x{:02X}", byte);
    } else {
      out.push_back(static_cast<char>(byte));
    }
  }
  if (text.size() > max_bytes) out += "...";
  return out;
}

std::string Join(const std::vector<std::string>& items, std::string_view separator) {
  std::string out;
  for (std::size_t index = 0; index < items.size(); ++index) {
    if (index > 0) out.append(separator);
    out.append(items[index]);
  }
  return out;
}

int CountWords(std::string_view text) {
  int words = 0;
  bool in_word = false;
  for (char c : text) {
    bool space = c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
    if (!space && !in_word) ++words;
    in_word = !space;
  }
  return words;
}

}  // namespace tabforge
