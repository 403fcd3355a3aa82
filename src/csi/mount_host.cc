#include "csi/mount_host.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>
#include <vector>

#include "base/log.h"
#include "base/stop_signals.h"

namespace strata::csi {
namespace {

using json = nlohmann::json;

constexpr size_t kMaxArgs = 64;
constexpr size_t kMaxString = 4096;
constexpr int64_t kMaxTimeoutMs = 10 * 60 * 1000;
// A client has this long to send its request once connected.
constexpr int kRequestTimeoutSeconds = 10;

bool HasNul(const std::string& s) { return s.find('\0') != std::string::npos; }

Result<std::string> StringField(const json& j, const char* name, bool required) {
  auto it = j.find(name);
  if (it == j.end()) {
    if (required) return InvalidArgumentError(std::string("mount host request: no \"") + name + "\"");
    return std::string();
  }
  if (!it->is_string()) return InvalidArgumentError(std::string("mount host request: \"") + name + "\" not a string");
  std::string s = it->get<std::string>();
  if (s.size() > kMaxString || HasNul(s) || (required && s.empty())) {
    return InvalidArgumentError(std::string("mount host request: \"") + name + "\" empty, too long or with a NUL");
  }
  return s;
}

Result<std::string> AbsolutePathField(const json& j, const char* name, bool required) {
  STRATA_ASSIGN_OR_RETURN(std::string s, StringField(j, name, required));
  if (!s.empty() && s[0] != '/') {
    return InvalidArgumentError(std::string("mount host request: \"") + name + "\" is not an absolute path");
  }
  return s;
}

// recv of one datagram into `out` (at most kMaxMountHostMessage bytes); the
// descriptor passed with it, if any, into *fd (every other one is closed).
Status ReceiveMessage(int sock, std::string* out, int* fd) {
  out->assign(kMaxMountHostMessage + 1, '\0');
  iovec iov{out->data(), out->size()};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * 4)];
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  ssize_t n;
  do {
    n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
  } while (n < 0 && errno == EINTR);
  if (n < 0) return ErrnoToStatus(errno, "mount host: receive");
  if (fd) *fd = -1;
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    const size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (size_t i = 0; i < count; ++i) {
      int received;
      std::memcpy(&received, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
      if (fd && *fd < 0) {
        *fd = received;
      } else {
        close(received);
      }
    }
  }
  if ((msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) || static_cast<size_t>(n) > kMaxMountHostMessage) {
    if (fd && *fd >= 0) close(*fd), *fd = -1;
    return InvalidArgumentError("mount host: message larger than " + std::to_string(kMaxMountHostMessage) + " bytes");
  }
  if (n == 0) return UnavailableError("mount host: the peer closed the connection");
  out->resize(static_cast<size_t>(n));
  return Status::Ok();
}

Status SendMessage(int sock, const std::string& body, int fd) {
  iovec iov{const_cast<char*>(body.data()), body.size()};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))];
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  if (fd >= 0) {
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(c), &fd, sizeof(int));
  }
  ssize_t n;
  do {
    n = sendmsg(sock, &msg, MSG_NOSIGNAL);
  } while (n < 0 && errno == EINTR);
  if (n < 0) return ErrnoToStatus(errno, "mount host: send");
  return Status::Ok();
}

void SetReceiveTimeout(int sock, std::chrono::milliseconds timeout) {
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(timeout.count() / 1000);
  tv.tv_usec = static_cast<suseconds_t>((timeout.count() % 1000) * 1000);
  setsockopt(sock, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
}

Result<StringMap> SecretsFromFd(int fd) {
  std::string text;
  char buf[4096];
  ssize_t r;
  while ((r = pread(fd, buf, sizeof buf, static_cast<off_t>(text.size()))) > 0) {
    text.append(buf, static_cast<size_t>(r));
    if (text.size() > kMaxMountHostMessage) return InvalidArgumentError("mount host: the secrets are too large");
  }
  if (r < 0) return ErrnoToStatus(errno, "mount host: read the secrets");
  STRATA_ASSIGN_OR_RETURN(StringMap secrets, ParseSecrets(text));
  STRATA_RETURN_IF_ERROR(CheckSecrets(secrets));
  return secrets;
}

}  // namespace

