#include "testing/background_process.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <sstream>
#include <thread>

extern char** environ;

namespace strata::testing {

namespace {
using SteadyClock = std::chrono::steady_clock;
}  // namespace

Result<std::unique_ptr<BackgroundProcess>> BackgroundProcess::Start(const std::vector<std::string>& argv,
                                                                    const std::string& log_path,
                                                                    const EnvOverrides& env) {
  if (argv.empty()) return InvalidArgumentError("BackgroundProcess: empty argv");
  std::map<std::string, std::string> vars;
  for (char** e = environ; *e; ++e) {
    std::string kv = *e;
    size_t eq = kv.find('=');
    if (eq != std::string::npos) vars[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  for (const auto& [k, v] : env) {
    if (v)
      vars[k] = *v;
    else
      vars.erase(k);
  }
  // Everything the child needs is built before fork: it only calls async-signal-safe functions.
  std::vector<std::string> env_strings, arg_strings(argv);
  for (auto& [k, v] : vars) env_strings.push_back(k + "=" + v);
  std::vector<char*> envp, args;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  for (auto& a : arg_strings) args.push_back(a.data());
  args.push_back(nullptr);
  int fd = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return IOError("BackgroundProcess: cannot create " + log_path);
  int devnull = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  pid_t pid = ::fork();
  if (pid == 0) {
    ::setpgid(0, 0);
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    if (devnull >= 0) ::dup2(devnull, 0);
    ::execvpe(args[0], args.data(), envp.data());
    _exit(127);
  }
  ::close(fd);
  if (devnull >= 0) ::close(devnull);
  if (pid < 0) return IOError("BackgroundProcess: fork failed");
  return std::unique_ptr<BackgroundProcess>(new BackgroundProcess(pid, log_path));
}

BackgroundProcess::~BackgroundProcess() { Stop(); }

std::string BackgroundProcess::Log() const {
  std::ifstream in(log_path_, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

uint64_t BackgroundProcess::StatusBytes(const std::string& name) const {
  std::ifstream in("/proc/" + std::to_string(pid_) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(name + ":", 0) == 0) return std::strtoull(line.c_str() + name.size() + 1, nullptr, 10) << 10;
  }
  return 0;
}

bool BackgroundProcess::Exited(int* code) {
  if (pid_ > 0) {
    int st = 0;
    if (::waitpid(pid_, &st, WNOHANG) == pid_) {
      exit_code_ = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
      pid_ = -1;
    }
  }
  if (code) *code = exit_code_;
  return pid_ <= 0;
}

bool BackgroundProcess::WaitExit(std::chrono::milliseconds timeout, int* code) {
  auto deadline = SteadyClock::now() + timeout;
  while (!Exited(code)) {
    if (SteadyClock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // polling the child's state
  }
  return true;
}

Result<std::string> BackgroundProcess::WaitForLine(std::string_view marker, std::chrono::milliseconds timeout) {
  auto deadline = SteadyClock::now() + timeout;
  for (;;) {
    std::string log = Log();
    if (size_t p = log.find(marker); p != std::string::npos) {
      size_t nl = log.find('\n', p);
      if (nl != std::string::npos) return log.substr(p + marker.size(), nl - p - marker.size());
    }
    if (Exited()) return UnavailableError("process exited before printing '" + std::string(marker) + "':\n" + log);
    if (SteadyClock::now() > deadline)
      return DeadlineExceededError("no '" + std::string(marker) + "' in the log:\n" + log);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // polling the log
  }
}

int BackgroundProcess::Stop(std::chrono::milliseconds grace) {
  if (pid_ > 0) {
    ::kill(pid_, SIGTERM);
    if (!WaitExit(grace)) {
      ::kill(pid_, SIGKILL);
      WaitExit(std::chrono::seconds(10));
    }
  }
  return exit_code_;
}

Result<ServeProcess> StartStrataServe(const std::vector<std::string>& args, const std::string& log_path,
                                      const EnvOverrides& env) {
  const char* bin_dir = std::getenv("STRATA_BINARY_DIR");
  if (bin_dir == nullptr) return InvalidArgumentError("run under ctest (STRATA_BINARY_DIR is not set)");
  std::vector<std::string> argv{std::string(bin_dir) + "/src/cli/strata", "serve"};
  argv.insert(argv.end(), args.begin(), args.end());
  ServeProcess serve;
  STRATA_ASSIGN_OR_RETURN(serve.process, BackgroundProcess::Start(argv, log_path, env));
  STRATA_ASSIGN_OR_RETURN(serve.endpoint, serve.process->WaitForLine("listening on ", std::chrono::seconds(30)));
  const size_t colon = serve.endpoint.rfind(':');
  if (colon == std::string::npos) return InternalError("strata serve printed no port: " + serve.endpoint);
  serve.port = static_cast<uint16_t>(std::atoi(serve.endpoint.c_str() + colon + 1));
  return serve;
}

bool WaitForFiles(const std::string& dir, const std::string& prefix, int count, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    int present = 0;
    for (int i = 0; i < count; ++i) present += access((dir + "/" + prefix + std::to_string(i)).c_str(), F_OK) == 0;
    if (present == count) return true;
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

namespace {

// Binds 127.0.0.1:`port` (0: any) and closes it again; the port bound, or 0 if it is taken.
uint16_t BindAndRelease(uint16_t port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return 0;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(port);
  socklen_t len = sizeof addr;
  uint16_t bound = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0)
    bound = ntohs(addr.sin_port);
  ::close(fd);
  return bound;
}

// The first port of the kernel's ephemeral range: connect() takes its local ports from there.
int EphemeralLow() {
  int low = 32768;
  std::ifstream range("/proc/sys/net/ipv4/ip_local_port_range");
  if (!(range >> low)) low = 32768;
  return low;
}

}  // namespace

uint16_t FreeLoopbackPort() {
  // Below the ephemeral range, so no client's connect() takes it as its local port before the
  // server binds it, or while a test restarts the server on it (bind then fails with EADDRINUSE).
  // Never the same port twice in one process: the kernel hands a just-closed port out again soon
  // (CI once got one port for two members of a static group).
  static std::mutex mu;
  static std::set<uint16_t> handed_out;
  std::lock_guard<std::mutex> lock(mu);
  constexpr int kLowest = 10000;
  static const int high = EphemeralLow();
  static std::mt19937 rng(std::random_device{}());
  std::uniform_int_distribution<int> pick(kLowest, std::max(kLowest, high - 1));
  for (int attempt = 0; attempt < 256; ++attempt) {
    // A range too small to pick from at random: the kernel's choice (ephemeral) instead.
    const bool below = high - kLowest >= 1000 && attempt < 192;
    const uint16_t port = BindAndRelease(below ? static_cast<uint16_t>(pick(rng)) : 0);
    if (port != 0 && handed_out.insert(port).second) return port;
  }
  return 0;
}

StaticGroup MakeStaticGroup(int n) {
  StaticGroup group;
  group.url = "static://";
  for (int i = 0; i < n; ++i) {
    group.peers.push_back("127.0.0.1:" + std::to_string(FreeLoopbackPort()));
    group.url += (i ? "," : "") + group.peers.back();
  }
  return group;
}

Result<EtcdProcess> StartEtcd(const std::string& dir, const EtcdOptions& options) {
  if (::access("/usr/bin/etcd", X_OK) != 0)
    return NotFoundError("etcd not installed (scripts/setup.sh installs etcd-server)");
  const bool tls = !options.cert_file.empty();
  const uint16_t port = options.client_port ? options.client_port : FreeLoopbackPort();
  const std::string client = (tls ? "https://127.0.0.1:" : "http://127.0.0.1:") + std::to_string(port);
  const std::string peer = "http://127.0.0.1:" + std::to_string(FreeLoopbackPort());
  std::vector<std::string> argv = {"/usr/bin/etcd",
                                   "--name",
                                   "t",
                                   "--data-dir",
                                   dir + "/" + options.name,
                                   "--listen-client-urls",
                                   client,
                                   "--advertise-client-urls",
                                   client,
                                   "--listen-peer-urls",
                                   peer,
                                   "--initial-advertise-peer-urls",
                                   peer,
                                   "--initial-cluster",
                                   "t=" + peer};
  if (tls) {
    argv.insert(argv.end(), {"--cert-file", options.cert_file, "--key-file", options.key_file});
  }
  if (!options.client_ca_file.empty()) {
    argv.insert(argv.end(), {"--trusted-ca-file", options.client_ca_file, "--client-cert-auth"});
  }
  EtcdProcess etcd;
  etcd.client_url = client;
  STRATA_ASSIGN_OR_RETURN(etcd.process, BackgroundProcess::Start(argv, dir + "/" + options.name + ".log"));
  STRATA_RETURN_IF_ERROR(
      etcd.process->WaitForLine("ready to serve client requests", std::chrono::seconds(30)).status());
  return etcd;
}

Result<TlsFiles> MakeTestTlsFiles(const std::string& dir) {
  TlsFiles f{dir + "/ca.pem", dir + "/server.pem", dir + "/server.key", dir + "/client.pem", dir + "/client.key"};
  const std::string ca_key = dir + "/ca.key";
  auto run = [](const std::vector<std::string>& argv) -> Status {
    STRATA_ASSIGN_OR_RETURN(CommandResult r, RunCommand(argv));
    if (r.exit_code != 0) return IOError("making test certificates failed: " + DescribeRun(argv, r));
    return Status::Ok();
  };
  const std::vector<std::string> ec = {"-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"};
  auto req = [&](std::vector<std::string> argv) {
    argv.insert(argv.begin() + 2, ec.begin(), ec.end());
    return run(argv);
  };
  STRATA_RETURN_IF_ERROR(
      req({"openssl", "req", "-x509", "-keyout", ca_key, "-out", f.ca, "-days", "2", "-subj", "/CN=strata-test-ca"}));
  // One certificate per role; the server's names 127.0.0.1, the only address tests use.
  const struct {
    std::string cert, key, cn, ext;
  } leaves[] = {
      {f.server_cert, f.server_key, "etcd", "subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth,clientAuth\n"},
      {f.client_cert, f.client_key, "strata-member", "extendedKeyUsage=clientAuth\n"}};
  for (const auto& leaf : leaves) {
    const std::string csr = leaf.cert + ".csr", ext = leaf.cert + ".ext";
    STRATA_RETURN_IF_ERROR(req({"openssl", "req", "-keyout", leaf.key, "-out", csr, "-subj", "/CN=" + leaf.cn}));
    FILE* out = std::fopen(ext.c_str(), "w");
    if (!out) return IOError("cannot write " + ext);
    std::fputs(leaf.ext.c_str(), out);
    std::fclose(out);
    STRATA_RETURN_IF_ERROR(run({"openssl", "x509", "-req", "-in", csr, "-CA", f.ca, "-CAkey", ca_key, "-CAcreateserial",
                                "-out", leaf.cert, "-days", "2", "-extfile", ext}));
    if (::chmod(leaf.key.c_str(), 0600) != 0) return IOError("cannot chmod " + leaf.key);
  }
  return f;
}

}  // namespace strata::testing
