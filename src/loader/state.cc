// State's JSON, apart from the rest of the loader so the fuzz target builds it alone.
#include <nlohmann/json.hpp>

#include "loader/streaming_dataset.h"

namespace strata::loader {

std::string State::ToJson() const {
  return nlohmann::json{{"version", 2},
                        {"epoch", epoch},
                        {"samples_consumed", samples_consumed},
                        {"fingerprint", fingerprint},
                        {"streams", streams}}
      .dump();
}

Result<State> State::FromJson(std::string_view json) {
  auto j = nlohmann::json::parse(json, nullptr, /*allow_exceptions=*/false);
  auto bad = [&](const std::string& why) {
    return InvalidArgumentError("loader state: " + why + " (got: " + std::string(json.substr(0, 200)) + ")");
  };
  if (j.is_discarded() || !j.is_object()) return bad("not a JSON object");
  // Version 2: each of several streams keeps at least two windows (plan.h EpochOrder); one stream: as version 1.
  if (!j.contains("version") || !j["version"].is_number_integer() || j["version"].get<int64_t>() < 1 ||
      j["version"].get<int64_t>() > 2) {
    return bad("unsupported or missing \"version\" (expected 1 or 2)");
  }
  const bool version1 = j["version"].get<int64_t>() == 1;
  State s;
  for (const char* k : {"epoch", "samples_consumed"}) {
    if (!j.contains(k) || !j[k].is_number_unsigned())
      return bad(std::string("\"") + k + "\" must be an unsigned integer");
  }
  if (!j.contains("fingerprint") || !j["fingerprint"].is_string() || j["fingerprint"].get<std::string>().empty()) {
    // A saved state must say which dataset it is for; accepting none would resume any dataset.
    return bad("\"fingerprint\" must be the non-empty fingerprint of the dataset the state was saved from");
  }
  s.epoch = j["epoch"].get<uint64_t>();
  s.samples_consumed = j["samples_consumed"].get<uint64_t>();
  s.fingerprint = j["fingerprint"].get<std::string>();
  if (j.contains("streams")) {  // absent in states saved before streams: their order had one
    if (!j["streams"].is_number_unsigned() || j["streams"].get<uint64_t>() < 1 ||
        j["streams"].get<uint64_t>() > kMaxStreams) {
      return bad("\"streams\" must be an integer in [1, " + std::to_string(kMaxStreams) + "]");
    }
    s.streams = j["streams"].get<uint64_t>();
  }
  if (version1 && s.streams > 1) {
    return bad(
        "saved by an earlier strata, whose order with several DataLoader workers differs from this one's: "
        "resume it with that version, or start the epoch over");
  }
  return s;
}

}  // namespace strata::loader
