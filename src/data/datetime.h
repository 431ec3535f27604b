// Parsing and formatting of date/time cells. Datetimes are int64 seconds since
// 1970-01-01T00:00:00Z (proleptic Gregorian calendar); a value with a UTC offset is converted
// to UTC, a value without one is taken as UTC.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace tabforge::data {

// The layouts the reader recognises. The date part decides the layout; a time part
// ("[T ]HH:MM[:SS[.fraction]]" plus an optional "Z" or "+HH:MM") may follow any of them.
enum class DateLayout : std::uint8_t {
  kIso,       // 2024-02-29, 2024/02/29
  kMonthDay,  // 02/29/2024 (US order)
  kDayMonth,  // 29/02/2024, 29.02.2024
};

struct ParsedDatetime {
  std::int64_t seconds = 0;  // since the epoch, UTC
  bool has_time = false;     // a time of day was written
};

// Parses `text` (already trimmed) in `layout`; nullopt when it is not a valid date in that
// layout (also for impossible dates such as 2023-02-29).
std::optional<ParsedDatetime> ParseDatetime(std::string_view text, DateLayout layout);

// Which layouts `text` could be in: bit (1 << layout) set for each layout that parses it.
unsigned DateLayoutsMatching(std::string_view text);

// Days since 1970-01-01 of a civil date; month 1..12, day 1..31 (not range-checked).
std::int64_t DaysFromCivil(int year, int month, int day);

// ISO-8601 text: "YYYY-MM-DD" when the time is midnight, else "YYYY-MM-DD HH:MM:SS".
std::string FormatDatetime(std::int64_t seconds);

// The civil parts of a datetime (UTC), for feature generation and formatting.
struct CivilTime {
  int year, month, day, hour, minute, second;
  int weekday;  // 0 = Monday ... 6 = Sunday (as pandas' dayofweek)
};
CivilTime ToCivil(std::int64_t seconds);

}  // namespace tabforge::data
