// The mount host's wire and its socket: a plugin's launch request reaches the
// host with the secrets as a passed descriptor (never argv), the mount it
// launches is seen and its secrets recovered by PID as the plugin's own, and
// failures come back with their codes. The host launches a stand-in for
// `strata mount` here (a script that records what it was given and leaves a
// process holding the secrets' fd, as the real daemon does); csi_driver_test
// runs the real one under a real kubelet-like client.
#include "csi/mount_host.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <sstream>

#include "io/durable.h"
#include "io/file_system.h"

namespace strata::csi {
namespace {

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

MountLaunch SampleLaunch(const std::string& dir) {
  MountLaunch l;
  l.url = "s3://bucket/prefix?endpoint=http://127.0.0.1:9";
  l.mountpoint = dir + "/globalmount";
  l.log_file = dir + "/mount.log";
  l.args = {"--cache-ram", "1GiB", "--allow-other"};
  l.timeout = std::chrono::seconds(30);
  return l;
}

TEST(MountHostWire, RequestRoundTripsAndRefusesWhatTheHostSetsOrCannotTrust) {
  MountLaunch l = SampleLaunch("/var/lib/x");
  auto text = FormatMountHostRequest(l);
  ASSERT_TRUE(text.ok()) << text.status();
  auto back = ParseMountHostRequest(*text);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->url, l.url);
  EXPECT_EQ(back->mountpoint, l.mountpoint);
  EXPECT_EQ(back->log_file, l.log_file);
  EXPECT_EQ(back->args, l.args);
  EXPECT_EQ(back->timeout, l.timeout);
  EXPECT_TRUE(back->binary.empty());  // the host runs its own binary, never one named by a client

  auto refused = [](const std::string& json) { return ParseMountHostRequest(json).status().code(); };
  const std::string ok_tail = R"("log_file":"/l","timeout_ms":1000})";
  EXPECT_EQ(refused(R"({"url":"u","mountpoint":"/m","args":[],)" + ok_tail), Code::kOk);
  EXPECT_EQ(refused(R"({"url":"u","mountpoint":"m","args":[],)" + ok_tail), Code::kInvalidArgument);  // relative
  EXPECT_EQ(refused(R"({"url":"","mountpoint":"/m","args":[],)" + ok_tail), Code::kInvalidArgument);
  EXPECT_EQ(refused(R"({"url":"u","mountpoint":"/m","args":["--secrets-fd","3"],)" + ok_tail), Code::kInvalidArgument);
  EXPECT_EQ(refused(R"({"url":"u","mountpoint":"/m","args":["--log-file=/etc/x"],)" + ok_tail), Code::kInvalidArgument);
  EXPECT_EQ(refused(R"({"url":"u","mountpoint":"/m","args":[1],)" + ok_tail), Code::kInvalidArgument);
  EXPECT_EQ(refused(R"({"url":"u","mountpoint":"/m","args":[],"timeout_ms":0})"), Code::kInvalidArgument);
  EXPECT_EQ(refused(R"({"url":"u","mountpoint":"/m","args":[],"timeout_ms":"1"})"), Code::kInvalidArgument);
  EXPECT_EQ(refused("[]"), Code::kInvalidArgument);
  EXPECT_EQ(refused("{"), Code::kInvalidArgument);
  std::string many = R"({"url":"u","mountpoint":"/m","args":[)";
  for (int i = 0; i < 65; ++i) many += std::string(i ? "," : "") + "\"a\"";
  EXPECT_EQ(refused(many + "]," + ok_tail), Code::kInvalidArgument);
  l.url = "s3://b/\xff";
  EXPECT_EQ(FormatMountHostRequest(l).status().code(), Code::kInvalidArgument);  // not UTF-8: refused, not thrown
}

TEST(MountHostWire, AnswersCarryTheProcessOrTheErrorsCode) {
  MountProcess p{4242, 987654321};
  auto ok = ParseMountHostAnswer(FormatMountHostAnswer(p));
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(ok->pid, 4242);
  EXPECT_EQ(ok->start_time, 987654321u);
  auto err = ParseMountHostAnswer(FormatMountHostAnswer(NotFoundError("no bucket", "tail \xff of output")));
  EXPECT_EQ(err.status().code(), Code::kNotFound);
  EXPECT_NE(err.status().message().find("no bucket"), std::string::npos);
  EXPECT_EQ(ParseMountHostAnswer(R"({"code":99,"message":"","cause":""})").status().code(), Code::kInternal);
  EXPECT_EQ(ParseMountHostAnswer(R"({"code":0,"pid":-1,"start_time":1})").status().code(), Code::kInternal);
  EXPECT_EQ(ParseMountHostAnswer("").status().code(), Code::kInternal);
}

class MountHostTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = io::MakeTempDir("strata-mount-host-test-");
    ASSERT_TRUE(dir.ok());
    dir_ = *dir;
    socket_ = dir_ + "/mount-host.sock";
  }
  void TearDown() override {
    host_.reset();
    for (int pid : started_) kill(pid, SIGKILL);
    io::RemoveAll(io::DefaultFileSystem(), dir_).IgnoreError();
  }
  // A stand-in for `strata mount`: records its argv and the secrets on its fd 3,
  // leaves a process holding that fd (as the daemon does) and reports its pid.
  std::string FakeStrata(int exit_code = 0) {
    const std::string path = dir_ + "/fake-strata";
    std::ofstream(path) << "#!/bin/sh\n"
                        << "echo \"$@\" > \"$3.argv\"\n"
                        << "if [ -e /proc/self/fd/3 ]; then cat <&3 > \"$3.secrets\"; fi\n"
                        << "if [ " << exit_code << " -ne 0 ]; then echo 'strata: mount: no such bucket'; exit "
                        << exit_code << "; fi\n"
                        << "sleep 120 </dev/null >/dev/null 2>&1 &\n"
                        << "echo \"mounted $3 (pid $!)\"\n";
    chmod(path.c_str(), 0755);
    return path;
  }
  void StartHost(const std::string& binary) {
    auto host = MountHost::Start({socket_, binary, 4});
    ASSERT_TRUE(host.ok()) << host.status();
    host_ = std::move(*host);
  }
  std::string dir_, socket_;
  std::unique_ptr<MountHost> host_;
  std::vector<int> started_;
};

