#include "object/s3_config.h"

#include <arpa/inet.h>

#include <cctype>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <vector>

#include "net/http.h"
#include "net/uri.h"

namespace strata::object {
namespace {

constexpr size_t kMaxIniBytes = 1 << 20;
constexpr size_t kMaxIniLine = 4096;

std::string_view TrimWs(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

Status IniError(size_t line_no, std::string_view what) {
  return InvalidArgumentError("AWS config line " + std::to_string(line_no) + ": " + std::string(what));
}

Result<std::string> ReadRealFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFoundError("cannot open " + path);
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return IOError("cannot read " + path);
  return ss.str();
}

bool ParseBool(std::string_view v, bool* out) {
  std::string l = Lower(v);
  if (l == "1" || l == "true" || l == "yes" || l == "on") return *out = true, true;
  if (l == "0" || l == "false" || l == "no" || l == "off") return *out = false, true;
  return false;
}

bool ParseUint(std::string_view v, uint64_t max, uint64_t* out) {
  if (v.empty() || v.size() > 19) return false;
  uint64_t x = 0;
  for (char c : v) {
    if (c < '0' || c > '9') return false;
    x = x * 10 + static_cast<uint64_t>(c - '0');
  }
  if (x > max) return false;
  *out = x;
  return true;
}

// Lenient on purpose (legacy and non-AWS servers allow more than today's
// AWS rules); only what cannot appear in a URL path segment is refused.
bool ValidBucket(std::string_view b) {
  if (b.empty() || b.size() > 255) return false;
  for (char c : b) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_')) return false;
  }
  return true;
}

bool IsIpAddress(std::string_view host) {
  if (!host.empty() && host.front() == '[') return true;  // IPv6 literal
  in_addr a4;
  return inet_pton(AF_INET, std::string(host).c_str(), &a4) == 1;
}

// A bucket usable as a DNS label under virtual-hosted addressing.
bool DnsCompatibleBucket(std::string_view b) {
  if (b.size() < 3 || b.size() > 63) return false;
  for (char c : b) {
    if (!(std::islower(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c)) || c == '-' ||
          c == '.')) {
      return false;
    }
  }
  return b.front() != '-' && b.back() != '-';
}

// The profile section of the config file is "[profile x]" except for default.
const std::map<std::string, std::string>* FindProfile(const AwsIni& ini, const std::string& profile, bool config_file) {
  auto it = ini.find(profile);
  if (config_file && profile != "default") it = ini.find("profile " + profile);
  if (config_file && it == ini.end()) it = ini.find(profile);
  if (config_file && it == ini.end()) it = ini.find("profile " + profile);
  return it == ini.end() ? nullptr : &it->second;
}

std::string Get(const std::map<std::string, std::string>* section, const std::string& key) {
  if (!section) return {};
  auto it = section->find(key);
  return it == section->end() ? std::string() : it->second;
}

struct UrlParams {
  std::optional<std::string> endpoint, region, profile;
  std::optional<S3Addressing> addressing;
  std::optional<uint64_t> part_size, concurrency, max_retries;
  std::optional<bool> verify_tls;
};

Status ParseParams(std::string_view query, std::string_view url, UrlParams* p) {
  if (query.empty()) return Status::Ok();
  STRATA_ASSIGN_OR_RETURN(auto pairs, net::ParseQueryString(query, /*plus_is_space=*/false));
  auto bad = [&](const std::string& k, const std::string& v) {
    return InvalidArgumentError("bad value '" + v + "' for '" + k + "' in " + std::string(url));
  };
  for (const auto& [k, v] : pairs) {
    uint64_t n = 0;
    bool b = false;
    if (k == "endpoint") {
      p->endpoint = v;
    } else if (k == "region") {
      p->region = v;
    } else if (k == "profile") {
      p->profile = v;
    } else if (k == "path_style") {
      if (!ParseBool(v, &b)) return bad(k, v);
      p->addressing = b ? S3Addressing::kPath : S3Addressing::kVirtual;
    } else if (k == "addressing") {
      if (v == "path")
        p->addressing = S3Addressing::kPath;
      else if (v == "virtual")
        p->addressing = S3Addressing::kVirtual;
      else if (v == "auto")
        p->addressing = S3Addressing::kAuto;
      else
        return bad(k, v);
    } else if (k == "part_size") {
      if (!ParseUint(v, 5ull << 30, &n) || n < 1) return bad(k, v);
      p->part_size = n;
    } else if (k == "concurrency") {
      if (!ParseUint(v, 1024, &n) || n < 1) return bad(k, v);
      p->concurrency = n;
    } else if (k == "max_retries") {
      if (!ParseUint(v, 100, &n)) return bad(k, v);
      p->max_retries = n;
    } else if (k == "verify_tls") {
      if (!ParseBool(v, &b)) return bad(k, v);
      p->verify_tls = b;
    } else {
      return InvalidArgumentError("unknown parameter '" + k + "' in " + std::string(url) +
                                  " (known: endpoint, region, path_style, addressing, profile, part_size, "
                                  "concurrency, max_retries, verify_tls)");
    }
  }
  return Status::Ok();
}

