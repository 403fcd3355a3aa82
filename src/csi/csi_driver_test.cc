// `strata csi` driven as a kubelet drives it: a gRPC client (the spec's csi.v1
// stubs) over the driver's unix socket, against a real Ceph RGW bucket. The
// driver and the mount host that launches its mounts run with the command lines
// and environments deploy/kubernetes/node.yaml and mounts.yaml give them (read
// from the YAML, paths mapped into the test's directory). "Pods"
// are processes in their own mount namespaces (unshare -m, slave propagation as
// a container with mountPropagation: HostToContainer) reading through their
// target paths; the kubelet's directory is a shared mount, as the kubelet's is.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>

#include "base/hash.h"
#include "csi/controller.h"
#include "csi/csi.grpc.pb.h"
#include "csi/mount_process.h"
#include "csi/volume.h"
#include "io/durable.h"
#include "io/file_system.h"
#include "testing/background_process.h"
#include "testing/s3_server.h"
#include "testing/subprocess.h"

namespace strata::csi {
namespace {

namespace v1 = ::csi::v1;
namespace stdfs = std::filesystem;
using testing::BackgroundProcess;
using testing::RunCommand;

constexpr int kFiles = 8;
constexpr size_t kFileBytes = 3 << 20;

std::string StrataBin() { return std::string(std::getenv("STRATA_BINARY_DIR")) + "/src/cli/strata"; }

template <typename Pred>
bool WaitFor(Pred pred, std::chrono::milliseconds deadline) {
  const auto end = std::chrono::steady_clock::now() + deadline;
  while (std::chrono::steady_clock::now() < end) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // polling a condition, with a deadline
  }
  return pred();
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

testing::CommandResult Exec(const std::vector<std::string>& argv) {
  auto r = RunCommand(argv);
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? *r : testing::CommandResult{-1, "", ""};
}

int Count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

v1::VolumeCapability MountCap(v1::VolumeCapability::AccessMode::Mode mode) {
  v1::VolumeCapability c;
  c.mutable_mount();
  c.mutable_access_mode()->set_mode(mode);
  return c;
}
constexpr auto kRwx = v1::VolumeCapability::AccessMode::MULTI_NODE_MULTI_WRITER;

// A container as the runtime (runc, cgroup v1) treats one: a freezer cgroup
// holding its first process and everything that process forks; its end freezes
// the cgroup, SIGKILLs every task and thaws it, so nothing started inside
// survives (the mounts a plugin launched itself included).
class Container {
 public:
  // Null when this machine has no writable cgroup v1 freezer hierarchy.
  static std::unique_ptr<Container> Create(const std::string& name) {
    const std::string path = "/sys/fs/cgroup/freezer/strata-csi-test-" + std::to_string(getpid()) + "-" + name;
    if (::mkdir(path.c_str(), 0755) != 0 && errno != EEXIST) return nullptr;
    return std::unique_ptr<Container>(new Container(path));
  }
  ~Container() {
    Kill();
    ::rmdir(path_.c_str());
  }
  // `argv` run as the container's first process.
  std::vector<std::string> Wrap(const std::vector<std::string>& argv) const {
    std::vector<std::string> out = {"sh", "-c", "echo $$ > '" + path_ + "/cgroup.procs' && exec \"$@\"", "container"};
    out.insert(out.end(), argv.begin(), argv.end());
    return out;
  }
  std::vector<int> Pids() const {
    std::vector<int> pids;
    std::ifstream in(path_ + "/cgroup.procs");
    for (int pid; in >> pid;) pids.push_back(pid);
    return pids;
  }
  bool Holds(int pid) const {
    const auto pids = Pids();
    return std::find(pids.begin(), pids.end(), pid) != pids.end();
  }
  void Kill() {
    auto state = [&] {
      std::ifstream in(path_ + "/freezer.state");
      std::string s;
      in >> s;
      return s;
    };
    std::ofstream(path_ + "/freezer.state") << "FROZEN";
    EXPECT_TRUE(WaitFor([&] { return state() == "FROZEN"; }, std::chrono::seconds(10))) << state();
    for (int pid : Pids()) ::kill(pid, SIGKILL);
    std::ofstream(path_ + "/freezer.state") << "THAWED";
    EXPECT_TRUE(WaitFor([&] { return Pids().empty(); }, std::chrono::seconds(10))) << "a container's process survived";
  }

 private:
  explicit Container(std::string path) : path_(std::move(path)) {}
  std::string path_;
};

class CsiDriverTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto rgw = testing::S3TestServer::Start(testing::S3TestServer::Kind::kRgw);
    ASSERT_TRUE(rgw.ok()) << rgw.status();
    rgw_ = std::move(*rgw).release();
    auto store = OpenStoreWithSecrets(rgw_->StoreUrl("data"), Secrets());
    ASSERT_TRUE(store.ok()) << store.status();
    std::mt19937 rng(7);
    for (int i = 0; i < kFiles; ++i) {
      std::string body(kFileBytes, '\0');
      for (auto& c : body) c = static_cast<char>(rng());
      const std::string name = "f" + std::to_string(i) + ".bin";
      ASSERT_TRUE((*store)->Put(name, Buffer::Copy(body)).ok());
      (*sums_)[name] = ToHex(Sha256(body));
    }
  }
  static void TearDownTestSuite() {
    delete rgw_;
    rgw_ = nullptr;
  }
  static StringMap Secrets() {
    return {{"AWS_ACCESS_KEY_ID", rgw_->access_key()},
            {"AWS_SECRET_ACCESS_KEY", rgw_->secret_key()},
            {"STRATA_GROUP_SECRET", "grp-5e3a7c1d9b-a-group-secret-of-32-bytes"}};
  }

  void SetUp() override {
    auto dir = io::MakeTempDir("strata-csi-test-");
    ASSERT_TRUE(dir.ok());
    dir_ = *dir;
    // The kubelet's directory is a shared mount: the driver's mounts and binds
    // propagate to the pods' namespaces (slaves of it).
    kubelet_ = dir_ + "/kubelet";
    stdfs::create_directories(kubelet_);
    ASSERT_EQ(Exec({"mount", "--bind", kubelet_, kubelet_}).exit_code, 0);
    ASSERT_EQ(Exec({"mount", "--make-rshared", kubelet_}).exit_code, 0);
    StartDriver();
  }

  void TearDown() override {
    pods_.clear();
    identity_.reset(), node_.reset(), controller_.reset(), channel_.reset();  // the kubelet goes away first
    if (driver_) driver_->Stop(std::chrono::seconds(5));
    if (mount_host_) mount_host_->Stop(std::chrono::seconds(5));
    // Whatever a failed test left: the mounts recorded in the state dir, then the tree.
    for (auto& e : stdfs::directory_iterator(dir_ + "/state/volumes", ec_)) {
      auto r = ParseVolumeRecord(ReadFile(e.path()));
      if (!r.ok()) continue;
      if (r->pid > 0 && r->pid_start_time == ProcessStartTime(r->pid)) kill(r->pid, SIGKILL);
      for (auto& t : r->targets) RunCommand({"umount", "-l", t.path}).status().IgnoreError();
      RunCommand({"umount", "-l", r->staging_path}).status().IgnoreError();
    }
    RunCommand({"umount", "-R", "-l", kubelet_}).status().IgnoreError();
    io::RemoveAll(io::DefaultFileSystem(), dir_).IgnoreError();
  }

