#include "testing/s3_server.h"

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "testing/background_process.h"

#ifndef STRATA_SOURCE_DIR_DEFAULT
#define STRATA_SOURCE_DIR_DEFAULT ""
#endif

namespace strata::testing {
namespace {

namespace fs = std::filesystem;

constexpr auto kStartTimeout = std::chrono::seconds(180);
constexpr auto kStopTimeout = std::chrono::seconds(60);
constexpr int kStartAttempts = 2;  // a second try covers losing a race for the free port

// A free loopback port below the ephemeral range (testing::FreeLoopbackPort): a server that
// stops and restarts on it finds it free, and no two servers of one test get the same one.
Result<int> FreePortForServer() {
  const uint16_t port = FreeLoopbackPort();
  if (port == 0) return Status(Code::kUnavailable, "no free port on 127.0.0.1");
  return static_cast<int>(port);
}

Result<std::string> MakeTempDir(const std::string& tag) {
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/strata-" + tag + "-XXXXXX";
  if (::mkdtemp(pattern.data()) == nullptr) return ErrnoToStatus(errno, "mkdtemp " + pattern);
  return pattern;
}

// key=value lines (the scripts' machine-readable output).
std::map<std::string, std::string> ParseLines(const std::string& text) {
  std::map<std::string, std::string> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    size_t eq = line.find('=');
    if (eq == std::string::npos || eq == 0) continue;
    out[line.substr(0, eq)] = line.substr(eq + 1);
  }
  return out;
}

// The PIDs recorded in DIR/pids/*.pid.
std::vector<pid_t> ReadPids(const std::string& dir) {
  std::vector<pid_t> pids;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir + "/pids", ec)) {
    if (entry.path().extension() != ".pid") continue;
    std::ifstream in(entry.path());
    long pid = 0;
    if (in >> pid && pid > 0) pids.push_back(static_cast<pid_t>(pid));
  }
  return pids;
}

std::string ScriptPath(const std::string& name) { return SourceDir() + "/scripts/" + name; }

Status CheckScript(const std::string& path) {
  if (SourceDir().empty()) return NotFoundError("source dir unknown: set STRATA_SOURCE_DIR to the strata checkout");
  if (!fs::exists(path)) return NotFoundError(path + " not found (is STRATA_SOURCE_DIR right?)");
  return Status::Ok();
}

Status RunStop(const std::string& script, const std::string& dir) {
  std::vector<std::string> argv = {"bash", script, "stop", dir};
  RunOptions options;
  options.timeout = kStopTimeout;
  STRATA_ASSIGN_OR_RETURN(CommandResult run, RunCommand(argv, {}, std::nullopt, options));
  if (run.exit_code != 0) return InternalError("stopping the server in " + dir, DescribeRun(argv, run));
  return Status::Ok();
}

// Runs `script start DIR ARGS...` and returns its key=value output.
Result<std::map<std::string, std::string>> RunStart(const std::string& script, const std::string& dir,
                                                    const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"bash", script, "start", dir};
  argv.insert(argv.end(), args.begin(), args.end());
  RunOptions options;
  options.timeout = kStartTimeout;
  auto run_or = RunCommand(argv, {}, std::nullopt, options);
  if (!run_or.ok() || run_or->exit_code != 0) {
    // A start killed at its deadline leaves daemons in their own sessions: stop them.
    RunStop(script, dir).IgnoreError();
  }
  STRATA_ASSIGN_OR_RETURN(CommandResult run, std::move(run_or));
  if (run.exit_code != 0) {
    return UnavailableError(fs::path(script).filename().string() + " failed to start a server in " + dir,
                            DescribeRun(argv, run));
  }
  return ParseLines(run.stdout_text);
}

// Removes a stopped server's dir unless STRATA_KEEP_TEST_DIRS is set (for debugging).
void RemoveDir(const std::string& dir) {
  if (std::getenv("STRATA_KEEP_TEST_DIRS") != nullptr) return;
  std::error_code ec;
  fs::remove_all(dir, ec);
}

// Stops what a script started in `dir` (by the PIDs it recorded), removes the
// dir, and forgets both; idempotent.
Status StopDaemons(const std::string& script, std::string& dir, std::vector<pid_t>& pids) {
  if (dir.empty()) return Status::Ok();
  Status st = RunStop(script, dir);
  if (st.ok()) RemoveDir(dir);
  dir.clear();
  pids.clear();
  return st;
}

}  // namespace

