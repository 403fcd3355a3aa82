#include "cli/url.h"

#include <algorithm>
#include <filesystem>
#include <system_error>

#include "dataset/shard_set.h"
#include "object/file_store.h"
#include "object/store_url.h"

namespace strata::cli {
namespace fs = std::filesystem;
namespace {

constexpr size_t kMaxUrlLength = 8192;
constexpr size_t kMaxKeyLength = 1024;

Status Malformed(std::string_view text, std::string_view why) {
  std::string shown(text.substr(0, 200));
  return InvalidArgumentError("malformed URL \"" + shown + "\": " + std::string(why));
}

bool IsNameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '-' || c == '_';
}

bool IsSchemeChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '+' || c == '.' || c == '-';
}

// Parses "<name>/<key>[?query]" after "s3://" or "mem://".
Status ParseBucketUrl(std::string_view text, std::string_view scheme, std::string_view rest, bool allow_query,
                      ObjectUrl* out) {
  std::string_view query;
  if (allow_query) {
    if (size_t q = rest.find('?'); q != std::string_view::npos) {
      query = rest.substr(q + 1);
      rest = rest.substr(0, q);
    }
  }
  size_t slash = rest.find('/');
  std::string_view name = rest.substr(0, slash);
  std::string_view key = slash == std::string_view::npos ? std::string_view() : rest.substr(slash + 1);
  std::string what = scheme == "s3" ? "bucket" : "store";
  if (name.empty()) {
    return Malformed(text, "no " + what + " name (expected " + std::string(scheme) + "://NAME/KEY)");
  }
  if (name.size() > 255) return Malformed(text, what + " name longer than 255 characters");
  for (char c : name) {
    if (!IsNameChar(c)) return Malformed(text, what + " name may contain only letters, digits, '.', '-' and '_'");
  }
  if (key.size() > kMaxKeyLength) return Malformed(text, "key longer than 1024 bytes");
  out->display = std::string(scheme) + "://" + std::string(name) + "/";
  out->store_url = std::string(scheme) + "://" + std::string(name);
  if (!query.empty()) out->store_url += "?" + std::string(query);
  out->key = std::string(key);
  out->trailing_slash = !key.empty() && key.back() == '/';
  return Status::Ok();
}

Status ParseLocalPath(std::string_view text, std::string_view path_text, ObjectUrl* out) {
  if (path_text.empty()) return Malformed(text, "empty path");
  out->trailing_slash = path_text.back() == '/' || path_text.ends_with("/.") || path_text == ".";
  std::error_code ec;
  fs::path path = fs::absolute(fs::path(std::string(path_text)), ec);
  if (ec) return InvalidArgumentError("cannot resolve local path \"" + std::string(path_text) + "\"", ec.message());
  std::string normal = path.lexically_normal().string();
  while (normal.size() > 1 && normal.back() == '/') normal.pop_back();
  out->path = std::move(normal);
  return Status::Ok();
}

std::string LocalBase(const std::string& dir) { return "file://" + dir + (dir == "/" ? "" : "/"); }

std::string ParentOf(const std::string& path) {
  std::string parent = fs::path(path).parent_path().string();
  return parent.empty() ? "/" : parent;
}

std::string FileNameOf(const std::string& path) { return fs::path(path).filename().string(); }

Result<Endpoint> LocalEndpoint(const std::string& dir, std::string key, bool create) {
  std::error_code ec;
  if (create) {
    fs::create_directories(dir, ec);
    if (ec) return ErrnoToStatus(ec.value(), "cannot create directory " + dir);
  } else if (!fs::is_directory(dir, ec)) {
    return NotFoundError("no such directory: " + dir);
  }
  STRATA_ASSIGN_OR_RETURN(object::ObjectStorePtr store, object::OpenFileStore(dir));
  return Endpoint{std::move(store), std::move(key), LocalBase(dir), dir};
}