TEST_F(MountHostTest, LaunchesWithTheSecretsPassedAsADescriptorAndThePluginRecoversThem) {
  StartHost(FakeStrata());
  struct stat st {};
  ASSERT_EQ(stat(socket_.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0077, 0u) << "the socket must be owner-only";
  MountLaunch l = SampleLaunch(dir_);
  l.binary = "/bin/false";  // ignored: the host runs its own
  l.secrets = {{"AWS_ACCESS_KEY_ID", "AKIAMOUNTHOSTTEST"}, {"AWS_SECRET_ACCESS_KEY", "a-secret-never-in-argv-42"}};
  auto p = LaunchMountVia(socket_, l);
  ASSERT_TRUE(p.ok()) << p.status();
  started_.push_back(p->pid);
  EXPECT_TRUE(ProcessRunning(*p));
  const std::string argv = ReadAll(l.mountpoint + ".argv");
  EXPECT_NE(argv.find("mount " + l.url + " " + l.mountpoint + " --log-file " + l.log_file + " --secrets-fd 3"),
            std::string::npos)
      << argv;
  EXPECT_NE(argv.find("--cache-ram 1GiB --allow-other"), std::string::npos) << argv;
  EXPECT_EQ(argv.find("a-secret-never-in-argv-42"), std::string::npos) << argv;
  auto seen = ParseSecrets(ReadAll(l.mountpoint + ".secrets"));
  ASSERT_TRUE(seen.ok()) << seen.status();
  EXPECT_EQ(*seen, l.secrets);
  // A restarted plugin finds them in the mount's process, as for mounts it launched itself.
  auto recovered = RecoverSecrets(*p);
  ASSERT_TRUE(recovered.ok()) << recovered.status();
  EXPECT_EQ(*recovered, l.secrets);
}

TEST_F(MountHostTest, AFailedMountComesBackWithItsCodeAndOutput) {
  StartHost(FakeStrata(3));  // strata's exit code for "not found"
  auto p = LaunchMountVia(socket_, SampleLaunch(dir_));
  EXPECT_EQ(p.status().code(), Code::kNotFound) << p.status();
  EXPECT_NE(p.status().cause().find("no such bucket"), std::string::npos) << p.status();
}

TEST_F(MountHostTest, NoHostIsUnavailableAndRetryable) {
  auto p = LaunchMountVia(socket_, SampleLaunch(dir_));
  EXPECT_EQ(p.status().code(), Code::kUnavailable) << p.status();
  EXPECT_TRUE(p.status().retryable());
}

TEST_F(MountHostTest, AMalformedRequestIsRefusedWithoutALaunch) {
  StartHost(FakeStrata());
  int sock = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  ASSERT_GE(sock, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, socket_.data(), socket_.size());
  ASSERT_EQ(connect(sock, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0) << std::strerror(errno);
  const std::string request =
      R"({"url":"u","mountpoint":")" + dir_ + R"(/m","args":["--secrets-fd","7"],"log_file":"","timeout_ms":1000})";
  ASSERT_EQ(send(sock, request.data(), request.size(), MSG_NOSIGNAL), static_cast<ssize_t>(request.size()));
  char buf[4096];
  const ssize_t n = recv(sock, buf, sizeof buf, 0);
  close(sock);
  ASSERT_GT(n, 0);
  auto answer = ParseMountHostAnswer(std::string_view(buf, static_cast<size_t>(n)));
  EXPECT_EQ(answer.status().code(), Code::kInvalidArgument) << answer.status();
  EXPECT_NE(access((dir_ + "/m.argv").c_str(), F_OK), 0) << "a refused request launched nothing";
}

}  // namespace
}  // namespace strata::csi
