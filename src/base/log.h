// Logging through spdlog. Use the STRATA_LOG_* macros (fmt-style format
// strings). Logs go to stderr; the level comes from STRATA_LOG (trace, debug,
// info, warn, error, off; default warn) or SetLogLevel().
#pragma once

#include <spdlog/spdlog.h>

#include <string_view>

namespace strata {
void SetLogLevel(std::string_view level);  // unknown names leave it unchanged
void InitLoggingFromEnv();
}  // namespace strata

#define STRATA_LOG_DEBUG(...) ::spdlog::debug(__VA_ARGS__)
#define STRATA_LOG_INFO(...) ::spdlog::info(__VA_ARGS__)
#define STRATA_LOG_WARN(...) ::spdlog::warn(__VA_ARGS__)
#define STRATA_LOG_ERROR(...) ::spdlog::error(__VA_ARGS__)
