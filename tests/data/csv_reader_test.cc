#include "data/csv_reader.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>
#include <zlib.h>

#include <cmath>
#include <random>
#include <thread>

#include "core/error.h"
#include "data/source.h"
#include "test_support.h"

namespace tabforge::data {
namespace {

Table Parse(const std::string& text, CsvOptions options = {}) {
  return ParseCsv(text, "test.csv", options);
}

// The InvalidInput message of parsing `text`, or "" when it parses.
std::string ParseError(const std::string& text, CsvOptions options = {}) {
  try {
    Parse(text, options);
  } catch (const InvalidInput& error) {
    return error.what();
  }
  return "";
}

std::string Gzip(const std::string& text) {
  z_stream stream{};
  deflateInit2(&stream, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
  std::string out(deflateBound(&stream, text.size()) + 64, '\0');
  stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
  stream.avail_in = static_cast<uInt>(text.size());
  stream.next_out = reinterpret_cast<Bytef*>(out.data());
  stream.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(deflate(&stream, Z_FINISH), Z_STREAM_END);
  out.resize(stream.total_out);
  deflateEnd(&stream);
  return out;
}

TEST(CsvReader, InfersColumnTypes) {
  Table table = Parse(
      "age,city,member,joined,score\n"
      "39,Paris,True,2024-02-29,1.5\n"
      "50,Berlin,false,2023-12-31,\n"
      "38,Paris,TRUE,2024-01-01 10:00:00,-2e3\n");
  ASSERT_EQ(table.num_rows(), 3);
  ASSERT_EQ(table.num_columns(), 5);
  EXPECT_EQ(table.column(0).type(), ColumnType::kNumeric);
  EXPECT_EQ(table.column(1).type(), ColumnType::kCategorical);
  EXPECT_EQ(table.column(2).type(), ColumnType::kBoolean);
  EXPECT_EQ(table.column(3).type(), ColumnType::kDatetime);
  EXPECT_EQ(table.column(4).type(), ColumnType::kNumeric);
  EXPECT_EQ(table.column(0).numeric(), (std::vector<double>{39, 50, 38}));
  const Column& city = table.column(1);
  EXPECT_EQ(city.dictionary().size(), 2);
  EXPECT_EQ(city.CellText(0), "Paris");
  EXPECT_EQ(city.codes()[0], city.codes()[2]);
  EXPECT_EQ(table.column(2).booleans(), (std::vector<std::int8_t>{1, 0, 1}));
  EXPECT_EQ(table.column(3).CellText(0), "2024-02-29");
  EXPECT_EQ(table.column(3).CellText(2), "2024-01-01 10:00:00");
  EXPECT_TRUE(std::isnan(table.column(4).numeric()[1]));
  EXPECT_EQ(table.column(4).numeric()[2], -2000.0);
}

TEST(CsvReader, DefaultMissingTokensAndTrimmedQuestionMark) {
  Table table = Parse("x,y\n1, ?\nNA,a\nnull,None\n  ,N/A\nnan,b\n");
  EXPECT_EQ(table.column(0).MissingCount(), 4);
  EXPECT_EQ(table.column(0).numeric()[0], 1.0);
  EXPECT_EQ(table.column(1).MissingCount(), 3);  // " ?", "None", "N/A"
  EXPECT_EQ(table.column(1).type(), ColumnType::kCategorical);
  EXPECT_EQ(table.column(1).dictionary().size(), 2);
}

TEST(CsvReader, NaValuesOptionReplacesDefaults) {
  CsvOptions options;
  options.na_values = std::vector<std::string>{"-999"};
  Table table = Parse("x,y\n-999,NA\n2,b\n", options);
  EXPECT_TRUE(table.column(0).IsMissing(0));
  EXPECT_EQ(table.column(1).MissingCount(), 0);  // "NA" is a value now
  EXPECT_EQ(table.column(1).CellText(0), "NA");
}

TEST(CsvReader, Rfc4180Quoting) {
  Table table = Parse(
      "id,text\n"
      "1,\"a, b\"\n"
      "2,\"she said \"\"hi\"\"\"\n"
      "3,\"two\nlines\"\n"
      "4,\"\"\n"
      "5,plain\n");
  ASSERT_EQ(table.num_rows(), 5);
  const Column& text = table.column(1);
  EXPECT_EQ(text.CellText(0), "a, b");
  EXPECT_EQ(text.CellText(1), "she said \"hi\"");
  EXPECT_EQ(text.CellText(2), "two\nlines");
  EXPECT_TRUE(text.IsMissing(3));  // an empty quoted field is empty, hence missing
  EXPECT_EQ(text.CellText(4), "plain");
}

TEST(CsvReader, CrlfBomBlankLinesAndNoFinalNewline) {
  Table table = Parse(
      "\xEF\xBB\xBF"
      "a,b\r\n1,x\r\n\r\n2,\"y\"\r\n3,z");
  ASSERT_EQ(table.num_rows(), 3);
  EXPECT_EQ(table.column(0).name(), "a");
  EXPECT_EQ(table.column(1).name(), "b");
  EXPECT_EQ(table.column(1).CellText(0), "x");
  EXPECT_EQ(table.column(1).CellText(1), "y");
  EXPECT_EQ(table.column(1).CellText(2), "z");
}

TEST(CsvReader, SniffsDelimiters) {
  CsvReadStats stats;
  Table tsv = ParseCsv("a\tb\tc\n1\t2,5\t3\n4\t5\t6\n", "t.tsv", {}, &stats);
  EXPECT_EQ(stats.delimiter, '\t');
  EXPECT_EQ(tsv.num_columns(), 3);
  EXPECT_EQ(tsv.column(1).type(), ColumnType::kCategorical);  // "2,5" is not a number
  Table semicolon = Parse("a;b\n1,5;2\n3;4\n");
  EXPECT_EQ(semicolon.num_columns(), 2);
  Table single = Parse("only\n1\n2\n");
  EXPECT_EQ(single.num_columns(), 1);
  EXPECT_EQ(single.num_rows(), 2);
}

TEST(CsvReader, NoHeaderNamesColumnsByPosition) {
  CsvOptions options;
  options.header = false;
  Table table = Parse("1,a\n2,b\n", options);
  EXPECT_EQ(table.num_rows(), 2);
  EXPECT_EQ(table.column(0).name(), "0");
  EXPECT_EQ(table.column(1).name(), "1");
}

TEST(CsvReader, ValueAfterTheTypeSampleTurnsColumnIntoStrings) {
  CsvOptions options;
  options.type_sample_rows = 2;
  Table table = Parse("x,y\n1,2024-01-01\n2,2024-01-02\nthree,later\n", options);
  EXPECT_EQ(table.column(0).type(), ColumnType::kCategorical);
  EXPECT_EQ(table.column(0).CellText(0), "1");
  EXPECT_EQ(table.column(0).CellText(2), "three");
  EXPECT_EQ(table.column(1).type(), ColumnType::kCategorical);
  EXPECT_EQ(table.column(1).CellText(2), "later");
}

TEST(CsvReader, TextVersusCategorical) {
  std::string text = "review,grade\n";
  for (int row = 0; row < 300; ++row) {
    text += "\"item " + std::to_string(row) + " was rather good\"," +
            std::string(1, static_cast<char>('A' + row % 3)) + "\n";
  }
  Table table = Parse(text);
  EXPECT_EQ(table.column(0).type(), ColumnType::kText);
  EXPECT_EQ(table.column(1).type(), ColumnType::kCategorical);
}

// A table big enough to be cut into many chunks, with quoted newlines and delimiters, blank
// lines and missing values: every thread count must give the same cells.
std::string GenerateMixedCsv(int rows) {
  std::mt19937 random(7);
  std::string text = "n,cat,quoted,flag\n";
  for (int row = 0; row < rows; ++row) {
    text += fmt::format("{}.{},c{},", random() % 100000, row % 10, random() % 50);
    switch (row % 4) {
      case 0:
        text += fmt::format("\"line one\nline two, {}\"", row);
        break;
      case 1:
        text += fmt::format("\"say \"\"{}\"\"\"", row);
        break;
      case 2:
        break;
      default:
        text += fmt::format("w{}", row);
    }
    text += row % 7 == 0 ? ",True\n" : ",False\n";
    if (row % 1000 == 0) text += "\n";
  }
  return text;
}

TEST(CsvReader, ParallelParseEqualsSequential) {
  const std::string text = GenerateMixedCsv(80000);
  ASSERT_GT(text.size(), 2u << 20);
  CsvOptions one;
  one.num_threads = 1;
  CsvOptions many;
  many.num_threads = 4;
  CsvReadStats stats;
  Table sequential = ParseCsv(text, "mixed.csv", one);
  Table parallel = ParseCsv(text, "mixed.csv", many, &stats);
  EXPECT_GT(stats.chunks, 1);
  EXPECT_FALSE(stats.sequential_fallback);
  ASSERT_EQ(sequential.num_rows(), 80000);
  ASSERT_EQ(parallel.num_rows(), 80000);
  for (int column = 0; column < sequential.num_columns(); ++column) {
    ASSERT_EQ(sequential.column(column).type(), parallel.column(column).type());
    for (std::int64_t row = 0; row < sequential.num_rows(); row += 97) {
      ASSERT_EQ(sequential.column(column).CellText(row), parallel.column(column).CellText(row))
          << "column " << column << " row " << row;
    }
  }
  // Dictionary codes follow first appearance in the file, whatever the chunking.
  EXPECT_EQ(sequential.column(1).codes(), parallel.column(1).codes());
  EXPECT_EQ(parallel.column(2).CellText(0), "line one\nline two, 0");
  EXPECT_EQ(parallel.column(2).CellText(1), "say \"1\"");
}

TEST(CsvReader, StrayQuotesInUnquotedFieldsFallBackToSequential) {
  // Inch marks inside unquoted fields are literal; they confuse quote-parity chunking, which
  // the reader detects and then parses on one thread.
  std::string text = "height,name\n";
  for (int row = 0; row < 40000; ++row) {
    text += "5'" + std::to_string(row % 12) + "\",person number " + std::to_string(row) + "\n";
  }
  CsvOptions options;
  options.num_threads = 4;
  CsvReadStats stats;
  Table table = ParseCsv(text, "stray.csv", options, &stats);
  ASSERT_EQ(table.num_rows(), 40000);
  EXPECT_EQ(table.column(0).CellText(13), "5'1\"");
  EXPECT_EQ(table.column(1).CellText(39999), "person number 39999");
}

TEST(CsvReader, RaggedRowsNameTheLine) {
  std::string fewer = ParseError("a,b,c\n1,2,3\n4,5\n");
  EXPECT_NE(fewer.find("test.csv: line 3"), std::string::npos) << fewer;
  EXPECT_NE(fewer.find("2 field(s) but the header has 3"), std::string::npos) << fewer;
  std::string more = ParseError("a,b\n1,2\n3,4\n5,6,7\n");
  EXPECT_NE(more.find("line 4"), std::string::npos) << more;
  EXPECT_NE(more.find("more than the 2 fields"), std::string::npos) << more;
  // The line number counts physical lines, also across quoted newlines.
  std::string after_quoted = ParseError("a,b\n\"x\ny\",1\n2\n");
  EXPECT_NE(after_quoted.find("line 4"), std::string::npos) << after_quoted;
}

TEST(CsvReader, UnterminatedQuoteNamesLineAndColumn) {
  std::string message = ParseError("a,b\n1,x\n2,\"open\n3,y\n");
  EXPECT_NE(message.find("line 3, column 2 ('b')"), std::string::npos) << message;
  EXPECT_NE(message.find("closing quote is missing"), std::string::npos) << message;
  std::string junk = ParseError("a,b\n1,\"x\"y\n");
  EXPECT_NE(junk.find("after the closing quote"), std::string::npos) << junk;
}

TEST(CsvReader, EmptyHeaderOnlyAndDuplicateNames) {
  EXPECT_NE(ParseError("").find("the file is empty"), std::string::npos);
  EXPECT_NE(ParseError("\n\r\n").find("the file is empty"), std::string::npos);
  EXPECT_NE(ParseError("a,b,c\n").find("header row but no data rows"), std::string::npos);
  std::string duplicate = ParseError("a,b,a\n1,2,3\n");
  EXPECT_NE(duplicate.find("'a' appears twice (columns 1 and 3)"), std::string::npos) << duplicate;
}

TEST(CsvReader, InvalidUtf8NamesLineAndColumn) {
  std::string message = ParseError("name,city\nx,Paris\ny,\"two\nlines\"\nz,Caf\xE9\n");
  EXPECT_NE(message.find("line 5, column 2 ('city')"), std::string::npos) << message;
  EXPECT_NE(message.find("not valid UTF-8 (byte 0xE9)"), std::string::npos) << message;
  EXPECT_NE(ParseError("n\xFFme,b\n1,2\n").find("column name 1"), std::string::npos);
}

TEST(CsvReader, ReadsGzipByContentNotName) {
  std::string dir = testing::TempDir("gzip");
  std::string csv = "a,b\n1,x\n2,y\n";
  testing::WriteFile(dir + "/plain_name.csv", Gzip(csv));
  Table table = ReadCsv(dir + "/plain_name.csv");
  EXPECT_EQ(table.num_rows(), 2);
  EXPECT_EQ(table.column(1).CellText(1), "y");
  // Two concatenated gzip members are one valid stream.
  testing::WriteFile(dir + "/two.gz", Gzip("a,b\n1,x\n") + Gzip("2,y\n"));
  EXPECT_EQ(ReadCsv(dir + "/two.gz").num_rows(), 2);
  std::string truncated = Gzip(csv);
  truncated.resize(truncated.size() / 2);
  testing::WriteFile(dir + "/broken.csv.gz", truncated);
  try {
    ReadCsv(dir + "/broken.csv.gz");
    FAIL() << "a truncated gzip file was accepted";
  } catch (const IoError& error) {
    EXPECT_NE(std::string(error.what()).find("broken.csv.gz"), std::string::npos);
  }
}

TEST(CsvReader, MissingFileIsAnIoError) {
  try {
    ReadCsv("/nonexistent/folder/train.csv");
    FAIL();
  } catch (const IoError& error) {
    EXPECT_NE(std::string(error.what()).find("no such file"), std::string::npos);
  }
}

// Serves one HTTP response on 127.0.0.1 for the URL tests.
class OneShotHttpServer {
 public:
  OneShotHttpServer(std::string status, std::string body) {
    listener_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    address.sin_port = 0;
    EXPECT_EQ(::bind(listener_, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
    EXPECT_EQ(::listen(listener_, 1), 0);
    socklen_t length = sizeof(address);
    ::getsockname(listener_, reinterpret_cast<sockaddr*>(&address), &length);
    port_ = ntohs(address.sin_port);
    thread_ = std::thread([this, status = std::move(status), body = std::move(body)] {
      int connection = ::accept(listener_, nullptr, nullptr);
      if (connection < 0) return;
      char request[4096];
      [[maybe_unused]] ssize_t got = ::recv(connection, request, sizeof(request), 0);
      std::string response = "HTTP/1.1 " + status +
                             "\r\nContent-Length: " + std::to_string(body.size()) +
                             "\r\nConnection: close\r\n\r\n" + body;
      [[maybe_unused]] ssize_t sent = ::send(connection, response.data(), response.size(), 0);
      ::close(connection);
    });
  }
  ~OneShotHttpServer() {
    thread_.join();
    ::close(listener_);
  }
  std::string Url(const std::string& path) const {
    return "http://127.0.0.1:" + std::to_string(port_) + path;
  }

 private:
  int listener_ = -1;
  int port_ = 0;
  std::thread thread_;
};

TEST(CsvReader, ReadsGzipFromUrl) {
  OneShotHttpServer server("200 OK", Gzip("a,b\n1,x\n2,y\n3,z\n"));
  Table table = ReadCsv(server.Url("/datasets/train.csv"));
  EXPECT_EQ(table.num_rows(), 3);
  EXPECT_EQ(table.column(1).CellText(2), "z");
}

TEST(CsvReader, UrlErrorsNameTheUrl) {
  {
    OneShotHttpServer server("404 Not Found", "no");
    std::string url = server.Url("/missing.csv");
    try {
      ReadCsv(url);
      FAIL();
    } catch (const IoError& error) {
      EXPECT_NE(std::string(error.what()).find(url), std::string::npos) << error.what();
      EXPECT_NE(std::string(error.what()).find("404"), std::string::npos) << error.what();
    }
  }
  // Port 9 (discard) on loopback has no listener: the connection is refused at once.
  try {
    ReadCsv("http://127.0.0.1:9/train.csv");
    FAIL();
  } catch (const IoError& error) {
    EXPECT_NE(std::string(error.what()).find("cannot download 'http://127.0.0.1:9/train.csv'"),
              std::string::npos)
        << error.what();
  }
}

}  // namespace
}  // namespace tabforge::data

namespace tabforge::data {
namespace {

// Property: on arbitrary CSV-like bytes the reader either throws InvalidInput or returns a
// table, never crashes, and the result does not depend on the thread count or the chunking.
TEST(CsvReaderProperty, RandomInputsParseTheSameOnOneAndManyThreads) {
  std::mt19937 random(20261202);
  const std::string alphabet = "ab1.5,,,\"\"\n\n\r -?xNA\t;e9\xC3\xA9";
  int parsed = 0;
  for (int trial = 0; trial < 300; ++trial) {
    std::string text = "c1,c2,c3\n";
    const int length = 200000 + static_cast<int>(random() % 200000);  // > 1 chunk at 4 threads
    if (trial % 2 == 0) {
      // Unstructured bytes: mostly errors, which must be the same error.
      for (int at = 0; at < length; ++at) text.push_back(alphabet[random() % alphabet.size()]);
    } else {
      // Well-formed records of random fields (quoted ones with delimiters, quotes and line
      // breaks inside), blank lines and CRLF, with a rare defect.
      const char* fields[] = {"1.5",
                              "-2",
                              "",
                              "NA",
                              "abc",
                              "\"x,y\"",
                              "\"say \"\"hi\"\"\"",
                              "\"two\nlines\"",
                              " ?",
                              "True",
                              "2024-02-29",
                              "e9"};
      while (static_cast<int>(text.size()) < length) {
        for (int field = 0; field < 3; ++field) {
          if (field > 0) text += ',';
          text += fields[random() % 12];
        }
        unsigned ending = random() % 100;
        text += ending < 10                      ? "\r\n"
                : ending < 12                    ? "\n\n"
                : ending == 99 && trial % 7 == 0 ? ",\n"
                                                 : "\n";
      }
    }
    CsvOptions one;
    one.num_threads = 1;
    CsvOptions four;
    four.num_threads = 4;
    std::string first_error, second_error;
    Table first, second;
    try {
      first = ParseCsv(text, "random.csv", one);
    } catch (const InvalidInput& error) {
      first_error = error.what();
    }
    try {
      second = ParseCsv(text, "random.csv", four);
    } catch (const InvalidInput& error) {
      second_error = error.what();
    }
    ASSERT_EQ(first_error, second_error) << "trial " << trial;
    if (!first_error.empty()) continue;
    ++parsed;
    ASSERT_EQ(first.num_rows(), second.num_rows()) << "trial " << trial;
    for (int column = 0; column < first.num_columns(); ++column) {
      for (std::int64_t row = 0; row < first.num_rows(); ++row) {
        ASSERT_EQ(first.column(column).CellText(row), second.column(column).CellText(row))
            << "trial " << trial << " column " << column << " row " << row;
      }
    }
  }
  // The structured half parses, except the trials given a defect.
  EXPECT_GT(parsed, 100);
}

}  // namespace
}  // namespace tabforge::data