Result<Endpoint> RemoteEndpoint(const ObjectUrl& url, std::string key) {
  STRATA_ASSIGN_OR_RETURN(object::ObjectStorePtr store, object::OpenStore(url.store_url));
  return Endpoint{std::move(store), std::move(key), url.display, ""};
}

std::string AsPrefix(std::string key) {
  if (!key.empty() && key.back() != '/') key += '/';
  return key;
}

bool IsDirectory(const std::string& path) {
  std::error_code ec;
  return fs::is_directory(path, ec);
}

}  // namespace

Result<ObjectUrl> ParseObjectUrl(std::string_view text) {
  if (text.empty()) return InvalidArgumentError("empty URL (expected s3://BUCKET/KEY, file:///PATH or a local path)");
  if (text.size() > kMaxUrlLength) return Malformed(text, "longer than 8192 characters");
  for (char c : text) {
    if (c == '\0' || c == '\n' || c == '\r') return Malformed(text, "contains a NUL or newline character");
  }
  ObjectUrl url;
  url.text = std::string(text);
  size_t sep = text.find("://");
  std::string_view scheme = sep == std::string_view::npos ? std::string_view() : text.substr(0, sep);
  bool scheme_ok = !scheme.empty() && std::all_of(scheme.begin(), scheme.end(), IsSchemeChar);
  if (!scheme_ok) {
    // A local path; catch the common typos of real schemes ("s3:/bucket").
    if (text.starts_with("s3:") || text.starts_with("file:") || text.starts_with("mem:")) {
      return Malformed(text, "expected \"://\" after the scheme (s3://BUCKET/KEY, file:///PATH, mem://NAME/KEY)");
    }
    url.kind = ObjectUrl::Kind::kFile;
    STRATA_RETURN_IF_ERROR(ParseLocalPath(text, text, &url));
    return url;
  }
  std::string_view rest = text.substr(sep + 3);
  if (scheme == "s3") {
    url.kind = ObjectUrl::Kind::kS3;
    STRATA_RETURN_IF_ERROR(ParseBucketUrl(text, "s3", rest, /*allow_query=*/true, &url));
  } else if (scheme == "mem") {
    url.kind = ObjectUrl::Kind::kMem;
    STRATA_RETURN_IF_ERROR(ParseBucketUrl(text, "mem", rest, /*allow_query=*/false, &url));
  } else if (scheme == "file") {
    url.kind = ObjectUrl::Kind::kFile;
    if (!rest.starts_with('/')) {
      return Malformed(text, "file URLs need an absolute path, e.g. file:///data/dir (three slashes)");
    }
    STRATA_RETURN_IF_ERROR(ParseLocalPath(text, rest, &url));
  } else {
    return Malformed(text,
                     "unsupported scheme \"" + std::string(scheme) + "\" (use s3://, file://, mem:// or a local path)");
  }
  return url;
}

std::string_view BaseName(std::string_view key) {
  while (!key.empty() && key.back() == '/') key.remove_suffix(1);
  size_t slash = key.rfind('/');
  return slash == std::string_view::npos ? key : key.substr(slash + 1);
}

Result<Endpoint> OpenObject(const ObjectUrl& url) {
  if (url.kind != ObjectUrl::Kind::kFile) {
    if (url.key.empty() || url.trailing_slash) {
      return InvalidArgumentError(url.text + " names a bucket or prefix, not an object (use --recursive for trees)");
    }
    return RemoteEndpoint(url, url.key);
  }
  if (url.path == "/" || url.trailing_slash || IsDirectory(url.path)) {
    return InvalidArgumentError(url.path + " is a directory (use --recursive for trees)");
  }
  std::string parent = ParentOf(url.path);
  if (!IsDirectory(parent)) return NotFoundError("no such file or directory: " + url.path);
  return LocalEndpoint(parent, FileNameOf(url.path), /*create=*/false);
}