Result<std::string> FormatMountHostRequest(const MountLaunch& l) {
  json j = {{"url", l.url},
            {"mountpoint", l.mountpoint},
            {"log_file", l.log_file},
            {"args", l.args},
            {"timeout_ms", static_cast<int64_t>(l.timeout.count())}};
  try {
    return j.dump();
  } catch (const json::exception&) {
    return InvalidArgumentError("mount host request: a URL, path or flag is not UTF-8");
  }
}

Result<MountLaunch> ParseMountHostRequest(std::string_view text) {
  if (text.size() > kMaxMountHostMessage) return InvalidArgumentError("mount host request: too large");
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return InvalidArgumentError("mount host request: not a JSON object");
  MountLaunch l;
  STRATA_ASSIGN_OR_RETURN(l.url, StringField(j, "url", true));
  STRATA_ASSIGN_OR_RETURN(l.mountpoint, AbsolutePathField(j, "mountpoint", true));
  STRATA_ASSIGN_OR_RETURN(l.log_file, AbsolutePathField(j, "log_file", false));
  auto args = j.find("args");
  if (args == j.end() || !args->is_array() || args->size() > kMaxArgs) {
    return InvalidArgumentError("mount host request: \"args\" must be an array of at most " + std::to_string(kMaxArgs) +
                                " strings");
  }
  for (const auto& a : *args) {
    if (!a.is_string()) return InvalidArgumentError("mount host request: an arg is not a string");
    std::string arg = a.get<std::string>();
    if (arg.size() > kMaxString || HasNul(arg)) return InvalidArgumentError("mount host request: an arg too long");
    if (arg == "--secrets-fd" || arg.starts_with("--secrets-fd=") || arg == "--log-file" ||
        arg.starts_with("--log-file=")) {
      return InvalidArgumentError("mount host request: " + arg.substr(0, arg.find('=')) + " is the host's to set");
    }
    l.args.push_back(std::move(arg));
  }
  auto timeout = j.find("timeout_ms");
  if (timeout == j.end() || !timeout->is_number_integer() || timeout->get<int64_t>() < 1 ||
      timeout->get<int64_t>() > kMaxTimeoutMs) {
    return InvalidArgumentError("mount host request: \"timeout_ms\" must be an integer from 1 to 600000");
  }
  l.timeout = std::chrono::milliseconds(timeout->get<int64_t>());
  return l;
}

std::string FormatMountHostAnswer(const Result<MountProcess>& outcome) {
  json j;
  if (outcome.ok()) {
    j = {{"code", 0}, {"pid", outcome->pid}, {"start_time", outcome->start_time}};
  } else {
    j = {{"code", static_cast<int>(outcome.status().code())},
         {"message", outcome.status().message()},
         {"cause", outcome.status().cause()}};
  }
  // The cause quotes the mount's output, which may hold any bytes.
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

Result<MountProcess> ParseMountHostAnswer(std::string_view text) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  auto bad = [] { return InternalError("the mount host's answer is malformed"); };
  if (!j.is_object()) return bad();
  auto code = j.find("code");
  if (code == j.end() || !code->is_number_integer()) return bad();
  const int64_t c = code->get<int64_t>();
  if (c < 0 || c > static_cast<int64_t>(Code::kInternal)) return bad();
  if (c != 0) {
    auto message = j.find("message"), cause = j.find("cause");
    if (message == j.end() || !message->is_string() || cause == j.end() || !cause->is_string()) return bad();
    return Status(static_cast<Code>(c), "mount host: " + message->get<std::string>(), cause->get<std::string>());
  }
  auto pid = j.find("pid"), start = j.find("start_time");
  if (pid == j.end() || !pid->is_number_integer() || start == j.end() || !start->is_number_unsigned()) return bad();
  if (pid->get<int64_t>() <= 0 || pid->get<int64_t>() > (1 << 22)) return bad();
  MountProcess p;
  p.pid = static_cast<int>(pid->get<int64_t>());
  p.start_time = start->get<uint64_t>();
  return p;
}