// Loads and parses an optional file; a missing file is not an error.
Result<std::optional<AwsIni>> LoadIni(const ConfigEnv& env, const std::string& path) {
  if (path.empty()) return std::optional<AwsIni>();
  auto text = env.read_file(path);
  if (!text.ok()) {
    if (text.status().code() == Code::kNotFound) return std::optional<AwsIni>();
    return text.status();
  }
  auto ini = ParseAwsIni(*text);
  if (!ini.ok()) return ini.status().WithContext(path);
  return std::optional<AwsIni>(std::move(*ini));
}

}  // namespace

Result<AwsIni> ParseAwsIni(std::string_view text) {
  if (text.size() > kMaxIniBytes) return InvalidArgumentError("AWS config file larger than 1 MiB");
  AwsIni ini;
  std::string section;
  bool in_section = false;
  std::string parent_key;  // a "key =" with an empty value opens nested sub-keys
  size_t line_no = 0;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string_view raw = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    ++line_no;
    if (raw.size() > kMaxIniLine) return IniError(line_no, "line longer than 4096 bytes");
    bool indented = !raw.empty() && (raw.front() == ' ' || raw.front() == '\t');
    std::string_view line = TrimWs(raw);
    if (line.empty() || line.front() == '#' || line.front() == ';') continue;
    if (line.front() == '[') {
      if (line.back() != ']') return IniError(line_no, "section header without ']'");
      section = std::string(TrimWs(line.substr(1, line.size() - 2)));
      if (section.empty()) return IniError(line_no, "empty section name");
      // "[profile   x]" is "profile x".
      if (section.rfind("profile", 0) == 0 && section.size() > 7 &&
          std::isspace(static_cast<unsigned char>(section[7]))) {
        section = "profile " + std::string(TrimWs(std::string_view(section).substr(7)));
      }
      ini[section];
      in_section = true;
      parent_key.clear();
      continue;
    }
    if (!in_section) return IniError(line_no, "key outside of any [section]");
    size_t eq = line.find('=');
    if (eq == std::string_view::npos) return IniError(line_no, "expected 'key = value'");
    std::string key = Lower(TrimWs(line.substr(0, eq)));
    std::string value(TrimWs(line.substr(eq + 1)));
    if (key.empty()) return IniError(line_no, "empty key");
    if (indented && !parent_key.empty()) {
      ini[section][parent_key + "." + key] = value;
      continue;
    }
    parent_key = value.empty() ? key : std::string();
    ini[section][key] = value;
  }
  return ini;
}

const ConfigEnv& ConfigEnv::Process() {
  static const ConfigEnv env{[](std::string_view name) -> std::optional<std::string> {
                               const char* v = std::getenv(std::string(name).c_str());
                               if (!v) return std::nullopt;
                               return std::string(v);
                             },
                             ReadRealFile};
  return env;
}

ConfigEnv ConfigEnv::FromMaps(std::map<std::string, std::string> vars, std::map<std::string, std::string> files) {
  return ConfigEnv{[vars = std::move(vars)](std::string_view name) -> std::optional<std::string> {
                     auto it = vars.find(std::string(name));
                     if (it == vars.end()) return std::nullopt;
                     return it->second;
                   },
                   [files = std::move(files)](const std::string& path) -> Result<std::string> {
                     auto it = files.find(path);
                     if (it == files.end()) return NotFoundError("no file " + path);
                     return it->second;
                   }};
}