Result<Endpoint> OpenTreeSource(const ObjectUrl& url) {
  if (url.kind != ObjectUrl::Kind::kFile) return RemoteEndpoint(url, AsPrefix(url.key));
  std::error_code ec;
  if (!fs::exists(url.path, ec)) return NotFoundError("no such file or directory: " + url.path);
  if (!fs::is_directory(url.path, ec)) return InvalidArgumentError(url.path + " is a file, not a directory");
  return LocalEndpoint(url.path, "", /*create=*/false);
}

Result<Endpoint> OpenTreeDestination(const ObjectUrl& url) {
  if (url.kind != ObjectUrl::Kind::kFile) return RemoteEndpoint(url, AsPrefix(url.key));
  std::error_code ec;
  if (fs::exists(url.path, ec) && !fs::is_directory(url.path, ec)) {
    return InvalidArgumentError(url.path + " exists and is not a directory");
  }
  return LocalEndpoint(url.path, "", /*create=*/true);
}

Result<Endpoint> OpenObjectDestination(const ObjectUrl& url, std::string_view basename) {
  if (url.kind != ObjectUrl::Kind::kFile) {
    std::string key = url.key;
    if (key.empty() || key.back() == '/') key += std::string(basename);
    return RemoteEndpoint(url, std::move(key));
  }
  if (url.trailing_slash || IsDirectory(url.path)) {
    return LocalEndpoint(url.path, std::string(basename), /*create=*/true);
  }
  return LocalEndpoint(ParentOf(url.path), FileNameOf(url.path), /*create=*/true);
}

Result<Endpoint> OpenListing(const ObjectUrl& url) {
  if (url.kind != ObjectUrl::Kind::kFile) return RemoteEndpoint(url, url.key);
  if (IsDirectory(url.path)) return LocalEndpoint(url.path, "", /*create=*/false);
  if (url.trailing_slash) return NotFoundError("no such directory: " + url.path);
  std::string parent = ParentOf(url.path);
  if (!IsDirectory(parent)) return NotFoundError("no such file or directory: " + url.path);
  return LocalEndpoint(parent, FileNameOf(url.path), /*create=*/false);
}

namespace {

// "s3://b/dir/name?q" -> ("s3://b/dir?q", "name"), splitting at the last '/'
// at or before `before`; a bare name's directory is ".".
std::pair<std::string, std::string> SplitDirName(std::string_view url, size_t before) {
  const object::UrlDirName split = object::SplitUrlDirName(url, before);
  const std::string query(split.query);
  if (!split.dir) return {"." + query, std::string(split.name)};
  std::string dir(*split.dir);
  if (dir.empty() || dir.ends_with(":/") || dir.ends_with(":")) dir += "/";
  return {dir + query, std::string(split.name)};
}

}  // namespace

Result<ShardSetEndpoint> OpenShardSet(const std::vector<std::string>& urls) {
  if (urls.empty()) return InvalidArgumentError("no dataset URL");
  ShardSetEndpoint out;
  std::string dir;
  if (urls.size() == 1 && urls[0].find('{') == std::string::npos) {
    STRATA_ASSIGN_OR_RETURN(ObjectUrl u, ParseObjectUrl(urls[0]));
    STRATA_ASSIGN_OR_RETURN(out.dir, OpenTreeSource(u));
    return out;
  }
  for (const auto& text : urls) {
    auto [d, name] = SplitDirName(text, text.find('{'));
    if (out.shards.empty()) dir = d;
    if (d != dir || name.empty()) {
      return InvalidArgumentError("shard URLs must name files of one directory: " + text + " is not in " + dir);
    }
    if (name.find('{') != std::string::npos) {
      STRATA_ASSIGN_OR_RETURN(auto names, dataset::ExpandBraces(name));
      for (auto& n : names) out.shards.push_back(std::move(n));
    } else {
      out.shards.push_back(std::move(name));
    }
  }
  STRATA_ASSIGN_OR_RETURN(ObjectUrl u, ParseObjectUrl(dir));
  STRATA_ASSIGN_OR_RETURN(out.dir, OpenTreeSource(u));
  return out;
}

}  // namespace strata::cli
