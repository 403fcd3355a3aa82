// `strata plan --config FILE.yaml`: a YAML document with the same fields as
// the JSON one (input.h), read with libyaml into the same JSON value.
// Plain scalars become numbers, true/false or null when they read as such
// (YAML 1.2 core schema); quoted scalars stay strings. Anchors, aliases and
// tags are refused, as are documents nested deeper than 32 or with more than
// one document. Errors carry the line.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "base/status.h"

namespace strata::plan {

struct YamlDocument {
  nlohmann::json doc;
  std::map<std::string, int> lines;  // dotted field path ("store.preset", "dataset.histogram[2].le") -> line
};

Result<YamlDocument> ParseYaml(std::string_view text);

// A field error from InputFromJson ("store.first_byte_latency: expected ...")
// with the line of that field in front ("line 4: store.first_byte_latency: ...").
std::string WithLine(const YamlDocument& yaml, const std::string& message);

}  // namespace strata::plan