  // The plugin container's command line and environment from node.yaml, and the
  // mount host's from mounts.yaml, with the containers' paths mapped into dir_ and
  // the downward API filled as the kubelet would. The mount host starts first.
  void StartDriver() {
    auto r = RunCommand({"/usr/bin/python3", testing::SourceDir() + "/src/csi/testdata/check_manifests.py",
                         testing::SourceDir() + "/deploy/kubernetes"});
    ASSERT_TRUE(r.ok()) << r.status();
    ASSERT_EQ(r->exit_code, 0) << r->stderr_text;
    auto ds = nlohmann::json::parse(r->stdout_text);
    stdfs::create_directories(dir_ + "/state-key");  // the strata-csi-state-key Secret's volume
    std::ofstream(dir_ + "/state-key/key") << "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff\n";
    driver_env_ = {{"AWS_ACCESS_KEY_ID", std::nullopt},  // only the request's secrets count
                   {"AWS_SECRET_ACCESS_KEY", std::nullopt},
                   {"AWS_SHARED_CREDENTIALS_FILE", "/nonexistent"},
                   {"AWS_CONFIG_FILE", "/nonexistent"}};
    driver_argv_ = ContainerCommand(ds, &driver_env_);
    socket_ = dir_ + "/csi/csi.sock";
    ASSERT_NE(std::find(driver_argv_.begin(), driver_argv_.end(), "--endpoint=unix://" + socket_), driver_argv_.end());
    ASSERT_NE(std::find(driver_argv_.begin(), driver_argv_.end(), "--node-id=node-a"), driver_argv_.end());
    host_env_ = {{"AWS_ACCESS_KEY_ID", std::nullopt}, {"AWS_SECRET_ACCESS_KEY", std::nullopt}};
    host_argv_ = ContainerCommand(ds["mount_host"], &host_env_);
    host_socket_ = dir_ + "/state/mount-host.sock";
    ASSERT_NE(std::find(host_argv_.begin(), host_argv_.end(), "--mount-host=unix://" + host_socket_), host_argv_.end());
    ASSERT_NE(std::find(driver_argv_.begin(), driver_argv_.end(), "--mount-host=unix://" + host_socket_),
              driver_argv_.end());
    StartMountHost();
    Restart();
  }

  // A container's command line: $(VAR) expanded as the kubelet does (downward API
  // values filled in) and --flag=PATH / --flag=unix://PATH under one of the
  // containers' mount paths mapped into dir_; its environment added to *env.
  std::vector<std::string> ContainerCommand(const nlohmann::json& c, testing::EnvOverrides* env) {
    std::map<std::string, std::string> paths = {{"/csi", dir_ + "/csi"},
                                                {"/var/lib/strata-csi", dir_ + "/state"},
                                                {"/var/lib/kubelet", kubelet_},
                                                {"/etc/strata-csi", dir_ + "/state-key"}};
    std::map<std::string, std::string> downward = {{"fieldRef:spec.nodeName", "node-a"},
                                                   {"fieldRef:status.hostIP", "127.0.0.1"}};
    std::map<std::string, std::string> vars;
    for (auto& [k, v] : c["env"].items()) {
      std::string value = v.get<std::string>();
      if (downward.count(value)) value = downward[value];
      vars[k] = value;
      env->push_back({k, value});
    }
    std::vector<std::string> argv;
    for (auto& a : c["command"]) argv.push_back(a.get<std::string>());
    EXPECT_EQ(argv[0], "strata");
    argv[0] = StrataBin();
    for (auto& a : c["args"]) {
      std::string arg = a.get<std::string>();
      for (auto& [k, v] : vars) {
        for (size_t at; (at = arg.find("$(" + k + ")")) != std::string::npos;) arg.replace(at, k.size() + 3, v);
      }
      const size_t eq = arg.find('=');
      if (eq != std::string::npos) {
        size_t at = eq + 1;
        if (arg.compare(at, 7, "unix://") == 0) at += 7;
        for (auto& [from, to] : paths) {
          const std::string rest = arg.substr(at);
          if (rest == from || rest.starts_with(from + "/")) arg = arg.substr(0, at) + to + rest.substr(from.size());
        }
      }
      argv.push_back(arg);
    }
    return argv;
  }

  void StartMountHost() {
    stdfs::create_directories(dir_ + "/state");  // the state dir's hostPath (DirectoryOrCreate)
    auto p = BackgroundProcess::Start(host_argv_, dir_ + "/mount-host.log", host_env_);
    ASSERT_TRUE(p.ok()) << p.status();
    mount_host_ = std::move(*p);
    ASSERT_TRUE(
        WaitFor([&] { return mount_host_->Log().find("serving on") != std::string::npos; }, std::chrono::seconds(30)))
        << mount_host_->Log();
  }

