// The scheduler extender end to end: a real etcd, a cache group of three members
// (a real `strata mount` that read the dataset and publishes what it caches, and two
// members that hold none of it), `strata scheduler-extender` answering the
// scheduler's filter and prioritize requests over HTTP (curl), and the member that
// held the data leaving the group. Records written to etcd without the group
// secret are ignored and counted; connections that send nothing are closed.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>

#include "base/hash.h"
#include "group/member.h"
#include "group/member_record.h"
#include "io/durable.h"
#include "io/file_system.h"
#include "testing/background_process.h"
#include "testing/subprocess.h"

namespace strata::csi {
namespace {

using json = nlohmann::json;
using testing::BackgroundProcess;

template <typename Pred>
bool WaitFor(Pred pred, std::chrono::milliseconds deadline) {
  const auto end = std::chrono::steady_clock::now() + deadline;
  while (std::chrono::steady_clock::now() < end) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));  // polling a condition, with a deadline
  }
  return pred();
}

class CsiExtenderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = *io::MakeTempDir("strata-extender-test-");
    auto etcd = testing::StartEtcd(dir_);
    ASSERT_TRUE(etcd.ok()) << etcd.status();
    etcd_ = std::move(etcd->process);
    etcd_url_ = etcd->client_url;
    group_ = "etcd://" + etcd->client_url.substr(7) + "/train";
    secret_file_ = dir_ + "/group-secret";
    ASSERT_TRUE(io::WriteFileAtomic(io::DefaultFileSystem(), secret_file_, kSecret).ok());
    ASSERT_EQ(chmod(secret_file_.c_str(), 0600), 0);
  }
  void TearDown() override {
    members_.clear();
    if (extender_) extender_->Stop();
    if (mount_) {
      testing::RunCommand({"fusermount3", "-u", "-z", dir_ + "/mnt"}).status().IgnoreError();
      mount_->Stop();
    }
    if (etcd_) etcd_->Stop();
    io::RemoveAll(io::DefaultFileSystem(), dir_).IgnoreError();
  }

  static constexpr char kSecret[] = "extender-test-secret-of-32-bytes-at-least";

  void StartExtender(std::vector<std::string> extra = {}) {
    std::vector<std::string> argv = {std::string(std::getenv("STRATA_BINARY_DIR")) + "/src/cli/strata",
                                     "scheduler-extender",
                                     "--listen",
                                     "127.0.0.1:0",
                                     "--cache-group",
                                     group_,
                                     "--group-secret-file",
                                     secret_file_,
                                     "--min-fraction",
                                     "0.5"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    auto e = BackgroundProcess::Start(argv, dir_ + "/extender.log");
    ASSERT_TRUE(e.ok()) << e.status();
    extender_ = std::move(*e);
    auto listening = extender_->WaitForLine("listening on ", std::chrono::seconds(10));
    ASSERT_TRUE(listening.ok()) << listening.status() << extender_->Log();
    url_ = *listening;
  }
  void JoinMember(const std::string& node, uint64_t imagenet_bytes) {
    group::JoinOptions jo;
    jo.url = group_;
    jo.listen = "127.0.0.1:0";
    jo.secret = kSecret;
    jo.record = [node, imagenet_bytes] {
      json datasets = json::object();
      if (imagenet_bytes) datasets["imagenet"] = imagenet_bytes;
      return json{{"node", node}, {"datasets", datasets}}.dump();
    };
    auto member = group::GroupMember::Join(jo);
    ASSERT_TRUE(member.ok()) << member.status();
    members_.push_back(std::move(*member));
  }
  // Writes `value` at the group's cached/<id> key straight into etcd, as anyone
  // who can write the prefix (but has no group secret) could.
  void PutRaw(const std::string& id, const std::string& value) {
    const std::string key = "/strata/groups/train/cached/" + id;
    json put = {{"key", Base64Encode(key.data(), key.size())}, {"value", Base64Encode(value.data(), value.size())}};
    auto r = testing::RunCommand({"curl", "-sS", "--fail", "--data-binary", put.dump(), etcd_url_ + "/v3/kv/put"});
    ASSERT_TRUE(r.ok() && r->exit_code == 0) << (r.ok() ? r->stderr_text : r.status().ToString());
  }
  // A bare TCP connection to the extender (for clients that send nothing or part of a request).
  int ConnectRaw() {
    const std::string hostport = url_.substr(url_.find("//") + 2);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(std::stoi(hostport.substr(hostport.rfind(':') + 1))));
    EXPECT_EQ(inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr), 1);
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    EXPECT_GE(fd, 0);
    EXPECT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0) << strerror(errno);
    return fd;
  }
  // A counter from the extender's /metrics.
  uint64_t Metric(const std::string& name) {
    auto r = testing::RunCommand({"curl", "-sS", "--fail", url_ + "/metrics"});
    EXPECT_TRUE(r.ok() && r->exit_code == 0);
    if (!r.ok()) return 0;
    const std::string& text = r->stdout_text;
    size_t at = text.find("\n" + name + " ");
    EXPECT_NE(at, std::string::npos) << name << " not in\n" << text;
    return at == std::string::npos ? 0 : std::stoull(text.substr(at + name.size() + 2));
  }

  json Post(const std::string& verb, const json& body) {
    auto r = testing::RunCommand({"curl", "-sS", "--fail", "-H", "Content-Type: application/json", "--data-binary",
                                  body.dump(), url_ + "/" + verb});
    EXPECT_TRUE(r.ok() && r->exit_code == 0) << (r.ok() ? r->stderr_text : r.status().ToString());
    return r.ok() ? json::parse(r->stdout_text, nullptr, false) : json();
  }
  static json PodArgs(const std::string& datasets, bool node_list) {
    json pod = {{"metadata", {{"name", "train-0"}, {"annotations", {{"csi.strata.dev/datasets", datasets}}}}},
                {"spec", {{"containers", json::array()}}}};
    json names = json::array({"node-a", "node-b", "node-c"});
    if (!node_list) return {{"Pod", pod}, {"NodeNames", names}};
    json items = json::array();
    for (auto& n : names) items.push_back({{"metadata", {{"name", n}}}});
    return {{"Pod", pod}, {"Nodes", {{"items", items}}}};
  }
  std::map<std::string, int> Scores(const std::string& datasets) {
    std::map<std::string, int> out;
    for (auto& h : Post("prioritize", PodArgs(datasets, false))) out[h["Host"]] = h["Score"];
    return out;
  }

  std::string dir_, group_, url_, etcd_url_, secret_file_;
  std::unique_ptr<BackgroundProcess> etcd_, mount_, extender_;
  std::vector<std::unique_ptr<group::GroupMember>> members_;
};

