// JSON text from values that may hold strings from outside (file names, object keys, ETags,
// volume ids): nlohmann's plain dump() throws type_error 316 on bytes that are not UTF-8,
// which would end a request or the process. Header-only: its users link nlohmann_json.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace strata {

// `j` as JSON text (`indent` as dump()'s: -1 for one line); bytes that are not UTF-8 become
// U+FFFD instead of an exception.
template <typename Json>
std::string DumpJson(const Json& j, int indent = -1) {
  return j.dump(indent, ' ', false, Json::error_handler_t::replace);
}

}  // namespace strata
