#include "data/source.h"

#include <curl/curl.h>
#include <fmt/format.h>
#include <zlib.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <mutex>
#include <system_error>
#include <vector>

#include "core/dynamic_library.h"
#include "core/error.h"

namespace tabforge::data {
namespace {

bool HasGzipMagic(std::string_view bytes) {
  return bytes.size() >= 2 && static_cast<unsigned char>(bytes[0]) == 0x1f &&
         static_cast<unsigned char>(bytes[1]) == 0x8b;
}

ByteBuffer ReadLocalFile(const std::string& path) {
  std::error_code error;
  if (!std::filesystem::exists(path, error)) {
    throw IoError(
        fmt::format("cannot read '{}': no such file. Check the path (relative paths "
                    "are taken from the current folder, {}).",
                    path, std::filesystem::current_path().string()));
  }
  if (std::filesystem::is_directory(path, error)) {
    throw IoError(fmt::format("cannot read '{}': it is a folder, not a file.", path));
  }
  std::FILE* file = std::fopen(path.c_str(), "rb");
  if (file == nullptr) {
    throw IoError(fmt::format("cannot open '{}': {}. Check that the file is readable.", path,
                              std::strerror(errno)));
  }
  std::uintmax_t expected = std::filesystem::file_size(path, error);
  if (error) expected = 0;
  // Files whose size is unknown up front (pipes, /proc) are read in growing steps.
  std::vector<char> spill;
  ByteBuffer buffer(static_cast<std::size_t>(expected));
  std::size_t got = std::fread(buffer.data(), 1, buffer.size(), file);
  bool failed = std::ferror(file) != 0;
  char probe[65536];
  std::size_t extra = 0;
  while (!failed && (extra = std::fread(probe, 1, sizeof(probe), file)) > 0) {
    spill.insert(spill.end(), probe, probe + extra);
  }
  failed = failed || std::ferror(file) != 0;
  std::fclose(file);
  if (failed) {
    throw IoError(fmt::format("error while reading '{}': {}", path, std::strerror(errno)));
  }
  if (spill.empty()) {
    buffer.Truncate(got);
    return buffer;
  }
  ByteBuffer whole(got + spill.size());
  std::memcpy(whole.data(), buffer.data(), got);
  std::memcpy(whole.data() + got, spill.data(), spill.size());
  return whole;
}

std::size_t AppendToVector(char* bytes, std::size_t size, std::size_t count, void* target) {
  auto* out = static_cast<std::vector<char>*>(target);
  out->insert(out->end(), bytes, bytes + size * count);
  return size * count;
}

// libcurl, opened on the first download: the headers give the types, the library is found at
// run time, so programs that never read a URL do not load it (and its TLS stack).
struct Curl {
  DynamicLibrary library;
  CURL* (*easy_init)() = nullptr;
  CURLcode (*easy_setopt)(CURL*, CURLoption, ...) = nullptr;
  CURLcode (*easy_perform)(CURL*) = nullptr;
  CURLcode (*easy_getinfo)(CURL*, CURLINFO, ...) = nullptr;
  void (*easy_cleanup)(CURL*) = nullptr;
  const char* (*easy_strerror)(CURLcode) = nullptr;
  std::string problem;  // why it cannot be used; empty when it can
};

const Curl& LoadCurl() {
  static Curl curl;
  static std::once_flag once;
  std::call_once(once, [] {
#if defined(_WIN32)
    const std::vector<std::string> names = {"libcurl-x64.dll", "libcurl.dll"};
#elif defined(__APPLE__)
    const std::vector<std::string> names = {"libcurl.4.dylib", "libcurl.dylib"};
#else
    const std::vector<std::string> names = {"libcurl.so.4", "libcurl.so"};
#endif
    curl.library = DynamicLibrary::Open(names);
    if (!curl.library.loaded()) {
      curl.problem = "the HTTP client library (libcurl) is not installed or cannot be loaded (" +
                     curl.library.error() +
                     "); install it (Debian/Ubuntu: apt-get install libcurl4) or download the "
                     "file and pass its path";
      return;
    }
    const bool complete = curl.library.Find(&curl.easy_init, "curl_easy_init") &&
                          curl.library.Find(&curl.easy_setopt, "curl_easy_setopt") &&
                          curl.library.Find(&curl.easy_perform, "curl_easy_perform") &&
                          curl.library.Find(&curl.easy_getinfo, "curl_easy_getinfo") &&
                          curl.library.Find(&curl.easy_cleanup, "curl_easy_cleanup") &&
                          curl.library.Find(&curl.easy_strerror, "curl_easy_strerror");
    if (!complete) {
      curl.problem = curl.library.name() +
                     " lacks the easy interface functions; install libcurl 7.17 or newer, or "
                     "download the file and pass its path";
    }
  });
  return curl;
}

ByteBuffer Download(const std::string& url) {
  const Curl& api = LoadCurl();
  if (!api.problem.empty()) {
    throw IoError(fmt::format("cannot download '{}': {}.", url, api.problem));
  }
  // curl_global_init is not thread-safe in old libcurl; curl_easy_init calls it when needed
  // and the CLI downloads from one thread.
  CURL* curl = api.easy_init();
  if (curl == nullptr) throw IoError("cannot start the HTTP client (libcurl) for " + url);
  std::vector<char> body;
  char error_text[CURL_ERROR_SIZE] = {0};
  api.easy_setopt(curl, CURLOPT_URL, url.c_str());
  api.easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 1L);
  api.easy_setopt(curl, CURLOPT_FAILONERROR, 1L);
  api.easy_setopt(curl, CURLOPT_CONNECTTIMEOUT, 20L);
  api.easy_setopt(curl, CURLOPT_LOW_SPEED_LIMIT, 1024L);
  api.easy_setopt(curl, CURLOPT_LOW_SPEED_TIME, 60L);
  api.easy_setopt(curl, CURLOPT_ERRORBUFFER, error_text);
  api.easy_setopt(curl, CURLOPT_WRITEFUNCTION, AppendToVector);
  api.easy_setopt(curl, CURLOPT_WRITEDATA, &body);
  api.easy_setopt(curl, CURLOPT_USERAGENT, "tabforge");
  CURLcode code = api.easy_perform(curl);
  long status = 0;
  api.easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
  api.easy_cleanup(curl);
  if (code != CURLE_OK) {
    std::string reason = error_text[0] ? error_text : api.easy_strerror(code);
    throw IoError(fmt::format(
        "cannot download '{}': {}. Check the address and the network connection (a proxy "
        "is taken from the https_proxy variable), or download the file and pass its path.",
        url, reason));
  }
  ByteBuffer buffer(body.size());
  if (!body.empty()) std::memcpy(buffer.data(), body.data(), body.size());
  return buffer;
}

}  // namespace