  void Restart() {
    auto p = BackgroundProcess::Start(driver_argv_, dir_ + "/driver.log", driver_env_);
    ASSERT_TRUE(p.ok()) << p.status();
    driver_ = std::move(*p);
    // A kubelet redials quickly; gRPC's default backoff (1 s, growing) would slow every start.
    grpc::ChannelArguments args;
    args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 50);
    args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 50);
    args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 200);
    channel_ = grpc::CreateCustomChannel("unix://" + socket_, grpc::InsecureChannelCredentials(), args);
    ASSERT_TRUE(WaitFor(
        [&] {
          grpc::ClientContext ctx;
          ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(500));
          v1::ProbeResponse out;
          return v1::Identity::NewStub(channel_)->Probe(&ctx, v1::ProbeRequest(), &out).ok() && out.ready().value();
        },
        std::chrono::seconds(30)))
        << driver_->Log();
    identity_ = v1::Identity::NewStub(channel_);
    node_ = v1::Node::NewStub(channel_);
    controller_ = v1::Controller::NewStub(channel_);
  }

  template <typename Stub, typename Req, typename Resp>
  grpc::StatusCode Call(grpc::Status (Stub::*method)(grpc::ClientContext*, const Req&, Resp*), Stub* stub,
                        const Req& req, Resp* resp = nullptr) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(90));
    Resp local;
    grpc::Status st = (stub->*method)(&ctx, req, resp ? resp : &local);
    last_error_ = st.error_message();
    return st.error_code();
  }

  v1::NodeStageVolumeRequest StageReq(const std::string& id, StringMap context = {}) {
    v1::NodeStageVolumeRequest r;
    r.set_volume_id(id);
    r.set_staging_target_path(Staging(id));
    *r.mutable_volume_capability() = MountCap(kRwx);
    if (context.empty()) context = {{"url", rgw_->StoreUrl("data")}, {"metadata-ttl", "forever"}};
    for (auto& [k, v] : context) (*r.mutable_volume_context())[k] = v;
    for (auto& [k, v] : Secrets()) (*r.mutable_secrets())[k] = v;
    return r;
  }
  v1::NodePublishVolumeRequest PublishReq(const std::string& id, const std::string& pod, bool ro) {
    v1::NodePublishVolumeRequest r;
    r.set_volume_id(id);
    r.set_staging_target_path(Staging(id));
    r.set_target_path(Target(pod));
    r.set_readonly(ro);
    *r.mutable_volume_capability() = MountCap(kRwx);
    return r;
  }
  // As the kubelet names it: a hash of the volume handle (ids are URLs here).
  std::string Staging(const std::string& id) {
    return kubelet_ + "/plugins/kubernetes.io/csi/csi.strata.dev/" + VolumeKey(id) + "/globalmount";
  }
  std::string Target(const std::string& pod) { return kubelet_ + "/pods/" + pod + "/volumes/csi/data/mount"; }
  grpc::StatusCode Stage(const std::string& id) {
    return Call(&v1::Node::Stub::NodeStageVolume, node_.get(), StageReq(id));
  }
  grpc::StatusCode Publish(const std::string& id, const std::string& pod, bool ro = false) {
    return Call(&v1::Node::Stub::NodePublishVolume, node_.get(), PublishReq(id, pod, ro));
  }
  grpc::StatusCode Unpublish(const std::string& id, const std::string& pod) {
    v1::NodeUnpublishVolumeRequest r;
    r.set_volume_id(id);
    r.set_target_path(Target(pod));
    return Call(&v1::Node::Stub::NodeUnpublishVolume, node_.get(), r);
  }
  grpc::StatusCode Unstage(const std::string& id) {
    v1::NodeUnstageVolumeRequest r;
    r.set_volume_id(id);
    r.set_staging_target_path(Staging(id));
    return Call(&v1::Node::Stub::NodeUnstageVolume, node_.get(), r);
  }
  VolumeRecord Record(const std::string& id) {
    auto r = ParseVolumeRecord(ReadFile(dir_ + "/state/volumes/" + VolumeKey(id) + ".json"));
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? *r : VolumeRecord{};
  }

  // sha256sum of every file as a pod sees it through its target path, in its own mount namespace.
  std::string PodSums(const std::string& pod) {
    auto r =
        Exec({"unshare", "-m", "--propagation", "slave", "--", "sh", "-c", "cd '" + Target(pod) + "' && sha256sum *"});
    return r.exit_code == 0 ? r.stdout_text : "exit " + std::to_string(r.exit_code) + ": " + r.stderr_text;
  }
  static std::string ExpectedSums() {
    std::string out;
    for (auto& [name, sum] : *sums_) out += sum + "  " + name + "\n";
    return out;
  }
  // A pod reading the dataset in a loop, one "ok N" or "bad N" line per pass.
  BackgroundProcess* StartReader(const std::string& pod) {
    const std::string expected = dir_ + "/expected-" + pod;
    std::ofstream(expected) << ExpectedSums();
    const std::string script = "cd / ; i=0; while [ ! -e '" + dir_ +
                               "/stop' ]; do "
                               "if (cd '" +
                               Target(pod) + "' && sha256sum * 2>/dev/null) | cmp -s - '" + expected +
                               "'; then echo ok $i; else echo bad $i; fi; i=$((i+1)); done";
    auto p = BackgroundProcess::Start({"unshare", "-m", "--propagation", "slave", "--", "sh", "-c", script},
                                      dir_ + "/reader-" + pod + ".log");
    EXPECT_TRUE(p.ok()) << p.status();
    pods_.push_back(std::move(*p));
    return pods_.back().get();
  }

  // Stages each volume, publishes it into its pod and starts a reader there (pods[i] reads vols[i]).
  std::vector<BackgroundProcess*> StageAndRead(const std::vector<std::string>& vols,
                                               const std::vector<std::string>& pods) {
    std::vector<BackgroundProcess*> readers;
    for (size_t i = 0; i < vols.size(); ++i) {
      EXPECT_EQ(Stage(vols[i]), grpc::OK) << last_error_;
      EXPECT_EQ(Publish(vols[i], pods[i]), grpc::OK) << last_error_;
      readers.push_back(StartReader(pods[i]));
    }
    return readers;
  }

  static testing::S3TestServer* rgw_;
  static std::map<std::string, std::string>* sums_;
  std::string dir_, kubelet_, socket_;
  std::vector<std::string> driver_argv_, host_argv_;
  testing::EnvOverrides driver_env_, host_env_;
  std::string host_socket_;
  std::unique_ptr<BackgroundProcess> driver_, mount_host_;
  std::vector<std::unique_ptr<BackgroundProcess>> pods_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::Identity::Stub> identity_;
  std::unique_ptr<v1::Node::Stub> node_;
  std::unique_ptr<v1::Controller::Stub> controller_;
  std::string last_error_;
  std::error_code ec_;
};
testing::S3TestServer* CsiDriverTest::rgw_ = nullptr;
std::map<std::string, std::string>* CsiDriverTest::sums_ = new std::map<std::string, std::string>();

TEST_F(CsiDriverTest, IdentityAndNodeInfo) {
  v1::GetPluginInfoResponse info;
  ASSERT_EQ(Call(&v1::Identity::Stub::GetPluginInfo, identity_.get(), v1::GetPluginInfoRequest(), &info), grpc::OK);
  EXPECT_EQ(info.name(), "csi.strata.dev");
  EXPECT_FALSE(info.vendor_version().empty());
  v1::GetPluginCapabilitiesResponse caps;
  ASSERT_EQ(
      Call(&v1::Identity::Stub::GetPluginCapabilities, identity_.get(), v1::GetPluginCapabilitiesRequest(), &caps),
      grpc::OK);
  EXPECT_EQ(caps.capabilities_size(), 0);  // node mode (the DaemonSet): no controller service
  v1::NodeGetInfoResponse ni;
  ASSERT_EQ(Call(&v1::Node::Stub::NodeGetInfo, node_.get(), v1::NodeGetInfoRequest(), &ni), grpc::OK);
  EXPECT_EQ(ni.node_id(), "node-a");
  v1::NodeGetCapabilitiesResponse nc;
  ASSERT_EQ(Call(&v1::Node::Stub::NodeGetCapabilities, node_.get(), v1::NodeGetCapabilitiesRequest(), &nc), grpc::OK);
  std::set<int> types;
  for (auto& c : nc.capabilities()) types.insert(c.rpc().type());
  EXPECT_EQ(types, (std::set<int>{v1::NodeServiceCapability::RPC::STAGE_UNSTAGE_VOLUME,
                                  v1::NodeServiceCapability::RPC::GET_VOLUME_STATS}));
  // The controller is not served in node mode.
  EXPECT_EQ(
      Call(&v1::Controller::Stub::ControllerGetCapabilities, controller_.get(), v1::ControllerGetCapabilitiesRequest()),
      grpc::UNIMPLEMENTED);
}