// --- the host -------------------------------------------------------------

struct MountHost::State {
  MountHostOptions options;
  int listen_fd = -1;
  int stop_fd = -1;  // an eventfd: readable once stopping
  std::thread acceptor;
  std::mutex mu;
  std::condition_variable idle;
  size_t active = 0;  // connections being handled

  void Accept();
  void Handle(int conn);
  Result<MountProcess> Launch(int conn);
};

Result<MountProcess> MountHost::State::Launch(int conn) {
  ucred peer{};
  socklen_t len = sizeof peer;
  if (getsockopt(conn, SOL_SOCKET, SO_PEERCRED, &peer, &len) != 0) return ErrnoToStatus(errno, "SO_PEERCRED");
  if (peer.uid != 0 && peer.uid != geteuid()) {
    return PermissionDeniedError("mount host: uid " + std::to_string(peer.uid) + " may not launch mounts");
  }
  SetReceiveTimeout(conn, std::chrono::seconds(kRequestTimeoutSeconds));
  std::string body;
  int secrets_fd = -1;
  STRATA_RETURN_IF_ERROR(ReceiveMessage(conn, &body, &secrets_fd));
  auto launch = ParseMountHostRequest(body);
  Result<StringMap> secrets = StringMap();
  if (secrets_fd >= 0) {
    secrets = SecretsFromFd(secrets_fd);
    close(secrets_fd);
  }
  if (!launch.ok()) return launch.status();
  if (!secrets.ok()) return secrets.status();
  launch->binary = options.strata_binary;
  launch->secrets = std::move(*secrets);
  STRATA_LOG_INFO("csi mount host: mounting {} at {} for pid {}", launch->url, launch->mountpoint, peer.pid);
  auto p = LaunchMount(*launch);
  if (p.ok()) {
    STRATA_LOG_INFO("csi mount host: {} served by pid {}", launch->mountpoint, p->pid);
  } else {
    STRATA_LOG_WARN("csi mount host: {}: {}", launch->mountpoint, p.status().ToString());
  }
  return p;
}

void MountHost::State::Handle(int conn) {
  const Result<MountProcess> outcome = Launch(conn);
  SendMessage(conn, FormatMountHostAnswer(outcome), -1).IgnoreError();  // a client gone learns nothing
  close(conn);
  std::lock_guard<std::mutex> lock(mu);
  if (--active == 0) idle.notify_all();
}

void MountHost::State::Accept() {
  for (;;) {
    pollfd fds[2] = {{listen_fd, POLLIN, 0}, {stop_fd, POLLIN, 0}};
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      STRATA_LOG_ERROR("csi mount host: poll: {}", std::strerror(errno));
      return;
    }
    if (fds[1].revents) return;
    int conn = accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
    if (conn < 0) {
      // Out of descriptors: the connection stays queued and poll says so at once; wait for a
      // launch to finish (it closes some) instead of spinning. Else the client left first.
      if (errno == EMFILE || errno == ENFILE) {
        pollfd stop{stop_fd, POLLIN, 0};
        poll(&stop, 1, 100);
      }
      continue;
    }
    {
      std::lock_guard<std::mutex> lock(mu);
      if (active >= options.max_connections) {
        SendMessage(conn, FormatMountHostAnswer(UnavailableError("mount host: busy")), -1).IgnoreError();
        close(conn);
        continue;
      }
      ++active;
    }
    // A launch takes up to its timeout: each runs on a thread of its own (bounded above).
    std::thread([this, conn] { Handle(conn); }).detach();
  }
}

