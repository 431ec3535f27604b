// Serialization of the fitted feature pipeline: a header line with the format name and
// version, the sizes, a JSON document of options, decisions and per-column state, one
// length-prefixed section per n-gram vocabulary, and a checksum line over all of it.
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/serialize.h"
#include "data/source.h"
#include "features/column_transform.h"
#include "features/pipeline.h"

namespace tabforge::features {
namespace {

using data::ColumnType;

constexpr std::string_view kFormat = "tabforge-features";
constexpr int kFormatVersion = 1;

}  // namespace

std::string FeaturePipeline::Serialize() const {
  nlohmann::ordered_json document;
  document["options"] = {{"min_category_count", options_.min_category_count},
                         {"max_categories", options_.max_categories},
                         {"missing_indicator_min_rows", options_.missing_indicator_min_rows},
                         {"missing_indicator_min_shift", options_.missing_indicator_min_shift},
                         {"text_special_features", options_.text_special_features},
                         {"text_ngrams", options_.text_ngrams}};
  nlohmann::ordered_json decisions = nlohmann::ordered_json::array();
  for (const ColumnDecision& decision : decisions_) {
    decisions.push_back({{"column", decision.column},
                         {"input_type", static_cast<int>(decision.input_type)},
                         {"kept", decision.kept},
                         {"reason", decision.reason},
                         {"outputs", decision.outputs}});
  }
  document["decisions"] = decisions;
  nlohmann::ordered_json transforms = nlohmann::ordered_json::array();
  std::vector<std::string> blobs;
  for (const auto& transform : transforms_) {
    nlohmann::ordered_json entry = {{"column", transform->column},
                                    {"input_type", static_cast<int>(transform->input_type)},
                                    {"encoding", static_cast<int>(transform->encoding)},
                                    {"missing_indicator", transform->missing_indicator},
                                    {"categories", transform->categories},
                                    {"rare", transform->rare},
                                    {"has_time", transform->has_time},
                                    {"special", transform->special},
                                    {"ngrams", transform->ngrams}};
    if (transform->ngrams) {
      entry["blob"] = blobs.size();
      blobs.push_back(transform->vectorizer.Save());
    }
    transforms.push_back(entry);
  }
  document["transforms"] = transforms;
  std::string json = document.dump();
  std::string out =
      fmt::format("{} {}\n{} {}\n", kFormat, kFormatVersion, json.size(), blobs.size());
  out += json;
  for (const std::string& blob : blobs) {
    out += fmt::format("\n{}\n", blob.size());
    out += blob;
  }
  out += fmt::format("\nchecksum {:016x}\n", Fnv1a(out));
  return out;
}

FeaturePipeline FeaturePipeline::Deserialize(std::string_view bytes, const std::string& name) {
  auto corrupted = [&](std::string_view what) {
    return InvalidInput(fmt::format(
        "{}: the feature pipeline file is corrupted or truncated ({}); fit the model again or "
        "restore the model folder from a copy.",
        name, what));
  };
  const std::string header = fmt::format("{} ", kFormat);
  if (!bytes.starts_with(header)) throw corrupted("it does not start with the format name");
  std::size_t checksum_at = bytes.rfind("\nchecksum ");
  if (checksum_at == std::string_view::npos) throw corrupted("no checksum");
  std::uint64_t expected = 0;
  if (std::sscanf(std::string(bytes.substr(checksum_at + 10, 16)).c_str(), "%16llx",
                  reinterpret_cast<unsigned long long*>(&expected)) != 1 ||
      Fnv1a(bytes.substr(0, checksum_at)) != expected) {
    throw corrupted("checksum mismatch");
  }
  int version = 0;
  std::size_t json_size = 0, blob_count = 0;
  int consumed = 0;
  std::string head(bytes.substr(header.size(), 64));
  if (std::sscanf(head.c_str(), "%d\n%zu %zu\n%n", &version, &json_size, &blob_count, &consumed) !=
      3) {
    throw corrupted("bad header");
  }
  if (version != kFormatVersion) {
    throw InvalidInput(fmt::format(
        "{}: the feature pipeline was saved in format version {}, and this tabforge reads "
        "version {}; use the tabforge version that trained the model, or fit it again.",
        name, version, kFormatVersion));
  }
  std::size_t at = header.size() + static_cast<std::size_t>(consumed);
  if (at + json_size > checksum_at) throw corrupted("short document");
  nlohmann::json document = nlohmann::json::parse(bytes.substr(at, json_size), nullptr, false);
  if (document.is_discarded()) throw corrupted("unreadable document");
  at += json_size;
  std::vector<std::string_view> blobs;
  for (std::size_t blob = 0; blob < blob_count; ++blob) {
    std::size_t length = 0;
    int length_chars = 0;
    std::string length_text(bytes.substr(at, 32));
    if (std::sscanf(length_text.c_str(), "\n%zu\n%n", &length, &length_chars) != 1 ||
        at + length_chars + length > checksum_at) {
      throw corrupted("bad section");
    }
    at += static_cast<std::size_t>(length_chars);
    blobs.push_back(bytes.substr(at, length));
    at += length;
  }
  FeaturePipeline pipeline;
  try {
    const nlohmann::json& options = document.at("options");
    pipeline.options_.min_category_count = options.at("min_category_count");
    pipeline.options_.max_categories = options.at("max_categories");
    pipeline.options_.missing_indicator_min_rows = options.at("missing_indicator_min_rows");
    pipeline.options_.missing_indicator_min_shift = options.at("missing_indicator_min_shift");
    pipeline.options_.text_special_features = options.at("text_special_features");
    pipeline.options_.text_ngrams = options.at("text_ngrams");
    for (const nlohmann::json& entry : document.at("decisions")) {
      ColumnDecision decision;
      decision.column = entry.at("column");
      decision.input_type = static_cast<ColumnType>(entry.at("input_type").get<int>());
      decision.kept = entry.at("kept");
      decision.reason = entry.at("reason");
      decision.outputs = entry.at("outputs").get<std::vector<std::string>>();
      pipeline.decisions_.push_back(std::move(decision));
    }
    for (const nlohmann::json& entry : document.at("transforms")) {
      auto transform = std::make_unique<ColumnTransform>();
      transform->column = entry.at("column");
      transform->input_type = static_cast<ColumnType>(entry.at("input_type").get<int>());
      transform->encoding = static_cast<Encoding>(entry.at("encoding").get<int>());
      transform->missing_indicator = entry.at("missing_indicator");
      transform->categories = entry.at("categories").get<std::vector<std::string>>();
      transform->rare = entry.at("rare").get<std::vector<std::string>>();
      transform->has_time = entry.at("has_time");
      transform->special = entry.at("special");
      transform->ngrams = entry.at("ngrams");
      if (transform->ngrams) {
        std::size_t blob = entry.at("blob");
        if (blob >= blobs.size()) throw corrupted("missing n-gram section");
        transform->vectorizer = NgramVectorizer::Load(blobs[blob]);
      }
      transform->BuildLookup();
      pipeline.transforms_.push_back(std::move(transform));
    }
  } catch (const nlohmann::json::exception& error) {
    throw corrupted(error.what());
  }
  return pipeline;
}

void FeaturePipeline::Save(const std::string& path) const {
  WriteFileAtomically(path, Serialize());
}

FeaturePipeline FeaturePipeline::Load(const std::string& path) {
  data::ByteBuffer bytes = data::LoadSource(path);
  return Deserialize(bytes.view(), path);
}

}  // namespace tabforge::features