TEST_F(CsiDriverTest, LifecycleTwoPodsReadOnlyAndIdempotent) {
  const std::string vol = "vol-life";
  ASSERT_EQ(Stage(vol), grpc::OK) << last_error_;
  const int pid = Record(vol).pid;
  ASSERT_GT(pid, 0);
  ASSERT_EQ(Stage(vol), grpc::OK) << last_error_;  // kubelet retries: the same mount, no second one
  EXPECT_EQ(Record(vol).pid, pid);
  ASSERT_EQ(Publish(vol, "pod-a"), grpc::OK) << last_error_;
  ASSERT_EQ(Publish(vol, "pod-a"), grpc::OK) << last_error_;
  ASSERT_EQ(Publish(vol, "pod-b", /*ro=*/true), grpc::OK) << last_error_;
  ASSERT_EQ(Publish(vol, "pod-b", /*ro=*/true), grpc::OK) << last_error_;
  EXPECT_EQ(Record(vol).targets.size(), 2u);
  // Each pod, in its own mount namespace, reads the dataset byte-exact.
  EXPECT_EQ(PodSums("pod-a"), ExpectedSums());
  EXPECT_EQ(PodSums("pod-b"), ExpectedSums());
  // Read-only publish refuses writes; the read-write one writes through to the bucket.
  auto ro =
      Exec({"unshare", "-m", "--propagation", "slave", "--", "sh", "-c", "echo x > '" + Target("pod-b") + "/ro.txt'"});
  EXPECT_NE(ro.exit_code, 0);
  EXPECT_NE(ro.stderr_text.find("Read-only file system"), std::string::npos) << ro.stderr_text;
  auto rw = Exec({"unshare", "-m", "--propagation", "slave", "--", "sh", "-c",
                  "echo written-by-pod-a > '" + Target("pod-a") + "/rw.txt'"});
  EXPECT_EQ(rw.exit_code, 0) << rw.stderr_text;
  auto store = OpenStoreWithSecrets(rgw_->StoreUrl("data"), Secrets());
  ASSERT_TRUE(store.ok());
  auto got = (*store)->Get("rw.txt");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->data.ToString(), "written-by-pod-a\n");
  ASSERT_TRUE((*store)->Delete("rw.txt").ok());
  // Stats: the bytes read are in the volume's disk cache.
  v1::NodeGetVolumeStatsRequest sr;
  sr.set_volume_id(vol);
  sr.set_volume_path(Target("pod-a"));
  v1::NodeGetVolumeStatsResponse stats;
  ASSERT_EQ(Call(&v1::Node::Stub::NodeGetVolumeStats, node_.get(), sr, &stats), grpc::OK) << last_error_;
  ASSERT_EQ(stats.usage_size(), 1);
  EXPECT_EQ(stats.usage(0).unit(), v1::VolumeUsage::BYTES);
  EXPECT_GE(stats.usage(0).used(), static_cast<int64_t>(kFiles * kFileBytes));
  EXPECT_GE(stats.usage(0).total(), stats.usage(0).used());
  // Unpublish and unstage, each twice.
  EXPECT_EQ(Unstage(vol), grpc::FAILED_PRECONDITION);  // still published
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(Unpublish(vol, "pod-a"), grpc::OK) << last_error_;
    EXPECT_EQ(Unpublish(vol, "pod-b"), grpc::OK) << last_error_;
  }
  EXPECT_FALSE(stdfs::exists(Target("pod-a")));
  EXPECT_TRUE(WaitFor([&] { return Unstage(vol) == grpc::OK; }, std::chrono::seconds(10))) << last_error_;
  EXPECT_EQ(Unstage(vol), grpc::OK) << last_error_;
  EXPECT_TRUE(WaitFor([&] { return testing::ProcessGone(pid); }, std::chrono::seconds(10)));
  EXPECT_FALSE(stdfs::exists(dir_ + "/state/volumes/" + VolumeKey(vol) + ".json"));
  EXPECT_EQ(Count(ReadFile("/proc/self/mountinfo"), Staging(vol) + " "), 0);
}

// NodeGetVolumeStats reports what the volume's cache can hold: its cache-disk
// bound when the disk has more room, and no more than the free space above its
// cache-free-space floor (a floor above the free space: nothing beyond what it holds).
TEST_F(CsiDriverTest, VolumeStatsReportTheCacheBoundAndTheFreeSpaceFloor) {
  auto stats = [&](const std::string& vol, const std::string& pod) {
    v1::NodeGetVolumeStatsRequest sr;
    sr.set_volume_id(vol);
    sr.set_volume_path(Target(pod));
    v1::NodeGetVolumeStatsResponse out;
    EXPECT_EQ(Call(&v1::Node::Stub::NodeGetVolumeStats, node_.get(), sr, &out), grpc::OK) << last_error_;
    EXPECT_EQ(out.usage_size(), 1);
    return out.usage_size() == 1 ? out.usage(0) : v1::VolumeUsage();
  };
  const int64_t bound = 4 << 20;  // of the 24 MiB dataset
  const std::string url = rgw_->StoreUrl("data");
  ASSERT_EQ(Call(&v1::Node::Stub::NodeStageVolume, node_.get(),
                 StageReq("vol-bound", {{"url", url}, {"cache-disk", "4MiB"}})),
            grpc::OK)
      << last_error_;
  ASSERT_EQ(Publish("vol-bound", "pod-b"), grpc::OK) << last_error_;
  EXPECT_EQ(PodSums("pod-b"), ExpectedSums());
  v1::VolumeUsage u = stats("vol-bound", "pod-b");
  EXPECT_EQ(u.total(), bound);  // the disk has far more room than the bound
  EXPECT_GT(u.used(), 0);
  EXPECT_EQ(u.available(), bound - std::min(bound, u.used()));

  ASSERT_EQ(Call(&v1::Node::Stub::NodeStageVolume, node_.get(),
                 StageReq("vol-floor", {{"url", url}, {"cache-free-space", "100%"}})),
            grpc::OK)
      << last_error_;
  ASSERT_EQ(Publish("vol-floor", "pod-f"), grpc::OK) << last_error_;
  EXPECT_EQ(PodSums("pod-f"), ExpectedSums());
  u = stats("vol-floor", "pod-f");
  EXPECT_EQ(u.total(), u.used());  // no room above the floor: nothing more fits
  EXPECT_EQ(u.available(), 0);
  EXPECT_LT(u.used(), bound);  // and the mount kept (almost) nothing

  for (const auto& [vol, pod] : {std::pair{"vol-bound", "pod-b"}, {"vol-floor", "pod-f"}}) {
    EXPECT_EQ(Unpublish(vol, pod), grpc::OK) << last_error_;
    EXPECT_TRUE(WaitFor([&] { return Unstage(vol) == grpc::OK; }, std::chrono::seconds(10))) << last_error_;
  }
}

