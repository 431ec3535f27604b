#include "data/datetime.h"

#include <fmt/format.h>

namespace tabforge::data {
namespace {

// Reads 1..max_digits decimal digits at text[pos]; advances pos. -1 when there is no digit.
int ReadNumber(std::string_view text, std::size_t& pos, int min_digits, int max_digits) {
  int value = 0;
  int digits = 0;
  while (pos < text.size() && digits < max_digits && text[pos] >= '0' && text[pos] <= '9') {
    value = value * 10 + (text[pos] - '0');
    ++pos;
    ++digits;
  }
  return digits >= min_digits ? value : -1;
}

bool IsDateSeparator(char c) { return c == '-' || c == '/' || c == '.'; }

bool IsLeapYear(int year) { return (year % 4 == 0 && year % 100 != 0) || year % 400 == 0; }

int DaysInMonth(int year, int month) {
  static constexpr int kDays[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  return month == 2 && IsLeapYear(year) ? 29 : kDays[month - 1];
}

// Parses "HH:MM[:SS[.fraction]][Z|±HH[:MM]]" from pos to the end; returns seconds since
// midnight minus the UTC offset, or nullopt.
std::optional<std::int64_t> ParseTimeOfDay(std::string_view text, std::size_t pos) {
  int hour = ReadNumber(text, pos, 1, 2);
  if (hour < 0 || hour > 23 || pos >= text.size() || text[pos] != ':') return std::nullopt;
  ++pos;
  int minute = ReadNumber(text, pos, 2, 2);
  if (minute < 0 || minute > 59) return std::nullopt;
  int second = 0;
  if (pos < text.size() && text[pos] == ':') {
    ++pos;
    second = ReadNumber(text, pos, 2, 2);
    if (second < 0 || second > 60) return std::nullopt;
    if (pos < text.size() && (text[pos] == '.' || text[pos] == ',')) {
      ++pos;
      if (ReadNumber(text, pos, 1, 9) < 0) return std::nullopt;  // fraction dropped
      while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9') ++pos;
    }
  }
  std::int64_t offset_seconds = 0;
  if (pos < text.size() && text[pos] == ' ') ++pos;
  if (pos < text.size()) {
    char sign = text[pos];
    if (sign == 'Z' && pos + 1 == text.size()) {
      ++pos;
    } else if (sign == '+' || sign == '-') {
      ++pos;
      int offset_hours = ReadNumber(text, pos, 2, 2);
      if (offset_hours < 0 || offset_hours > 14) return std::nullopt;
      if (pos < text.size() && text[pos] == ':') ++pos;
      int offset_minutes = pos < text.size() ? ReadNumber(text, pos, 2, 2) : 0;
      if (offset_minutes < 0 || offset_minutes > 59) return std::nullopt;
      offset_seconds = (offset_hours * 3600 + offset_minutes * 60) * (sign == '+' ? 1 : -1);
    } else {
      return std::nullopt;
    }
  }
  if (pos != text.size()) return std::nullopt;
  return hour * 3600 + minute * 60 + second - offset_seconds;
}

}  // namespace

std::int64_t DaysFromCivil(int year, int month, int day) {
  // Howard Hinnant's days_from_civil algorithm (public domain description of the calendar).
  year -= month <= 2 ? 1 : 0;
  const std::int64_t era = (year >= 0 ? year : year - 399) / 400;
  const std::int64_t year_of_era = year - era * 400;
  const std::int64_t day_of_year = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1;
  const std::int64_t day_of_era =
      year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
  return era * 146097 + day_of_era - 719468;
}

CivilTime ToCivil(std::int64_t seconds) {
  std::int64_t days = seconds >= 0 ? seconds / 86400 : -((-seconds + 86399) / 86400);
  std::int64_t second_of_day = seconds - days * 86400;
  std::int64_t shifted = days + 719468;
  const std::int64_t era = (shifted >= 0 ? shifted : shifted - 146096) / 146097;
  const std::int64_t day_of_era = shifted - era * 146097;
  const std::int64_t year_of_era =
      (day_of_era - day_of_era / 1460 + day_of_era / 36524 - day_of_era / 146096) / 365;
  const std::int64_t day_of_year =
      day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
  const std::int64_t month_index = (5 * day_of_year + 2) / 153;
  CivilTime civil{};
  civil.day = static_cast<int>(day_of_year - (153 * month_index + 2) / 5 + 1);
  civil.month = static_cast<int>(month_index < 10 ? month_index + 3 : month_index - 9);
  civil.year = static_cast<int>(year_of_era + era * 400 + (civil.month <= 2 ? 1 : 0));
  civil.hour = static_cast<int>(second_of_day / 3600);
  civil.minute = static_cast<int>(second_of_day / 60 % 60);
  civil.second = static_cast<int>(second_of_day % 60);
  // 1970-01-01 was a Thursday (weekday 3 with Monday = 0).
  civil.weekday = static_cast<int>(((days % 7) + 7 + 3) % 7);
  return civil;
}

std::optional<ParsedDatetime> ParseDatetime(std::string_view text, DateLayout layout) {
  std::size_t pos = 0;
  int year = -1;
  int month = -1;
  int day = -1;
  char separator = 0;
  if (layout == DateLayout::kIso) {
    year = ReadNumber(text, pos, 4, 4);
    if (year < 0 || pos >= text.size() || (text[pos] != '-' && text[pos] != '/'))
      return std::nullopt;
    separator = text[pos++];
    month = ReadNumber(text, pos, 1, 2);
    if (month < 0 || pos >= text.size() || text[pos] != separator) return std::nullopt;
    ++pos;
    day = ReadNumber(text, pos, 1, 2);
  } else {
    int first = ReadNumber(text, pos, 1, 2);
    if (first < 0 || pos >= text.size() || !IsDateSeparator(text[pos])) return std::nullopt;
    separator = text[pos++];
    int second = ReadNumber(text, pos, 1, 2);
    if (second < 0 || pos >= text.size() || text[pos] != separator) return std::nullopt;
    ++pos;
    year = ReadNumber(text, pos, 4, 4);
    month = layout == DateLayout::kMonthDay ? first : second;
    day = layout == DateLayout::kMonthDay ? second : first;
  }
  if (year < 0 || month < 1 || month > 12 || day < 1 || day > DaysInMonth(year, month))
    return std::nullopt;
  ParsedDatetime parsed;
  parsed.seconds = DaysFromCivil(year, month, day) * 86400;
  if (pos < text.size()) {
    if (text[pos] != 'T' && text[pos] != ' ') return std::nullopt;
    std::optional<std::int64_t> time_of_day = ParseTimeOfDay(text, pos + 1);
    if (!time_of_day) return std::nullopt;
    parsed.seconds += *time_of_day;
    parsed.has_time = true;
  }
  return parsed;
}

unsigned DateLayoutsMatching(std::string_view text) {
  unsigned layouts = 0;
  for (DateLayout layout : {DateLayout::kIso, DateLayout::kMonthDay, DateLayout::kDayMonth}) {
    if (ParseDatetime(text, layout)) layouts |= 1u << static_cast<unsigned>(layout);
  }
  return layouts;
}

std::string FormatDatetime(std::int64_t seconds) {
  CivilTime civil = ToCivil(seconds);
  if (civil.hour == 0 && civil.minute == 0 && civil.second == 0) {
    return fmt::format("{:04}-{:02}-{:02}", civil.year, civil.month, civil.day);
  }
  return fmt::format("{:04}-{:02}-{:02} {:02}:{:02}:{:02}", civil.year, civil.month, civil.day,
                     civil.hour, civil.minute, civil.second);
}

}  // namespace tabforge::data
