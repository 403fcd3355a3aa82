// The scheduler extender end to end: a real etcd, a cache group of three members
// (a real `strata mount` that read the dataset and publishes what it caches, and two
// members that hold none of it), `strata scheduler-extender` answering the
// scheduler's filter and prioritize requests over HTTP (curl), and the member that
// held the data leaving the group.
#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>

#include "group/member.h"
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
    group_ = "etcd://" + etcd->client_url.substr(7) + "/train";
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

  std::string dir_, group_, url_;
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
  testing::EnvOverrides env = {{"STRATA_GROUP_SECRET", "extender-test-secret-of-32-bytes-at-least"}};
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
  for (const char* node : {"node-b", "node-c"}) {
    group::JoinOptions jo;
    jo.url = group_;
    jo.listen = "127.0.0.1:0";
    jo.secret = "extender-test-secret-of-32-bytes-at-least";
    jo.record = [node] { return json{{"node", node}, {"datasets", json::object()}}.dump(); };
    auto member = group::GroupMember::Join(jo);
    ASSERT_TRUE(member.ok()) << member.status();
    members_.push_back(std::move(*member));
  }
  auto e =
      BackgroundProcess::Start({std::string(std::getenv("STRATA_BINARY_DIR")) + "/src/cli/strata", "scheduler-extender",
                                "--listen", "127.0.0.1:0", "--cache-group", group_, "--min-fraction", "0.5"},
                               dir_ + "/extender.log");
  ASSERT_TRUE(e.ok()) << e.status();
  extender_ = std::move(*e);
  auto listening = extender_->WaitForLine("listening on ", std::chrono::seconds(10));
  ASSERT_TRUE(listening.ok()) << listening.status();
  url_ = *listening;

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

}  // namespace
}  // namespace strata::csi