TEST_F(CsiDriverTest, ErrorCodes) {
  auto no_id = StageReq("");
  EXPECT_EQ(Call(&v1::Node::Stub::NodeStageVolume, node_.get(), no_id), grpc::INVALID_ARGUMENT);
  auto no_cap = StageReq("vol-err");
  no_cap.clear_volume_capability();
  EXPECT_EQ(Call(&v1::Node::Stub::NodeStageVolume, node_.get(), no_cap), grpc::INVALID_ARGUMENT);
  auto block = StageReq("vol-err");
  block.mutable_volume_capability()->mutable_block();
  EXPECT_EQ(Call(&v1::Node::Stub::NodeStageVolume, node_.get(), block), grpc::INVALID_ARGUMENT);
  auto no_url = StageReq("vol-err", {{"cache-disk", "1GiB"}});
  EXPECT_EQ(Call(&v1::Node::Stub::NodeStageVolume, node_.get(), no_url), grpc::INVALID_ARGUMENT);
  auto bad_secret = StageReq("vol-err");
  (*bad_secret.mutable_secrets())["password"] = "x";
  EXPECT_EQ(Call(&v1::Node::Stub::NodeStageVolume, node_.get(), bad_secret), grpc::INVALID_ARGUMENT);
  auto wrong_key = StageReq("vol-err");
  (*wrong_key.mutable_secrets())["AWS_SECRET_ACCESS_KEY"] = "not-the-secret";
  EXPECT_EQ(Call(&v1::Node::Stub::NodeStageVolume, node_.get(), wrong_key), grpc::PERMISSION_DENIED) << last_error_;
  EXPECT_FALSE(stdfs::exists(dir_ + "/state/volumes/" + VolumeKey("vol-err") + ".json"));  // nothing recorded
  EXPECT_EQ(Publish("vol-err", "pod-x"), grpc::FAILED_PRECONDITION);                       // not staged
  EXPECT_EQ(Unpublish("vol-err", "pod-x"), grpc::NOT_FOUND);
  EXPECT_EQ(Unstage("vol-err"), grpc::OK);  // not staged: nothing to do
  v1::NodeGetVolumeStatsRequest sr;
  sr.set_volume_id("vol-err");
  sr.set_volume_path(Target("pod-x"));
  EXPECT_EQ(Call(&v1::Node::Stub::NodeGetVolumeStats, node_.get(), sr), grpc::NOT_FOUND);

  ASSERT_EQ(Stage("vol-e2"), grpc::OK) << last_error_;
  auto elsewhere = StageReq("vol-e2");
  elsewhere.set_staging_target_path(kubelet_ + "/other/globalmount");
  EXPECT_EQ(Call(&v1::Node::Stub::NodeStageVolume, node_.get(), elsewhere), grpc::ALREADY_EXISTS);
  ASSERT_EQ(Publish("vol-e2", "pod-y", false), grpc::OK) << last_error_;
  EXPECT_EQ(Publish("vol-e2", "pod-y", true), grpc::ALREADY_EXISTS);  // published read-write already
  auto wrong_staging = PublishReq("vol-e2", "pod-z", false);
  wrong_staging.set_staging_target_path(kubelet_ + "/other/globalmount");
  EXPECT_EQ(Call(&v1::Node::Stub::NodePublishVolume, node_.get(), wrong_staging), grpc::FAILED_PRECONDITION);
  EXPECT_EQ(Unpublish("vol-e2", "pod-y"), grpc::OK);
  EXPECT_EQ(Unstage("vol-e2"), grpc::OK) << last_error_;
}

// The driver dies (SIGKILL) while two pods read: the reads go on; the restarted
// driver re-adopts the mount and recovers its secrets from it; then the mount
// dies (SIGKILL): the driver remounts it with those secrets and repairs both
// pods' bind mounts; unpublish and unstage work afterwards.
TEST_F(CsiDriverTest, DriverAndMountSigkillHeal) {
  const std::string vol = "vol-heal";
  ASSERT_EQ(Stage(vol), grpc::OK) << last_error_;
  ASSERT_EQ(Publish(vol, "pod-a"), grpc::OK) << last_error_;
  ASSERT_EQ(Publish(vol, "pod-b", true), grpc::OK) << last_error_;
  auto* a = StartReader("pod-a");
  auto* b = StartReader("pod-b");
  auto oks = [&](BackgroundProcess* p) { return Count(p->Log(), "ok "); };
  ASSERT_TRUE(WaitFor([&] { return oks(a) >= 2 && oks(b) >= 2; }, std::chrono::seconds(60))) << a->Log();

  kill(driver_->pid(), SIGKILL);
  driver_->WaitExit(std::chrono::seconds(10));
  const int a0 = oks(a), b0 = oks(b);
  ASSERT_TRUE(WaitFor([&] { return oks(a) >= a0 + 3 && oks(b) >= b0 + 3; }, std::chrono::seconds(60)))
      << "reads stopped with the driver:\n"
      << a->Log();
  EXPECT_EQ(Count(a->Log(), "bad "), 0) << a->Log();
  EXPECT_EQ(Count(b->Log(), "bad "), 0) << b->Log();

  const int old_pid = Record(vol).pid;
  Restart();
  EXPECT_TRUE(WaitFor([&] { return driver_->Log().find("adopted volume " + vol) != std::string::npos; },
                      std::chrono::seconds(10)))
      << driver_->Log();
  EXPECT_EQ(Record(vol).pid, old_pid);  // adopted, not remounted

  kill(old_pid, SIGKILL);
  ASSERT_TRUE(WaitFor([&] { return Record(vol).pid != old_pid && Record(vol).pid > 0; }, std::chrono::seconds(60)))
      << driver_->Log();
  const int a1 = oks(a), b1 = oks(b);
  ASSERT_TRUE(WaitFor([&] { return oks(a) >= a1 + 2 && oks(b) >= b1 + 2; }, std::chrono::seconds(60)))
      << "pods not healed:\n"
      << a->Log() << "\n"
      << driver_->Log();
  EXPECT_NE(driver_->Log().find("repaired the bind mount of volume " + vol), std::string::npos);
  EXPECT_EQ(PodSums("pod-a"), ExpectedSums());

  std::ofstream(dir_ + "/stop") << "";
  for (auto& p : pods_) p->WaitExit(std::chrono::seconds(30));
  EXPECT_EQ(Unpublish(vol, "pod-a"), grpc::OK) << last_error_;
  EXPECT_EQ(Unpublish(vol, "pod-b"), grpc::OK) << last_error_;
  const int new_pid = Record(vol).pid;
  EXPECT_EQ(Unstage(vol), grpc::OK) << last_error_;
  EXPECT_TRUE(WaitFor([&] { return testing::ProcessGone(new_pid); }, std::chrono::seconds(10)));
}