TEST_F(CsiExtenderTest, FilterAndPrioritizeFollowWhatMembersCache) {
  // The dataset, and the member (node-a) that reads it all.
  const std::string data = dir_ + "/bucket/imagenet";
  std::filesystem::create_directories(data);
  std::mt19937 rng(3);
  for (int i = 0; i < 6; ++i) {
    std::string body(2 << 20, '\0');
    for (auto& c : body) c = static_cast<char>(rng());
    std::ofstream(data + "/s" + std::to_string(i)) << body;
  }
  std::filesystem::create_directories(dir_ + "/mnt");
  testing::EnvOverrides env = {{"STRATA_GROUP_SECRET", kSecret}};
  auto m = BackgroundProcess::Start(
      {std::string(std::getenv("STRATA_BINARY_DIR")) + "/src/cli/strata", "mount", "file://" + data, dir_ + "/mnt",
       "--foreground", "--cache-dir", dir_ + "/cache-a", "--cache-group", group_, "--peer-listen", "127.0.0.1:0",
       "--publish-dataset", "imagenet", "--publish-node", "node-a"},
      dir_ + "/mount.log", env);
  ASSERT_TRUE(m.ok()) << m.status();
  mount_ = std::move(*m);
  ASSERT_TRUE(mount_->WaitForLine("strata: mounted", std::chrono::seconds(30)).ok()) << mount_->Log();
  auto cat = testing::RunCommand({"sh", "-c", "cat " + dir_ + "/mnt/* | wc -c"});
  ASSERT_TRUE(cat.ok() && cat->exit_code == 0);
  EXPECT_EQ(std::stoll(cat->stdout_text), 6ll << 21);
  // Two more members of the group that hold none of it (joining after the read, so
  // node-a owned every block).
  for (const char* node : {"node-b", "node-c"}) JoinMember(node, 0);
  StartExtender();

  // node-a publishes its cached bytes at its next lease renewal (every ~1.7 s).
  ASSERT_TRUE(WaitFor([&] { return Scores("imagenet")["node-a"] == 10; }, std::chrono::seconds(20)))
      << extender_->Log() << mount_->Log();
  EXPECT_EQ(Scores("imagenet"), (std::map<std::string, int>{{"node-a", 10}, {"node-b", 0}, {"node-c", 0}}));
  json f = Post("filter", PodArgs("imagenet", false));
  EXPECT_EQ(f["NodeNames"], json::array({"node-a"}));
  EXPECT_TRUE(f["FailedNodes"].contains("node-b"));
  EXPECT_TRUE(f["FailedNodes"].contains("node-c"));
  EXPECT_EQ(f["Error"], "");
  json fl = Post("filter", PodArgs("imagenet", true));  // the scheduler sending Node objects
  ASSERT_EQ(fl["Nodes"]["items"].size(), 1u);
  EXPECT_EQ(fl["Nodes"]["items"][0]["metadata"]["name"], "node-a");
  // A pod whose datasets nobody caches goes anywhere.
  EXPECT_EQ(Post("filter", PodArgs("other", false))["NodeNames"].size(), 3u);
  EXPECT_EQ(Scores("other"), (std::map<std::string, int>{{"node-a", 0}, {"node-b", 0}, {"node-c", 0}}));

  // node-a's member leaves (its mount stops): its record goes with its lease, and
  // the extender no longer sends pods to it for the data.
  ASSERT_EQ(testing::RunCommand({"fusermount3", "-u", dir_ + "/mnt"})->exit_code, 0);
  mount_->WaitExit(std::chrono::seconds(30));
  EXPECT_TRUE(WaitFor([&] { return Scores("imagenet")["node-a"] == 0; }, std::chrono::seconds(10)));
  EXPECT_EQ(Post("filter", PodArgs("imagenet", false))["NodeNames"].size(), 3u);
}