ByteBuffer::ByteBuffer(std::size_t size) : data_(new char[size + kPadding]), size_(size) {
  std::memset(data_.get() + size, 0, kPadding);
}

void ByteBuffer::Truncate(std::size_t size) {
  TFG_CHECK(size <= size_, "Truncate to {} beyond size {}", size, size_);
  size_ = size;
  std::memset(data_.get() + size, 0, kPadding);
}

bool IsUrl(std::string_view source) {
  return source.starts_with("http://") || source.starts_with("https://");
}

ByteBuffer Gunzip(std::string_view compressed, const std::string& name) {
  // The last member's trailer holds its size mod 2^32: a good first guess for one member.
  std::size_t guess = compressed.size() * 4;
  if (compressed.size() >= 18) {
    std::uint32_t trailer_size;
    std::memcpy(&trailer_size, compressed.data() + compressed.size() - 4, 4);
    if (trailer_size > compressed.size()) guess = trailer_size;
  }
  ByteBuffer out(guess + 1);
  std::size_t produced = 0;
  z_stream stream{};
  if (inflateInit2(&stream, 15 + 16) != Z_OK) {
    throw IoError("cannot start gzip decompression for '" + name + "'");
  }
  stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(compressed.data()));
  std::size_t consumed = 0;
  while (true) {
    if (produced == out.size()) {
      ByteBuffer bigger(out.size() * 2);
      std::memcpy(bigger.data(), out.data(), produced);
      out = std::move(bigger);
    }
    std::size_t in_chunk =
        std::min<std::size_t>(compressed.size() - consumed, std::numeric_limits<uInt>::max());
    std::size_t out_chunk =
        std::min<std::size_t>(out.size() - produced, std::numeric_limits<uInt>::max());
    stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(compressed.data() + consumed));
    stream.avail_in = static_cast<uInt>(in_chunk);
    stream.next_out = reinterpret_cast<Bytef*>(out.data() + produced);
    stream.avail_out = static_cast<uInt>(out_chunk);
    int status = inflate(&stream, Z_NO_FLUSH);
    consumed += in_chunk - stream.avail_in;
    produced += out_chunk - stream.avail_out;
    if (status == Z_STREAM_END) {
      // Another gzip member may follow (concatenated .gz files are valid gzip).
      if (consumed + 2 <= compressed.size() && HasGzipMagic(compressed.substr(consumed))) {
        inflateReset(&stream);
        continue;
      }
      break;
    }
    if (status == Z_BUF_ERROR && stream.avail_out == 0) continue;
    if (status != Z_OK) {
      std::string reason = stream.msg ? stream.msg : "unexpected end of data";
      inflateEnd(&stream);
      throw IoError(
          fmt::format("'{}' is not a valid gzip file ({} after {} input bytes); the "
                      "file may be truncated or corrupted: download it again.",
                      name, reason, consumed));
    }
    if (consumed == compressed.size() && stream.avail_out != 0) {
      inflateEnd(&stream);
      throw IoError(
          fmt::format("'{}' is a truncated gzip file (it ends after {} bytes, "
                      "before the end of the compressed stream); download it again.",
                      name, compressed.size()));
    }
  }
  inflateEnd(&stream);
  out.Truncate(produced);
  return out;
}

ByteBuffer LoadSource(const std::string& source) {
  ByteBuffer raw = IsUrl(source) ? Download(source) : ReadLocalFile(source);
  if (HasGzipMagic(raw.view())) return Gunzip(raw.view(), source);
  return raw;
}

}  // namespace tabforge::data