// The plugin and the mount host both end (a node's pods restarted together): the
// next plugin has no live mount to recover secrets from. Without the key it cannot
// remount (and says so); with it, it opens the sealed secrets of the record,
// remounts and repairs the pod's bind mount.
TEST_F(CsiDriverTest, MountsThatDiedWithTheDriverComeBackFromSealedSecrets) {
  const std::string vol = "vol-sealed";
  ASSERT_EQ(Stage(vol), grpc::OK) << last_error_;
  ASSERT_EQ(Publish(vol, "pod-a"), grpc::OK) << last_error_;
  EXPECT_FALSE(Record(vol).sealed_secrets.empty());
  auto* a = StartReader("pod-a");
  auto oks = [&](BackgroundProcess* p) { return Count(p->Log(), "ok "); };
  ASSERT_TRUE(WaitFor([&] { return oks(a) >= 1; }, std::chrono::seconds(60))) << a->Log();
  const int old_pid = Record(vol).pid;
  kill(driver_->pid(), SIGKILL);
  driver_->WaitExit(std::chrono::seconds(10));
  kill(old_pid, SIGKILL);
  ASSERT_TRUE(WaitFor([&] { return testing::ProcessGone(old_pid); }, std::chrono::seconds(10)));

  auto key = std::find_if(driver_argv_.begin(), driver_argv_.end(),
                          [](const std::string& a) { return a.starts_with("--secrets-key-file="); });
  ASSERT_NE(key, driver_argv_.end()) << "node.yaml gives the plugin no --secrets-key-file";
  const std::string key_arg = *key;
  driver_argv_.erase(key);
  Restart();
  EXPECT_TRUE(WaitFor([&] { return driver_->Log().find("secrets are not known") != std::string::npos; },
                      std::chrono::seconds(10)))
      << driver_->Log();
  EXPECT_EQ(Record(vol).pid, old_pid);  // not remounted without its secrets
  driver_->Stop(std::chrono::seconds(5));

  driver_argv_.push_back(key_arg);
  const int before = oks(a);
  Restart();
  ASSERT_TRUE(WaitFor([&] { return oks(a) >= before + 2; }, std::chrono::seconds(60))) << "not healed:\n"
                                                                                       << driver_->Log();
  EXPECT_NE(Record(vol).pid, old_pid);
  EXPECT_EQ(PodSums("pod-a"), ExpectedSums());
  std::ofstream(dir_ + "/stop") << "";
  for (auto& p : pods_) p->WaitExit(std::chrono::seconds(30));
  EXPECT_EQ(Unpublish(vol, "pod-a"), grpc::OK) << last_error_;
  EXPECT_EQ(Unstage(vol), grpc::OK) << last_error_;
}

// The node plugin's container ends (a crash, a failed liveness probe, a rollout):
// the runtime kills every process in it at once. The mounts are the mount host's
// processes, in another container: the pods keep reading without one error, and
// the next plugin adopts every mount (same processes) and unstages them.
TEST_F(CsiDriverTest, PluginContainerEndLeavesPodsReadingAndTheNextPluginAdoptsTheMounts) {
  auto plugin = Container::Create("plugin");
  if (!plugin) GTEST_SKIP() << "no writable cgroup v1 freezer hierarchy to run the plugin as a container";
  driver_->Stop(std::chrono::seconds(5));
  driver_argv_ = plugin->Wrap(driver_argv_);
  Restart();
  const std::vector<std::string> vols = {"vol-ctr-1", "vol-ctr-2"};
  const std::vector<std::string> pods = {"pod-c1", "pod-c2"};
  std::vector<BackgroundProcess*> readers = StageAndRead(vols, pods);
  ASSERT_FALSE(HasFailure());
  auto oks = [&](BackgroundProcess* p) { return Count(p->Log(), "ok "); };
  auto each_read = [&](const std::vector<int>& before, int passes) {
    return WaitFor(
        [&] {
          for (size_t i = 0; i < readers.size(); ++i)
            if (oks(readers[i]) < before[i] + passes) return false;
          return true;
        },
        std::chrono::seconds(90));
  };
  ASSERT_TRUE(each_read({0, 0}, 2)) << readers[0]->Log() << driver_->Log();
  std::vector<int> mount_pids;
  for (const auto& v : vols) {
    mount_pids.push_back(Record(v).pid);
    EXPECT_TRUE(ProcessStartTime(mount_pids.back()) != 0) << v;
    EXPECT_FALSE(plugin->Holds(mount_pids.back())) << v << "'s mount is in the plugin's container";
  }
  ASSERT_TRUE(plugin->Holds(driver_->pid()));

  plugin->Kill();
  driver_->WaitExit(std::chrono::seconds(10));
  std::vector<int> during;
  for (auto* r : readers) during.push_back(oks(r));
  ASSERT_TRUE(each_read(during, 3)) << "the pods stopped reading with the plugin:\n" << readers[0]->Log();
  for (size_t i = 0; i < vols.size(); ++i) {
    EXPECT_EQ(Exec({"stat", "-f", Staging(vols[i])}).exit_code, 0) << vols[i];
    EXPECT_EQ(Count(readers[i]->Log(), "bad "), 0) << readers[i]->Log();
  }

  Restart();  // the next container
  for (size_t i = 0; i < vols.size(); ++i) {
    EXPECT_TRUE(WaitFor([&] { return driver_->Log().find("adopted volume " + vols[i]) != std::string::npos; },
                        std::chrono::seconds(30)))
        << driver_->Log();
    EXPECT_EQ(Record(vols[i]).pid, mount_pids[i]) << "adopted, not remounted";
  }
  std::ofstream(dir_ + "/stop") << "";
  for (auto& p : pods_) p->WaitExit(std::chrono::seconds(30));
  for (size_t i = 0; i < vols.size(); ++i) {
    EXPECT_EQ(Count(readers[i]->Log(), "bad "), 0) << readers[i]->Log();
    EXPECT_EQ(PodSums(pods[i]), ExpectedSums()) << pods[i];
    EXPECT_EQ(Unpublish(vols[i], pods[i]), grpc::OK) << last_error_;
    EXPECT_EQ(Unstage(vols[i]), grpc::OK) << last_error_;
    EXPECT_TRUE(WaitFor([&] { return testing::ProcessGone(mount_pids[i]); }, std::chrono::seconds(10)));
    EXPECT_FALSE(stdfs::exists(dir_ + "/state/volumes/" + VolumeKey(vols[i]) + ".json"));
  }
}