namespace {
Result<S3Config> ConfigFromUrl(std::string_view url, const ConfigEnv& env, bool whole_endpoint) {
  constexpr std::string_view kScheme = "s3://";
  if (url.substr(0, kScheme.size()) != kScheme) {
    return InvalidArgumentError("not an s3:// URL: " + std::string(url));
  }
  std::string_view rest = url.substr(kScheme.size());
  std::string_view query;
  if (size_t q = rest.find('?'); q != std::string_view::npos) {
    query = rest.substr(q + 1);
    rest = rest.substr(0, q);
  }
  size_t slash = rest.find('/');
  std::string bucket(rest.substr(0, slash));
  std::string prefix;
  if (slash != std::string_view::npos && !net::UriDecode(rest.substr(slash + 1), &prefix)) {
    return InvalidArgumentError("malformed percent-escape in the prefix of " + std::string(url));
  }
  if (whole_endpoint) {
    if (!bucket.empty() || slash != std::string_view::npos) {
      return InvalidArgumentError("expected s3://?endpoint=... (no bucket, no prefix) for a whole endpoint, got " +
                                  std::string(url));
    }
  } else if (!ValidBucket(bucket)) {
    return InvalidArgumentError("bad bucket name '" + bucket + "' in " + std::string(url) +
                                " (letters, digits, '.', '-', '_')");
  }
  if (!prefix.empty() && prefix.back() != '/') prefix += '/';
  UrlParams params;
  STRATA_RETURN_IF_ERROR(ParseParams(query, url, &params));

  S3Config config;
  config.bucket = bucket;
  config.prefix = prefix;
  auto var = [&](std::string_view name) -> std::string {
    auto v = env.getenv(name);
    return v ? *v : std::string();
  };
  std::string home = var("HOME");
  std::string creds_path = var("AWS_SHARED_CREDENTIALS_FILE");
  if (creds_path.empty() && !home.empty()) creds_path = home + "/.aws/credentials";
  std::string config_path = var("AWS_CONFIG_FILE");
  if (config_path.empty() && !home.empty()) config_path = home + "/.aws/config";
  std::string profile = params.profile.value_or(var("AWS_PROFILE"));
  if (profile.empty()) profile = "default";

  STRATA_ASSIGN_OR_RETURN(auto creds_ini, LoadIni(env, creds_path));
  STRATA_ASSIGN_OR_RETURN(auto config_ini, LoadIni(env, config_path));
  const auto* creds_sec = creds_ini ? FindProfile(*creds_ini, profile, false) : nullptr;
  const auto* config_sec = config_ini ? FindProfile(*config_ini, profile, true) : nullptr;
  if (params.profile && !creds_sec && !config_sec) {
    return InvalidArgumentError("profile '" + profile + "' named in " + std::string(url) + " is in neither " +
                                creds_path + " nor " + config_path);
  }

  // Credentials: explicit URL profile, else variables, else the profile.
  net::AwsCredentials c;
  bool from_vars = !params.profile && !var("AWS_ACCESS_KEY_ID").empty() && !var("AWS_SECRET_ACCESS_KEY").empty();
  if (from_vars) {
    c = {var("AWS_ACCESS_KEY_ID"), var("AWS_SECRET_ACCESS_KEY"), var("AWS_SESSION_TOKEN")};
  } else {
    for (const auto* sec : {creds_sec, config_sec}) {
      if (!Get(sec, "aws_access_key_id").empty() && !Get(sec, "aws_secret_access_key").empty()) {
        c = {Get(sec, "aws_access_key_id"), Get(sec, "aws_secret_access_key"), Get(sec, "aws_session_token")};
        break;
      }
    }
  }
  if (c.access_key_id.empty()) {
    auto describe = [](const std::string& path, const auto& ini) {
      return path.empty() ? std::string("(no HOME)") : path + (ini ? "" : " (not found)");
    };
    return UnauthenticatedError("no S3 credentials for " + std::string(url) + ": tried " +
                                    (params.profile ? std::string() : "AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, ") +
                                    "profile '" + profile + "' in " + describe(creds_path, creds_ini) + " and " +
                                    describe(config_path, config_ini),
                                "NoCredentials");
  }
  config.credentials = c;

  std::string region = params.region.value_or("");
  if (region.empty()) region = var("AWS_REGION");
  if (region.empty()) region = var("AWS_DEFAULT_REGION");
  if (region.empty()) region = Get(config_sec, "region");
  if (!region.empty()) config.region = region;

  std::string endpoint = params.endpoint.value_or("");
  if (endpoint.empty()) endpoint = var("AWS_ENDPOINT_URL_S3");
  if (endpoint.empty()) endpoint = var("AWS_ENDPOINT_URL");
  if (endpoint.empty()) endpoint = Get(config_sec, "s3.endpoint_url");
  if (endpoint.empty()) endpoint = Get(config_sec, "endpoint_url");
  while (!endpoint.empty() && endpoint.back() == '/') endpoint.pop_back();
  config.endpoint = endpoint;

  std::string style = Get(config_sec, "s3.addressing_style");
  if (style == "path") config.addressing = S3Addressing::kPath;
  if (style == "virtual") config.addressing = S3Addressing::kVirtual;
  if (params.addressing) config.addressing = *params.addressing;
  if (params.part_size) config.part_size = *params.part_size;
  if (params.concurrency) config.concurrency = static_cast<int>(*params.concurrency);
  if (params.max_retries) config.max_retries = static_cast<int>(*params.max_retries);
  if (params.verify_tls) config.verify_tls = *params.verify_tls;
  STRATA_RETURN_IF_ERROR(ResolveS3Endpoint(config).status());
  return config;
}
}  // namespace

