// BackgroundProcess: a server or mount started for an integration test, its stdout and
// stderr in a log file, stopped by PID (SIGTERM, then SIGKILL after a grace period) at the
// latest when it is destroyed. StartStrataServe runs the built `strata serve` and waits for
// the URL it prints.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "testing/subprocess.h"

namespace strata::testing {

class BackgroundProcess {
 public:
  // Starts argv[0] (searched on PATH) in its own process group, stdin from /dev/null, the
  // environment changed by `env`. IOError when the log cannot be created or fork fails.
  static Result<std::unique_ptr<BackgroundProcess>> Start(const std::vector<std::string>& argv,
                                                          const std::string& log_path, const EnvOverrides& env = {});
  ~BackgroundProcess();
  BackgroundProcess(const BackgroundProcess&) = delete;
  BackgroundProcess& operator=(const BackgroundProcess&) = delete;

  pid_t pid() const { return pid_; }
  std::string Log() const;
  // A "Name:  N kB" line of /proc/PID/status (VmHWM, VmRSS) in bytes; 0 when unreadable.
  uint64_t StatusBytes(const std::string& name) const;

  // Whether it has exited (reaping it); *code gets the exit code, 128 + signal if killed.
  bool Exited(int* code = nullptr);
  bool WaitExit(std::chrono::milliseconds timeout, int* code = nullptr);

  // Waits for a whole log line containing `marker` and returns what follows the marker on
  // it. DeadlineExceeded after `timeout`; Unavailable (with the log) if the process exits first.
  Result<std::string> WaitForLine(std::string_view marker, std::chrono::milliseconds timeout);

  // SIGTERM, then SIGKILL after `grace`. Returns the exit code (-1 if never started).
  int Stop(std::chrono::milliseconds grace = std::chrono::seconds(20));

 private:
  BackgroundProcess(pid_t pid, std::string log_path) : pid_(pid), log_path_(std::move(log_path)) {}
  pid_t pid_ = -1;
  int exit_code_ = -1;
  std::string log_path_;
};

struct ServeProcess {
  std::unique_ptr<BackgroundProcess> process;
  std::string endpoint;  // "http://127.0.0.1:PORT"
  uint16_t port = 0;
};

// `$STRATA_BINARY_DIR/src/cli/strata serve <args>`, output to log_path, once it listens.
Result<ServeProcess> StartStrataServe(const std::vector<std::string>& args, const std::string& log_path,
                                      const EnvOverrides& env = {});

// A barrier between test processes: waits (polling, up to `timeout`) until the
// files `prefix`0 .. `prefix`(count-1) exist in `dir`. False on timeout.
bool WaitForFiles(const std::string& dir, const std::string& prefix, int count, std::chrono::milliseconds timeout);

// A TCP port on 127.0.0.1 free at the time of the call, for servers that cannot report
// the ephemeral port they bound (etcd, a static group's members); another process may take it
// in between. Below the kernel's ephemeral range where it can (no client's connect() takes it,
// so a server restarted on it finds it free); never the same port twice in one process; 0 if
// none is found.
uint16_t FreeLoopbackPort();

// A static:// cache group of `n` members on free loopback ports: each member's
// peer address ("127.0.0.1:PORT") and the group URL naming them all.
struct StaticGroup {
  std::vector<std::string> peers;
  std::string url;
};
StaticGroup MakeStaticGroup(int n);

struct EtcdProcess {
  std::unique_ptr<BackgroundProcess> process;
  std::string client_url;  // "http://127.0.0.1:PORT"
};

struct EtcdOptions {
  uint16_t client_port = 0;   // 0: a free one (a restart passes the old one)
  std::string name = "etcd";  // its data dir `dir`/NAME and log `dir`/NAME.log
  // Set: clients talk TLS (https://), with etcd's certificate and key.
  std::string cert_file{}, key_file{};
  std::string client_ca_file{};  // set: etcd asks clients for a certificate signed by it (--client-cert-auth)
};

// A one-node etcd (/usr/bin/etcd, Debian's etcd-server) on 127.0.0.1 with its data in
// `dir`/etcd and its log in `dir`/etcd.log, once it serves clients. NotFound without etcd.
Result<EtcdProcess> StartEtcd(const std::string& dir, const EtcdOptions& options = {});

struct TlsFiles {
  std::string ca;                       // the test CA's certificate
  std::string server_cert, server_key;  // for 127.0.0.1 (its IP SAN)
  std::string client_cert, client_key;  // CN=strata-member, signed by the CA; keys mode 0600
};
// A throwaway CA and a server and a client certificate it signed (EC P-256,
// made with the openssl command in `dir`). IOError naming the command that failed.
Result<TlsFiles> MakeTestTlsFiles(const std::string& dir);

}  // namespace strata::testing