// The mount host's container ends (a node drain, or a crash): every mount goes
// with it and the pods read errors (ENOTCONN), until the running plugin remounts
// each volume through the next mount host and repairs the pods' bind mounts.
TEST_F(CsiDriverTest, MountHostContainerEndTakesItsMountsAndThePluginHealsThemThroughTheNext) {
  auto host = Container::Create("mounts");
  if (!host) GTEST_SKIP() << "no writable cgroup v1 freezer hierarchy to run the mount host as a container";
  mount_host_->Stop(std::chrono::seconds(5));
  host_argv_ = host->Wrap(host_argv_);
  StartMountHost();
  const std::vector<std::string> vols = {"vol-host-1", "vol-host-2"};
  const std::vector<std::string> pods = {"pod-h1", "pod-h2"};
  std::vector<BackgroundProcess*> readers = StageAndRead(vols, pods);
  ASSERT_FALSE(HasFailure());
  auto oks = [&](BackgroundProcess* p) { return Count(p->Log(), "ok "); };
  ASSERT_TRUE(WaitFor([&] { return oks(readers[0]) >= 2 && oks(readers[1]) >= 2; }, std::chrono::seconds(90)))
      << readers[0]->Log();
  for (const auto& v : vols) EXPECT_TRUE(host->Holds(Record(v).pid)) << v << "'s mount is not the host's";

  const auto killed_at = std::chrono::steady_clock::now();
  host->Kill();
  mount_host_->WaitExit(std::chrono::seconds(10));
  for (const auto& v : vols) {
    EXPECT_TRUE(WaitFor(
        [&] {
          return Exec({"stat", "-f", Staging(v)}).exit_code != 0;
        },
        std::chrono::seconds(10)))
        << v << " still answers: its mount outlived the mount host's container";
  }
  std::vector<int> bad_before, ok_before;
  for (auto* r : readers) bad_before.push_back(Count(r->Log(), "bad "));
  ASSERT_TRUE(WaitFor(
      [&] {
        for (size_t i = 0; i < readers.size(); ++i)
          if (Count(readers[i]->Log(), "bad ") <= bad_before[i]) return false;
        return true;
      },
      std::chrono::seconds(30)))
      << "the pods' reads did not fail while the volumes were down";

  for (auto* r : readers) ok_before.push_back(oks(r));
  StartMountHost();  // the next container; the plugin, still running, heals through it
  ASSERT_TRUE(WaitFor(
      [&] {
        for (size_t i = 0; i < readers.size(); ++i)
          if (oks(readers[i]) < ok_before[i] + 2) return false;
        return true;
      },
      std::chrono::seconds(90)))
      << "not healed:\n"
      << driver_->Log();
  std::cout << "mount host restart: "
            << std::chrono::duration<double>(std::chrono::steady_clock::now() - killed_at).count()
            << " s from the kill to two good passes of each pod\n";
  for (size_t i = 0; i < vols.size(); ++i) {
    EXPECT_NE(driver_->Log().find("repaired the bind mount of volume " + vols[i]), std::string::npos) << driver_->Log();
    EXPECT_TRUE(host->Holds(Record(vols[i]).pid)) << vols[i];
  }
  std::ofstream(dir_ + "/stop") << "";
  for (auto& p : pods_) p->WaitExit(std::chrono::seconds(30));
  for (size_t i = 0; i < vols.size(); ++i) {
    EXPECT_EQ(PodSums(pods[i]), ExpectedSums()) << pods[i];
    EXPECT_EQ(Unpublish(vols[i], pods[i]), grpc::OK) << last_error_;
    EXPECT_EQ(Unstage(vols[i]), grpc::OK) << last_error_;
  }
}

// Secrets are in no command line (ps), no environment block, no log and no file
// of the state dir; the mount holds them only in memory and its memfd.
TEST_F(CsiDriverTest, SecretsStayOutOfPsLogsAndStateDir) {
  const std::string vol = "vol-secret";
  ASSERT_EQ(Stage(vol), grpc::OK) << last_error_;
  ASSERT_EQ(Publish(vol, "pod-a"), grpc::OK) << last_error_;
  EXPECT_EQ(PodSums("pod-a"), ExpectedSums());  // the secrets worked
  const int pid = Record(vol).pid;
  std::vector<std::string> secrets = {rgw_->secret_key(), Secrets()["STRATA_GROUP_SECRET"]};
  auto ps = Exec({"ps", "-eo", "pid,args"});
  auto environ = ReadFile("/proc/" + std::to_string(pid) + "/environ");
  auto cmdline = ReadFile("/proc/" + std::to_string(pid) + "/cmdline");
  ASSERT_NE(cmdline.find("mount"), std::string::npos);
  std::string logs = driver_->Log() + mount_host_->Log();
  auto host_environ = ReadFile("/proc/" + std::to_string(mount_host_->pid()) + "/environ");
  std::string state;
  for (auto& e : stdfs::recursive_directory_iterator(dir_ + "/state")) {
    if (e.is_regular_file()) state += ReadFile(e.path()) + "\n";
    if (e.path().string().find("/logs/") != std::string::npos) logs += ReadFile(e.path());
  }
  ASSERT_FALSE(state.empty());
  for (const auto& s : secrets) {
    EXPECT_EQ(ps.stdout_text.find(s), std::string::npos) << "in ps";
    EXPECT_EQ(environ.find(s), std::string::npos) << "in the mount's environment block";
    EXPECT_EQ(host_environ.find(s), std::string::npos) << "in the mount host's environment block";
    EXPECT_EQ(cmdline.find(s), std::string::npos);
    EXPECT_EQ(logs.find(s), std::string::npos) << "in a log";
    EXPECT_EQ(state.find(s), std::string::npos) << "in the state dir";
  }
  // ... and the mount does hold them (its memfd), which is what a restarted driver recovers.
  auto held = ReadFile("/proc/" + std::to_string(pid) + "/fd/3");
  EXPECT_NE(held.find(rgw_->secret_key()), std::string::npos);
  EXPECT_EQ(Unpublish(vol, "pod-a"), grpc::OK);
  EXPECT_EQ(Unstage(vol), grpc::OK) << last_error_;
}

// Another gRPC and protobuf stack (python3-grpcio, messages generated from the same
// csi.proto by protoc's Python backend) drives the driver: what it sends is parsed
// by the C++ side and the other way round.
TEST_F(CsiDriverTest, PythonGrpcClientDrivesTheLifecycle) {
  const std::string client = testing::SourceDir() + "/bench/csi_client.py";
  auto py = [&](std::vector<std::string> args) {
    std::vector<std::string> argv = {"/usr/bin/python3", client, socket_};
    argv.insert(argv.end(), args.begin(), args.end());
    auto r =
        RunCommand(argv, {{"AWS_ACCESS_KEY_ID", rgw_->access_key()}, {"AWS_SECRET_ACCESS_KEY", rgw_->secret_key()}});
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? *r : testing::CommandResult{-1, "", ""};
  };
  auto info = py({"info"});
  ASSERT_EQ(info.exit_code, 0) << info.stderr_text;
  EXPECT_EQ(info.stdout_text.substr(0, info.stdout_text.find('\n')), "csi.strata.dev 0.1.0 node-a");
  const std::string vol = "vol-py";
  auto st = py({"stage", vol, Staging(vol), "url=" + rgw_->StoreUrl("data"), "metadata-ttl=forever"});
  ASSERT_EQ(st.exit_code, 0) << st.stderr_text;
  ASSERT_EQ(py({"publish", vol, Staging(vol), Target("pod-p"), "ro"}).exit_code, 0);
  EXPECT_TRUE(Record(vol).targets.at(0).read_only);
  EXPECT_EQ(PodSums("pod-p"), ExpectedSums());
  auto bad = py({"publish", vol, Staging(vol), Target("pod-p")});  // read-write now: already read-only
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.stderr_text.find("ALREADY_EXISTS"), std::string::npos) << bad.stderr_text;
  EXPECT_EQ(py({"unpublish", vol, Target("pod-p")}).exit_code, 0);
  EXPECT_EQ(py({"unstage", vol, Staging(vol)}).exit_code, 0);
  EXPECT_FALSE(stdfs::exists(dir_ + "/state/volumes/" + VolumeKey(vol) + ".json"));
}