Result<std::unique_ptr<MountHost>> MountHost::Start(MountHostOptions options) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (options.socket_path.empty() || options.socket_path.size() >= sizeof addr.sun_path) {
    return InvalidArgumentError("the mount host's socket path is empty or too long: " + options.socket_path);
  }
  std::memcpy(addr.sun_path, options.socket_path.data(), options.socket_path.size());
  auto state = std::make_shared<State>();
  state->options = std::move(options);
  const std::string& path = state->options.socket_path;
  int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  if (fd < 0) return ErrnoToStatus(errno, "socket");
  unlink(path.c_str());  // a stale socket of a previous host
  // Owner-only from the start: no moment in which another user may connect.
  const mode_t old_mask = umask(0077);
  const int bound = bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  const int bind_errno = errno;
  umask(old_mask);
  if (bound != 0 || listen(fd, 16) != 0) {
    const int err = bound != 0 ? bind_errno : errno;
    close(fd);
    return ErrnoToStatus(err, "listen on " + path);
  }
  state->listen_fd = fd;
  state->stop_fd = eventfd(0, EFD_CLOEXEC);
  if (state->stop_fd < 0) {
    close(fd);
    return ErrnoToStatus(errno, "eventfd");
  }
  State* raw = state.get();
  state->acceptor = std::thread([raw] { raw->Accept(); });
  STRATA_LOG_INFO("csi mount host: serving on {}", path);
  return std::unique_ptr<MountHost>(new MountHost(std::move(state)));
}

MountHost::~MountHost() {
  const uint64_t one = 1;
  if (write(state_->stop_fd, &one, sizeof one) < 0) {
    STRATA_LOG_ERROR("csi mount host: cannot signal the acceptor: {}", std::strerror(errno));
  }
  state_->acceptor.join();
  {
    std::unique_lock<std::mutex> lock(state_->mu);
    state_->idle.wait(lock, [&] { return state_->active == 0; });
  }
  close(state_->listen_fd);
  close(state_->stop_fd);
  unlink(state_->options.socket_path.c_str());
}

Status RunMountHost(const MountHostOptions& options) {
  const sigset_t stop = BlockStopSignals();
  STRATA_ASSIGN_OR_RETURN(auto host, MountHost::Start(options));
  int sig = 0;
  sigwait(&stop, &sig);
  STRATA_LOG_INFO("csi mount host: signal {}: stopping (mounts stay up)", sig);
  return Status::Ok();
}

// --- the plugin's side ----------------------------------------------------

Result<MountProcess> LaunchMountVia(const std::string& socket_path, const MountLaunch& launch) {
  STRATA_ASSIGN_OR_RETURN(std::string request, FormatMountHostRequest(launch));
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (socket_path.size() >= sizeof addr.sun_path) return InvalidArgumentError("mount host socket path too long");
  std::memcpy(addr.sun_path, socket_path.data(), socket_path.size());
  int sock = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  if (sock < 0) return ErrnoToStatus(errno, "socket");
  if (connect(sock, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    const int err = errno;
    close(sock);
    return UnavailableError("the mount host at " + socket_path + " is not serving (is its DaemonSet's pod running?)",
                            std::strerror(err));
  }
  int secrets_fd = -1;
  if (!launch.secrets.empty()) {
    auto fd = SecretsMemfd(launch.secrets);
    if (!fd.ok()) {
      close(sock);
      return fd.status();
    }
    secrets_fd = *fd;
  }
  Status sent = SendMessage(sock, request, secrets_fd);
  if (secrets_fd >= 0) close(secrets_fd);
  if (!sent.ok()) {
    close(sock);
    return UnavailableError("the mount host at " + socket_path + " took no request", sent.ToString());
  }
  // The host answers once the mount serves or failed: its own timeout, plus slack.
  SetReceiveTimeout(sock, launch.timeout + std::chrono::seconds(15));
  std::string answer;
  Status received = ReceiveMessage(sock, &answer, nullptr);
  close(sock);
  if (!received.ok()) {
    return UnavailableError("the mount host at " + socket_path + " gave no answer", received.ToString());
  }
  return ParseMountHostAnswer(answer);
}

}  // namespace strata::csi