std::string SourceDir() {
  const char* env = std::getenv("STRATA_SOURCE_DIR");
  if (env && *env) return env;
  return STRATA_SOURCE_DIR_DEFAULT;
}

const char* KindName(S3TestServer::Kind kind) { return kind == S3TestServer::Kind::kRgw ? "rgw" : "s3rver"; }

bool ProcessGone(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  if (!stat) return true;
  std::string content((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  size_t paren = content.rfind(')');  // the command name may contain spaces and ')'
  if (paren == std::string::npos || paren + 2 >= content.size()) return true;
  char state = content[paren + 2];
  return state == 'Z' || state == 'X';
}

Result<std::unique_ptr<S3TestServer>> S3TestServer::Start(Kind kind) {
  std::unique_ptr<S3TestServer> server(new S3TestServer());
  server->kind_ = kind;
  server->script_ = ScriptPath(kind == Kind::kRgw ? "rgw.sh" : "s3rver.sh");
  STRATA_RETURN_IF_ERROR(CheckScript(server->script_));
  Status last;
  for (int attempt = 0; attempt < kStartAttempts; ++attempt) {
    STRATA_ASSIGN_OR_RETURN(std::string dir, MakeTempDir(KindName(kind)));
    STRATA_ASSIGN_OR_RETURN(int port, FreePortForServer());
    auto lines = RunStart(server->script_, dir, {std::to_string(port)});
    if (!lines.ok()) {
      last = lines.status();  // the dir stays, with the logs the message points to
      continue;
    }
    server->dir_ = dir;
    server->pids_ = ReadPids(dir);
    server->endpoint_ = (*lines)["endpoint"];
    server->access_key_ = (*lines)["access_key"];
    server->secret_key_ = (*lines)["secret_key"];
    server->bucket_ = (*lines)["bucket"];
    server->region_ = (*lines)["region"];
    if (server->endpoint_.empty() || server->access_key_.empty() || server->bucket_.empty() || server->pids_.empty()) {
      Status bad(Code::kInternal,
                 std::string(KindName(kind)) + " script printed no endpoint/keys/bucket or pids in " + dir);
      server->Stop().IgnoreError();
      return bad;
    }
    return server;
  }
  return last;
}

S3TestServer::~S3TestServer() { Stop().IgnoreError(); }

Status S3TestServer::Stop() { return StopDaemons(script_, dir_, pids_); }

EnvOverrides S3TestServer::ClientEnv() const {
  EnvOverrides env = WithoutCaBundles();
  env += {{"AWS_ACCESS_KEY_ID", access_key_},    {"AWS_SECRET_ACCESS_KEY", secret_key_},
          {"AWS_DEFAULT_REGION", region_},       {"AWS_REGION", region_},
          {"AWS_SESSION_TOKEN", std::nullopt},   {"AWS_SECURITY_TOKEN", std::nullopt},
          {"AWS_PROFILE", std::nullopt},         {"AWS_DEFAULT_PROFILE", std::nullopt},
          {"AWS_ENDPOINT_URL", std::nullopt},    {"AWS_ENDPOINT_URL_S3", std::nullopt},
          {"AWS_CONFIG_FILE", "/dev/null"},      {"AWS_SHARED_CREDENTIALS_FILE", "/dev/null"},
          {"AWS_EC2_METADATA_DISABLED", "true"}, {"AWS_PAGER", ""},
          {"NO_PROXY", "127.0.0.1,localhost"},   {"no_proxy", "127.0.0.1,localhost"}};
  return env;
}

std::string S3TestServer::StoreUrl(const std::string& prefix) const {
  std::string url = "s3://" + bucket_;
  if (!prefix.empty()) url += "/" + prefix;
  return url + "?endpoint=" + endpoint_ + "&region=" + region_ + "&path_style=1";
}

Result<std::unique_ptr<CloudProxy>> CloudProxy::Start(const std::string& upstream, const Options& options) {
  std::unique_ptr<CloudProxy> proxy(new CloudProxy());
  proxy->script_ = ScriptPath("cloud-proxy.sh");
  STRATA_RETURN_IF_ERROR(CheckScript(proxy->script_));
  Status last;
  for (int attempt = 0; attempt < kStartAttempts; ++attempt) {
    STRATA_ASSIGN_OR_RETURN(std::string dir, MakeTempDir("proxy"));
    STRATA_ASSIGN_OR_RETURN(int port, FreePortForServer());
    std::vector<std::string> args{
        std::to_string(port), upstream, "--ttfb-ms", std::to_string(options.ttfb_ms), "--rate", options.rate};
    if (options.access_log) args.push_back("--access-log");
    auto lines = RunStart(proxy->script_, dir, args);
    if (!lines.ok()) {
      last = lines.status();
      continue;
    }
    proxy->dir_ = dir;
    proxy->endpoint_ = (*lines)["endpoint"];
    if (proxy->endpoint_.empty() || proxy->pids().empty()) {
      Status bad(Code::kInternal, "cloud-proxy.sh printed no endpoint or pid in " + dir);
      proxy->Stop().IgnoreError();
      return bad;
    }
    return proxy;
  }
  return last;
}

CloudProxy::~CloudProxy() { Stop().IgnoreError(); }

std::map<std::string, CloudProxy::Fetched> CloudProxy::GetsFromAccessLog(const std::string& bucket,
                                                                         const std::string& prefix) const {
  std::map<std::string, Fetched> gets;
  std::ifstream in(access_log_path());
  // "combined": ... "GET /BUCKET/KEY HTTP/1.1" STATUS BYTES ...
  const std::string needle = "\"GET /" + bucket + "/" + prefix;
  for (std::string line; std::getline(in, line);) {
    auto at = line.find(needle);
    if (at == std::string::npos) continue;
    auto start = at + 6 + bucket.size() + 1;  // past `"GET /BUCKET/`
    auto end = line.find_first_of(" ?", start);
    auto& f = gets[line.substr(start, end - start)];
    ++f.gets;
    auto quote = line.find('"', end);
    if (quote == std::string::npos) continue;
    std::istringstream rest(line.substr(quote + 1));
    int status = 0;
    uint64_t bytes = 0;
    if (rest >> status >> bytes) f.bytes += bytes;
  }
  return gets;
}

Status CloudProxy::Stop() {
  std::vector<pid_t> pids;
  return StopDaemons(script_, dir_, pids);
}

Status CloudProxy::Halt() {
  if (dir_.empty()) return InternalError("the proxy was stopped (Stop() removed its dir)");
  return RunStop(script_, dir_);
}

Status CloudProxy::Restart() {
  if (dir_.empty()) return InternalError("the proxy was stopped (Stop() removed its dir)");
  // No arguments: the script starts again with those it recorded (same port and options).
  STRATA_ASSIGN_OR_RETURN(auto lines, RunStart(script_, dir_, {}));
  if (lines["endpoint"] != endpoint_) {
    return InternalError("cloud-proxy.sh restarted on " + lines["endpoint"] + ", not " + endpoint_);
  }
  return Status::Ok();
}

std::vector<pid_t> CloudProxy::pids() const { return dir_.empty() ? std::vector<pid_t>{} : ReadPids(dir_); }

std::string ProxiedRgw::StoreUrl(const std::string& prefix) const {
  std::string url = "s3://" + rgw->bucket();
  if (!prefix.empty()) url += "/" + prefix;
  return url + "?endpoint=" + proxy->endpoint() + "&region=" + rgw->region() + "&path_style=1";
}

Status ProxiedRgw::ExportCredentials() const {
  if (::setenv("AWS_ACCESS_KEY_ID", rgw->access_key().c_str(), 1) != 0 ||
      ::setenv("AWS_SECRET_ACCESS_KEY", rgw->secret_key().c_str(), 1) != 0) {
    return ErrnoToStatus(errno, "setenv");
  }
  return Status::Ok();
}

Result<ProxiedRgw> StartProxiedRgw(const CloudProxy::Options& options) {
  ProxiedRgw out;
  STRATA_ASSIGN_OR_RETURN(out.rgw, S3TestServer::Start(S3TestServer::Kind::kRgw));
  STRATA_ASSIGN_OR_RETURN(out.proxy, CloudProxy::Start(out.rgw->endpoint(), options));
  return out;
}

}  // namespace strata::testing
