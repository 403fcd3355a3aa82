// Fuzzes `strata plan`'s inputs end to end: any bytes as the plan document (JSON or YAML), a
// bench result or a profile give a report or an error naming the field, never
// a crash, an uncaught exception or undefined behaviour in the arithmetic.
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string_view>

#include "plan/input.h"
#include "plan/model.h"
#include "plan/yaml.h"

namespace {

void PlanAndFormat(const nlohmann::json& doc) {
  auto input = strata::plan::InputFromJson(doc);
  if (!input.ok()) return;
  auto report = strata::plan::MakePlan(*input);
  if (!report.ok()) return;
  (void)strata::plan::ToJson(*report).dump();
  (void)strata::plan::FormatReport(*report);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  // The first byte picks the role the rest plays, so one corpus reaches all four.
  if (text.empty()) return 0;
  const uint8_t role = static_cast<uint8_t>(text[0]) % 4;
  text.remove_prefix(1);
  if (role == 3) {  // the plan document as YAML
    auto yaml = strata::plan::ParseYaml(text);
    if (!yaml.ok()) return 0;
    auto input = strata::plan::InputFromJson(yaml->doc);
    if (!input.ok()) (void)strata::plan::WithLine(*yaml, input.status().message());
    PlanAndFormat(yaml->doc);
    return 0;
  }
  nlohmann::json parsed = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded()) return 0;
  if (role == 0) {
    PlanAndFormat(parsed);
    return 0;
  }
  nlohmann::json doc = {{"accelerators", {{"count", 8}, {"type", "h100"}}},
                        {"dataset", {{"bytes", "1TB"}, {"samples", 1000000}}},
                        {"store", {{"preset", "aws-s3-standard"}}}};
  const auto applied = role == 1 ? strata::plan::ApplyBench(parsed, "bench.json", &doc)
                                 : strata::plan::ApplyProfile(parsed, "profile.json", &doc);
  if (applied.ok()) PlanAndFormat(doc);
  return 0;
}