Result<S3Config> S3ConfigFromUrl(std::string_view url, const ConfigEnv& env) {
  return ConfigFromUrl(url, env, /*whole_endpoint=*/false);
}

Result<S3Config> S3EndpointConfigFromUrl(std::string_view url, const ConfigEnv& env) {
  return ConfigFromUrl(url, env, /*whole_endpoint=*/true);
}

std::string S3ConfigUrl(const S3Config& config) {
  std::string prefix = config.prefix;
  if (!prefix.empty() && prefix.back() == '/') prefix.pop_back();
  std::string url = "s3://" + config.bucket + (prefix.empty() ? "" : "/" + net::UriEncode(prefix, false));
  std::string q;
  auto add = [&](const std::string& k, const std::string& v) {
    q += (q.empty() ? "?" : "&") + k + "=" + net::UriEncode(v);
  };
  if (!config.endpoint.empty()) add("endpoint", config.endpoint);
  add("region", config.region);
  if (config.addressing == S3Addressing::kPath) add("path_style", "1");
  if (config.addressing == S3Addressing::kVirtual) add("path_style", "0");
  return url + q;
}

Result<S3Endpoint> ResolveS3Endpoint(const S3Config& config) {
  std::string endpoint = config.endpoint;
  bool custom = !endpoint.empty();
  if (!custom) endpoint = "https://s3." + config.region + ".amazonaws.com";
  auto parsed = net::ParseUrl(endpoint);
  if (!parsed.ok()) return parsed.status().WithContext("S3 endpoint '" + endpoint + "'");
  if (parsed->scheme != "http" && parsed->scheme != "https") {
    return InvalidArgumentError("S3 endpoint '" + endpoint + "' must be http:// or https://");
  }
  if (parsed->host.empty()) return InvalidArgumentError("S3 endpoint '" + endpoint + "' has no host");
  if (parsed->path != "/" && !parsed->path.empty()) {
    return InvalidArgumentError("S3 endpoint '" + endpoint + "' must not have a path");
  }
  bool path_style = true;
  if (config.bucket.empty()) {  // the endpoint itself (ListBuckets): no bucket in host or path
    S3Endpoint out;
    out.scheme = parsed->scheme;
    out.host_header = parsed->HostHeader();
    out.base_url = out.scheme + "://" + out.host_header;
    return out;
  }
  switch (config.addressing) {
    case S3Addressing::kPath: path_style = true; break;
    case S3Addressing::kVirtual: path_style = false; break;
    case S3Addressing::kAuto:
      path_style = custom && (IsIpAddress(parsed->host) || parsed->explicit_port || Lower(parsed->host) == "localhost");
      if (!DnsCompatibleBucket(config.bucket) || config.bucket.find('.') != std::string::npos) {
        path_style = true;  // dotted buckets break TLS wildcard certificates
      }
      break;
  }
  if (!path_style && !DnsCompatibleBucket(config.bucket)) {
    return InvalidArgumentError("bucket '" + config.bucket + "' cannot be used with virtual-hosted addressing");
  }
  S3Endpoint out;
  out.scheme = parsed->scheme;
  out.path_style = path_style;
  std::string host = parsed->HostHeader();
  out.host_header = path_style ? host : config.bucket + "." + host;
  out.base_url = out.scheme + "://" + out.host_header;
  out.bucket_path = path_style ? "/" + net::UriEncode(config.bucket) : "";
  return out;
}

}  // namespace strata::object
