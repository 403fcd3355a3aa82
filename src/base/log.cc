#include "base/log.h"

#include <spdlog/sinks/stdout_color_sinks.h>

#include <cstdlib>
#include <string>

namespace strata {

void SetLogLevel(std::string_view level) {
  auto parsed = spdlog::level::from_str(std::string(level));
  // from_str maps unknown names to "off"; only accept a real "off".
  if (parsed == spdlog::level::off && level != "off") return;
  spdlog::set_level(parsed);
}

void InitLoggingFromEnv() {
  static bool once = [] {
    auto logger = spdlog::stderr_color_mt("strata");
    logger->set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ %v");
    spdlog::set_default_logger(logger);
    spdlog::set_level(spdlog::level::warn);
    return true;
  }();
  (void)once;
  if (const char* env = std::getenv("STRATA_LOG")) SetLogLevel(env);
}

}  // namespace strata