// Anyone who can write the group's etcd prefix but has no group secret cannot
// draw pods to a node: records unsigned, signed with another secret, or moved
// from another member's key are ignored, and counted.
TEST_F(CsiExtenderTest, RecordsNotSignedWithTheGroupSecretAreIgnoredAndCounted) {
  JoinMember("node-a", 8 << 20);
  JoinMember("node-b", 0);
  JoinMember("node-c", 0);
  const std::string claim = json{{"node", "node-b"}, {"datasets", {{"imagenet", 1ull << 40}}}}.dump();
  PutRaw("forged-unsigned", claim);  // the format before records were signed
  const int64_t now =
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  PutRaw("forged-other-secret", group::FormatPublishedRecord("another-secret-of-32-bytes-at-least!!", "train",
                                                             "forged-other-secret", claim, now, now + 300));
  // Signed with the secret for one key, put under another: the MAC covers the key.
  PutRaw("forged-moved", group::FormatPublishedRecord(kSecret, "train", "127.0.0.1:1", claim, now, now + 300));
  StartExtender();

  EXPECT_EQ(Scores("imagenet"), (std::map<std::string, int>{{"node-a", 10}, {"node-b", 0}, {"node-c", 0}}));
  EXPECT_EQ(Post("filter", PodArgs("imagenet", false))["NodeNames"], json::array({"node-a"}));
  // Two requests so far, each reading three signed records and refusing three.
  EXPECT_EQ(Metric("strata_extender_records_used_total"), 6u);
  EXPECT_EQ(Metric("strata_extender_records_refused_total"), 6u);
  EXPECT_NE(extender_->Log().find("forged-other-secret's record ignored"), std::string::npos) << extender_->Log();

  // The same claim, signed with the group's secret under its own key, counts (the
  // test's refusals above are about the signature, nothing else).
  PutRaw("forged-moved", group::FormatPublishedRecord(kSecret, "train", "forged-moved", claim, now, now + 300));
  EXPECT_EQ(Scores("imagenet")["node-b"], 10);
}

// A client that connects and sends nothing, or stops mid-request, is dropped
// after the idle timeout; others are served meanwhile.
TEST_F(CsiExtenderTest, IdleConnectionsAreClosedAfterTheIdleTimeout) {
  StartExtender({"--idle-timeout", "1s"});
  // Before the connections: the server's timer starts after it accepts them, so neither can close before 1 s from here.
  const auto start = std::chrono::steady_clock::now();
  const int silent = ConnectRaw();
  const int stalled = ConnectRaw();
  const std::string partial = "POST /filter HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100\r\n\r\n{\"Pod\":";
  ASSERT_EQ(write(stalled, partial.data(), partial.size()), static_cast<ssize_t>(partial.size()));
  // Served while the two hold their connections.
  auto health = testing::RunCommand({"curl", "-sS", "--fail", "--max-time", "5", url_ + "/healthz"});
  ASSERT_TRUE(health.ok() && health->exit_code == 0);
  EXPECT_EQ(health->stdout_text, "{\"ok\":true}");
  // Each is closed by the server (EOF) within the timeout plus slack, not before it.
  for (int fd : {silent, stalled}) {
    pollfd p{fd, POLLIN, 0};
    ASSERT_EQ(poll(&p, 1, 15000), 1) << "the server kept an idle connection open for 15 s";
    char c;
    EXPECT_EQ(read(fd, &c, 1), 0) << "closed without an answer";
    close(fd);
  }
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(1000));
  EXPECT_EQ(Metric("strata_extender_connections_idle_closed_total"), 2u);
}

TEST_F(CsiExtenderTest, ConnectionsPastTheCapAreClosedOnArrival) {
  StartExtender({"--idle-timeout", "60s", "--max-connections", "2"});
  // Two silent clients hold both places; a third is closed long before the 60 s idle timeout.
  const int first = ConnectRaw();
  const int second = ConnectRaw();
  const int third = ConnectRaw();
  pollfd p{third, POLLIN, 0};
  ASSERT_EQ(poll(&p, 1, 15000), 1) << "a connection past the cap was kept";
  char c;
  EXPECT_EQ(read(third, &c, 1), 0);
  close(third);
  // A place frees when a client leaves: the next request is served.
  close(first);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(15);
  bool served = false;
  while (!served && std::chrono::steady_clock::now() < deadline) {
    auto health = testing::RunCommand({"curl", "-sS", "--fail", "--max-time", "5", url_ + "/healthz"});
    served = health.ok() && health->exit_code == 0 && health->stdout_text == "{\"ok\":true}";
  }
  EXPECT_TRUE(served) << "no request served after a place was freed";
  close(second);
  EXPECT_GE(Metric("strata_extender_connections_refused_total"), 1u);
}

}  // namespace
}  // namespace strata::csi
