#include "object/store_url.h"

#include <algorithm>
#include <charconv>

#include "net/uri.h"
#include "object/cloud_store.h"
#include "object/file_store.h"
#include "object/mem_store.h"
#include "object/prefix_store.h"
#include "object/s3_store.h"

namespace strata::object {
namespace {

Status BadUrl(std::string_view url, const std::string& why) {
  return InvalidArgumentError("bad store URL '" + std::string(url) + "': " + why +
                              " (expected file:///abs/dir, mem://name or s3://bucket/prefix)");
}

Status ParseParams(std::string_view url, std::string_view query, StoreUrl* out) {
  for (const net::RawQueryParam& p : net::SplitQuery(query)) {
    std::string name, value;
    if (!net::UriDecode(p.name, &name) || !net::UriDecode(p.value, &value)) {
      return BadUrl(url, "malformed %-escape in parameter '" + std::string(p.text) + "'");
    }
    if (name.empty()) return BadUrl(url, "a parameter has no name");
    for (const auto& [existing, v] : out->params) {
      if (existing == name) return BadUrl(url, "parameter '" + name + "' is given twice");
    }
    out->params.emplace_back(std::move(name), std::move(value));
  }
  return Status::Ok();
}

// Removes parameter `name` from `url`, returning its value if present.
std::optional<std::string> TakeParam(StoreUrl& url, std::string_view name) {
  for (auto it = url.params.begin(); it != url.params.end(); ++it) {
    if (it->first == name) {
      std::string value = std::move(it->second);
      url.params.erase(it);
      return value;
    }
  }
  return std::nullopt;
}

Status NoMoreParams(std::string_view url, const StoreUrl& parsed) {
  if (parsed.params.empty()) return Status::Ok();
  return BadUrl(url, "unknown parameter '" + parsed.params.front().first + "' for " + parsed.scheme + "://");
}

Result<ObjectStorePtr> OpenMem(std::string_view url, StoreUrl& parsed) {
  MemStoreOptions options;
  if (auto v = TakeParam(parsed, "min_part_size")) {
    auto [ptr, ec] = std::from_chars(v->data(), v->data() + v->size(), options.min_part_size);
    if (ec != std::errc() || ptr != v->data() + v->size() || v->empty()) {
      return BadUrl(url, "min_part_size '" + *v + "' is not a byte count");
    }
  }
  STRATA_RETURN_IF_ERROR(NoMoreParams(url, parsed));
  return MakePrefixStore(MakeMemStore(parsed.authority, options), parsed.path);
}

Result<ObjectStorePtr> OpenS3(std::string_view /*url*/, const StoreUrl& parsed) {
  // The S3 layer parses its own parameters; hand it the URL minus ours.
  std::string s3_url = "s3://" + parsed.authority;
  if (!parsed.path.empty()) s3_url += "/" + net::UriEncode(parsed.path, /*encode_slash=*/false);
  char sep = '?';
  for (const auto& [name, value] : parsed.params) {
    s3_url += sep + net::UriEncode(name) + "=" + net::UriEncode(value);
    sep = '&';
  }
  return OpenS3StoreFromUrl(s3_url);
}

}  // namespace

Result<StoreUrl> ParseStoreUrl(std::string_view url) {
  if (url.size() > 8192) return BadUrl(url.substr(0, 64), "longer than 8192 bytes");
  size_t sep = url.find("://");
  if (sep == std::string_view::npos) return BadUrl(url, "no scheme");
  StoreUrl out;
  out.scheme = std::string(url.substr(0, sep));
  if (out.scheme != "file" && out.scheme != "mem" && out.scheme != "s3") {
    return BadUrl(url, "unknown scheme '" + out.scheme + "'");
  }
  std::string_view rest = url.substr(sep + 3);
  if (rest.find('#') != std::string_view::npos) return BadUrl(url, "fragments ('#') are not allowed");
  size_t q = rest.find('?');
  if (q != std::string_view::npos) {
    STRATA_RETURN_IF_ERROR(ParseParams(url, rest.substr(q + 1), &out));
    rest = rest.substr(0, q);
  }
  size_t slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  std::string_view path = slash == std::string_view::npos ? std::string_view() : rest.substr(slash);
  if (!net::UriDecode(authority, &out.authority) || !net::UriDecode(path, &out.path)) {
    return BadUrl(url, "malformed %-escape");
  }
  if (out.path.find('\0') != std::string::npos || out.authority.find('\0') != std::string::npos) {
    return BadUrl(url, "contains a NUL byte");
  }
  if (out.scheme == "file") {
    if (!out.authority.empty() && out.authority != "localhost") {
      return BadUrl(url, "file URLs name a local absolute path: file:///abs/dir (got host '" + out.authority + "')");
    }
    out.authority.clear();
    if (out.path.empty()) return BadUrl(url, "no directory");
    return out;
  }
  if (out.authority.empty()) {
    return BadUrl(url, out.scheme == "s3" ? "no bucket name" : "no store name (mem://name)");
  }
  if (!out.path.empty()) out.path.erase(0, 1);  // the '/' after the authority
  return out;
}

Result<ObjectStorePtr> OpenStore(std::string_view url, Clock& clock) {
  STRATA_ASSIGN_OR_RETURN(StoreUrl parsed, ParseStoreUrl(url));
  std::optional<std::string> emulate = TakeParam(parsed, "emulate");
  std::optional<std::string> prefix = TakeParam(parsed, "prefix");
  std::optional<CloudProfile> profile;
  if (emulate) {
    auto p = ParseCloudProfile(*emulate);
    if (!p.ok()) return p.status().WithContext("store URL '" + std::string(url) + "'");
    profile = *p;
  }
  ObjectStorePtr store;
  if (parsed.scheme == "file") {
    STRATA_RETURN_IF_ERROR(NoMoreParams(url, parsed));
    FileStoreOptions file_options;
    file_options.clock = &clock;
    STRATA_ASSIGN_OR_RETURN(store, OpenFileStore(parsed.path, file_options));
  } else if (parsed.scheme == "mem") {
    STRATA_ASSIGN_OR_RETURN(store, OpenMem(url, parsed));
  } else {
    STRATA_ASSIGN_OR_RETURN(store, OpenS3(url, parsed));
  }
  if (prefix) store = MakePrefixStore(std::move(store), *prefix);
  if (profile) store = EmulateCloud(std::move(store), *profile, clock);
  return store;
}

Result<ObjectStorePtr> OpenStore(std::string_view url) { return OpenStore(url, RealClock()); }

UrlDirName SplitUrlDirName(std::string_view url, size_t before) {
  UrlDirName out;
  if (url.starts_with("s3://")) {
    const size_t q = url.find('?');
    if (q != std::string_view::npos) out.query = url.substr(q), url = url.substr(0, q);
  }
  const size_t slash = url.rfind('/', std::min(before, url.size()));
  if (slash == std::string_view::npos) {
    out.name = url;
  } else {
    out.dir = url.substr(0, slash);
    out.name = url.substr(slash + 1);
  }
  return out;
}

}  // namespace strata::object