// deploy/kubernetes/fio-pod.yaml's checks (sequential write, sequential and random
// read), read from the manifest and run in a pod's namespace against a published
// volume, with /data mapped to the target and the sizes scaled down.
TEST_F(CsiDriverTest, FioPodChecksPassOnAPublishedVolume) {
  auto script = RunCommand({"/usr/bin/python3", "-c",
                            "import sys, yaml; pod = yaml.safe_load(open(sys.argv[1])); "
                            "print(pod['spec']['containers'][0]['args'][0])",
                            testing::SourceDir() + "/deploy/kubernetes/fio-pod.yaml"});
  ASSERT_TRUE(script.ok() && script->exit_code == 0);
  std::string sh = script->stdout_text;
  ASSERT_NE(sh.find("fio --name=seqwrite"), std::string::npos) << sh;
  ASSERT_NE(sh.find("--rw=randread"), std::string::npos) << sh;
  const std::string vol = "vol-fio";
  ASSERT_EQ(Call(&v1::Node::Stub::NodeStageVolume, node_.get(), StageReq(vol, {{"url", rgw_->StoreUrl("fio-claim")}})),
            grpc::OK)
      << last_error_;
  ASSERT_EQ(Publish(vol, "pod-fio"), grpc::OK) << last_error_;
  auto replace_all = [&](const std::string& from, const std::string& to) {
    for (size_t at = sh.find(from); at != std::string::npos; at = sh.find(from, at + to.size())) {
      sh.replace(at, from.size(), to);
    }
  };
  replace_all("/data", Target("pod-fio"));
  replace_all("256M", "16M");
  auto fio = Exec({"unshare", "-m", "--propagation", "slave", "--", "sh", "-c", sh});
  EXPECT_EQ(fio.exit_code, 0) << fio.stdout_text << fio.stderr_text;
  EXPECT_NE(fio.stdout_text.find("seqread"), std::string::npos);
  EXPECT_EQ(Unpublish(vol, "pod-fio"), grpc::OK);
  EXPECT_EQ(Unstage(vol), grpc::OK) << last_error_;
}

// The controller (csi-provisioner's side): a prefix per claim, created idempotently
// and deleted with its objects; the whole bucket is never a volume to delete.
TEST_F(CsiDriverTest, ControllerCreatesAndDeletesAClaimPrefix) {
  driver_->Stop(std::chrono::seconds(5));
  auto mode = std::find(driver_argv_.begin(), driver_argv_.end(), "--mode=node");
  ASSERT_NE(mode, driver_argv_.end());
  *mode = "--mode=all";  // the node plugin and the controller in one process
  Restart();
  v1::ControllerGetCapabilitiesResponse cc;
  ASSERT_EQ(Call(&v1::Controller::Stub::ControllerGetCapabilities, controller_.get(),
                 v1::ControllerGetCapabilitiesRequest(), &cc),
            grpc::OK);
  ASSERT_EQ(cc.capabilities_size(), 1);
  EXPECT_EQ(cc.capabilities(0).rpc().type(), v1::ControllerServiceCapability::RPC::CREATE_DELETE_VOLUME);
  v1::CreateVolumeRequest cr;
  cr.set_name("pvc-0001");
  *cr.add_volume_capabilities() = MountCap(kRwx);
  (*cr.mutable_parameters())["url"] = rgw_->StoreUrl("claims");
  (*cr.mutable_parameters())["cache-disk"] = "1GiB";
  (*cr.mutable_parameters())["csi.storage.k8s.io/pvc/name"] = "scratch";
  for (auto& [k, v] : Secrets()) (*cr.mutable_secrets())[k] = v;
  v1::CreateVolumeResponse created, again;
  ASSERT_EQ(Call(&v1::Controller::Stub::CreateVolume, controller_.get(), cr, &created), grpc::OK) << last_error_;
  ASSERT_EQ(Call(&v1::Controller::Stub::CreateVolume, controller_.get(), cr, &again), grpc::OK) << last_error_;
  const std::string id = created.volume().volume_id();
  EXPECT_EQ(again.volume().volume_id(), id);
  EXPECT_EQ(id, rgw_->StoreUrl("claims/pvc-0001"));
  EXPECT_EQ(created.volume().volume_context().at("url"), id);
  EXPECT_EQ(created.volume().volume_context().count("csi.storage.k8s.io/pvc/name"), 0u);

  // Stage it with its context and write through it; the objects land under the prefix.
  StringMap ctx(created.volume().volume_context().begin(), created.volume().volume_context().end());
  ASSERT_EQ(Call(&v1::Node::Stub::NodeStageVolume, node_.get(), StageReq(id, ctx)), grpc::OK) << last_error_;
  ASSERT_EQ(Publish(id, "pod-w"), grpc::OK) << last_error_;
  auto w = Exec({"sh", "-c", "mkdir '" + Target("pod-w") + "/d' && echo one > '" + Target("pod-w") + "/d/a.txt'"});
  ASSERT_EQ(w.exit_code, 0) << w.stderr_text;
  ASSERT_EQ(Unpublish(id, "pod-w"), grpc::OK);
  ASSERT_EQ(Unstage(id), grpc::OK) << last_error_;
  auto claim = OpenStoreWithSecrets(id, Secrets());
  ASSERT_TRUE(claim.ok());
  auto before = (*claim)->List(object::ListOptions{});
  ASSERT_TRUE(before.ok());
  EXPECT_FALSE(before->objects.empty());

  v1::DeleteVolumeRequest dr;
  dr.set_volume_id(id);
  for (auto& [k, v] : Secrets()) (*dr.mutable_secrets())[k] = v;
  EXPECT_EQ(Call(&v1::Controller::Stub::DeleteVolume, controller_.get(), dr), grpc::OK) << last_error_;
  EXPECT_EQ(Call(&v1::Controller::Stub::DeleteVolume, controller_.get(), dr), grpc::OK) << last_error_;
  auto after = (*claim)->List(object::ListOptions{});
  ASSERT_TRUE(after.ok());
  EXPECT_TRUE(after->objects.empty());
  auto data = OpenStoreWithSecrets(rgw_->StoreUrl("data"), Secrets());
  EXPECT_EQ((*data)->List(object::ListOptions{})->objects.size(), static_cast<size_t>(kFiles));  // untouched

  dr.set_volume_id(rgw_->StoreUrl());  // the bucket itself
  EXPECT_EQ(Call(&v1::Controller::Stub::DeleteVolume, controller_.get(), dr), grpc::INVALID_ARGUMENT);
  cr.set_name("../escape");
  EXPECT_EQ(Call(&v1::Controller::Stub::CreateVolume, controller_.get(), cr), grpc::INVALID_ARGUMENT);
  v1::ValidateVolumeCapabilitiesRequest vr;
  vr.set_volume_id(id);
  *vr.add_volume_capabilities() = MountCap(kRwx);
  v1::ValidateVolumeCapabilitiesResponse vo;
  ASSERT_EQ(Call(&v1::Controller::Stub::ValidateVolumeCapabilities, controller_.get(), vr, &vo), grpc::OK);
  EXPECT_TRUE(vo.has_confirmed());
  vr.mutable_volume_capabilities(0)->mutable_block();
  ASSERT_EQ(Call(&v1::Controller::Stub::ValidateVolumeCapabilities, controller_.get(), vr, &vo), grpc::OK);
  EXPECT_FALSE(vo.has_confirmed());
}

}  // namespace
}  // namespace strata::csi
