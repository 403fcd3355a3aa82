// A cache group under attack, through real `strata serve` members over a
// file:// bucket, read with curl (SigV4): someone who writes to the group's
// etcd prefix without the secret; a member address that answers with chosen
// bytes and a matching XXH3; a proxy that alters a real member's answers on
// the way; etcd down when the members start, over TLS with client
// certificates. In each, readers get only the bucket's bytes and the hostile
// party is not used; afterwards every member's log is searched for the
// group secret and for every MAC that crossed the wire.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "base/hash.h"
#include "base/random.h"
#include "group/etcd_membership.h"
#include "group/hostile_peer_test_util.h"
#include "group/member_record.h"
#include "net/http_client.h"
#include "testing/background_process.h"
#include "testing/subprocess.h"

namespace strata::group {
namespace {

namespace fs = std::filesystem;

constexpr char kSecret[] = "group-hostile-test-secret-0123456789abcdef";
constexpr char kAccessKey[] = "hostile-test-key";
constexpr char kSecretKey[] = "hostile-test-secret-key-0123456789";
constexpr int kObjects = 3;
constexpr uint64_t kObjectSize = 8ull << 20;  // 8 blocks of 1 MiB each

std::string ReadFile(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

template <typename Pred>
bool WaitFor(Pred pred, std::chrono::milliseconds deadline) {
  auto end = std::chrono::steady_clock::now() + deadline;
  while (std::chrono::steady_clock::now() < end) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // polling a condition, with a deadline
  }
  return pred();
}

class GroupHostileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_NE(std::getenv("STRATA_BINARY_DIR"), nullptr) << "run under ctest";
    dir_ = fs::temp_directory_path() / ("strata-group-hostile-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "bucket" / "data");
    Random rng(7);
    for (int i = 0; i < kObjects; ++i) {
      std::string bytes(kObjectSize, '\0');
      for (size_t j = 0; j + 8 <= bytes.size(); j += 8) {
        uint64_t v = rng.Next();
        std::memcpy(&bytes[j], &v, 8);
      }
      std::ofstream(dir_ / "bucket" / "data" / ("obj-" + std::to_string(i)), std::ios::binary) << bytes;
      objects_["obj-" + std::to_string(i)] = std::move(bytes);
    }
    secret_file_ = (dir_ / "secret").string();
    std::ofstream(secret_file_) << kSecret << "\n";
    fs::permissions(secret_file_, fs::perms::owner_read | fs::perms::owner_write);
  }
  void TearDown() override {
    for (auto& m : members_) {
      if (m.process && !m.process->Exited()) {
        EXPECT_EQ(m.process->Stop(), 0) << m.process->Log();
      }
    }
    members_.clear();
    if (etcd_) etcd_->Stop();
    fs::remove_all(dir_);
  }

  struct MemberProc {
    std::unique_ptr<testing::BackgroundProcess> process;
    std::string endpoint, peer, log;
  };

  // `ram`: 0 keeps no other member's block, so every read of one asks its owner again.
  void StartMember(const std::string& group, const std::string& peer, const std::string& ram = "64MiB") {
    const std::string log = (dir_ / ("member" + std::to_string(members_.size()) + ".log")).string();
    auto serve = testing::StartStrataServe({"--backend",
                                            "file://" + (dir_ / "bucket").string(),
                                            "--listen",
                                            "127.0.0.1:0",
                                            "--access-key",
                                            kAccessKey,
                                            "--secret-key",
                                            kSecretKey,
                                            "--cache-ram",
                                            ram,
                                            "--block-size",
                                            "1MiB",
                                            "--cache-dir",
                                            (dir_ / ("cache" + std::to_string(members_.size()))).string(),
                                            "--cache-group",
                                            group,
                                            "--peer-listen",
                                            peer,
                                            "--group-secret-file",
                                            secret_file_},
                                           log);
    ASSERT_TRUE(serve.ok()) << serve.status();
    members_.push_back({std::move(serve->process), serve->endpoint, peer, log});
  }

  static std::string Peer() { return "127.0.0.1:" + std::to_string(testing::FreeLoopbackPort()); }

  // Every object through member `m` with curl, each byte compared with the bucket's.
  void ReadAllThrough(size_t m) {
    for (const auto& [key, want] : objects_) {
      const fs::path out = dir_ / ("read-" + std::to_string(m));
      const std::vector<std::string> curl = {"curl",
                                             "-sS",
                                             "-f",
                                             "-o",
                                             out.string(),
                                             "--aws-sigv4",
                                             "aws:amz:us-east-1:s3",
                                             "--user",
                                             std::string(kAccessKey) + ":" + kSecretKey,
                                             "-H",
                                             "x-amz-content-sha256: UNSIGNED-PAYLOAD",
                                             members_[m].endpoint + "/data/" + key};
      auto r = testing::RunCommand(curl, testing::WithoutCaBundles());
      ASSERT_TRUE(r.ok()) << r.status();
      ASSERT_EQ(r->exit_code, 0) << testing::DescribeRun(curl, *r);
      const std::string got = ReadFile(out);
      ASSERT_EQ(got.size(), want.size()) << key << " through member " << m;
      ASSERT_TRUE(got == want) << key << " through member " << m << ": other bytes than the bucket's";
    }
  }

  static uint64_t Metric(const std::string& endpoint, const std::string& name) {
    net::HttpClient http;
    net::HttpRequest req;
    req.url = endpoint + "/metrics";
    auto r = http.Send(std::move(req));
    if (!r.ok()) return 0;
    std::istringstream in(r->body.ToString());
    for (std::string line; std::getline(in, line);) {
      if (line.starts_with(name + " ")) return std::stoull(line.substr(name.size() + 1));
    }
    return 0;
  }
  uint64_t Sum(const std::string& name) {
    uint64_t n = 0;
    for (auto& m : members_) n += Metric(m.endpoint, name);
    return n;
  }

  // No member's log holds the secret or any MAC that crossed the wire.
  void ExpectLogsHoldNoSecrets(const std::vector<std::string>& macs) {
    ASSERT_FALSE(members_.empty());
    for (auto& m : members_) {
      const std::string log = ReadFile(m.log);
      ASSERT_FALSE(log.empty()) << m.log;
      EXPECT_EQ(log.find(kSecret), std::string::npos) << m.log << " holds the group secret";
      EXPECT_EQ(log.find(kSecretKey), std::string::npos) << m.log << " holds the S3 secret key";
      for (const auto& mac : macs) {
        if (mac.size() >= 16) {
          EXPECT_EQ(log.find(mac), std::string::npos) << m.log << " holds a MAC: " << mac;
        }
      }
    }
  }

  void StartPlainEtcd() {
    auto etcd = testing::StartEtcd(dir_.string());
    if (etcd.status().code() == Code::kNotFound) GTEST_SKIP() << etcd.status();
    ASSERT_TRUE(etcd.ok()) << etcd.status();
    etcd_url_ = etcd->client_url;
    etcd_ = std::move(etcd->process);
  }

  fs::path dir_;
  std::string secret_file_;
  std::map<std::string, std::string> objects_;
  std::vector<MemberProc> members_;
  std::string etcd_url_;
  std::unique_ptr<testing::BackgroundProcess> etcd_;
};

// Someone with write access to etcd but not the secret registers a peer that
// would serve chosen bytes (the old unsigned record, one signed with another
// secret) and 3,000 fakes. The members never list it, never ask it, and read
// byte-exact at the usual speed.
TEST_F(GroupHostileTest, EtcdWriterWithoutTheSecretAddsNoMember) {
  ASSERT_NO_FATAL_FAILURE(StartPlainEtcd());
  HostilePeer liar(HostilePeer::Mode::kLie);
  ASSERT_FALSE(liar.address().empty());
  const std::string group = "etcd://" + etcd_url_.substr(7) + "/hostile";
  ASSERT_NO_FATAL_FAILURE(StartMember(group, Peer()));
  ASSERT_NO_FATAL_FAILURE(StartMember(group, Peer()));
  ASSERT_TRUE(WaitFor([&] { return Sum("strata_group_members") == 4; }, std::chrono::seconds(20)));

  const std::string prefix = EtcdMembership::Prefix("hostile");
  const int64_t now =
      std::chrono::duration_cast<std::chrono::seconds>(RealClock().WallNow().time_since_epoch()).count();
  const std::string other = "an-attackers-guess-at-the-secret-0123456789";
  std::vector<std::pair<std::string, std::string>> kvs = {
      {prefix + liar.address(), liar.address()},
      {prefix + liar.address() + "s",
       FormatMemberRecord(other, "hostile", {liar.address() + "s", liar.address(), now, now + 60})}};
  for (int i = 0; i < 3000; ++i) {
    const std::string id = "fake-" + std::to_string(i);
    kvs.push_back({prefix + id, FormatMemberRecord(other, "hostile", {id, liar.address(), now, now + 60})});
  }
  for (size_t at = 0; at < kvs.size(); at += 100) {
    nlohmann::json ops = nlohmann::json::array();
    for (size_t i = at; i < std::min(kvs.size(), at + 100); ++i) {
      ops.push_back({{"request_put",
                      {{"key", Base64Encode(kvs[i].first.data(), kvs[i].first.size())},
                       {"value", Base64Encode(kvs[i].second.data(), kvs[i].second.size())}}}});
    }
    net::HttpClient http;
    net::HttpRequest req;
    req.method = "POST";
    req.url = etcd_url_ + "/v3/kv/txn";
    req.body = Buffer::Copy(nlohmann::json{{"success", ops}}.dump());
    auto r = http.Send(std::move(req));
    ASSERT_TRUE(r.ok() && r->status == 200) << (r.ok() ? r->body.ToString() : r.status().ToString());
  }
  ASSERT_TRUE(
      WaitFor([&] { return Sum("strata_group_records_rejected_total") >= 2 * kvs.size(); }, std::chrono::seconds(30)))
      << Metric(members_[0].endpoint, "strata_group_records_rejected_total") << " + "
      << Metric(members_[1].endpoint, "strata_group_records_rejected_total") << "\n"
      << ReadFile(members_[0].log) << ReadFile(members_[1].log);
  EXPECT_EQ(Metric(members_[0].endpoint, "strata_group_members"), 2u);
  EXPECT_EQ(Metric(members_[1].endpoint, "strata_group_members"), 2u);
  const auto t0 = std::chrono::steady_clock::now();
  ReadAllThrough(0);
  ReadAllThrough(1);
  const auto took = std::chrono::steady_clock::now() - t0;
  EXPECT_LT(took, std::chrono::seconds(20)) << "fake members stalled the reads";
  EXPECT_EQ(liar.requests(), 0) << "a member asked the unsigned peer";
  EXPECT_GT(Sum("strata_group_peer_hits_total"), 0u) << "the real members still share their blocks";
  EXPECT_EQ(Sum("strata_group_peer_bad_answers_total"), 0u);
  std::cout << "[figures] 3,002 unsigned records: both members read " << kObjects * kObjectSize * 2 / 1048576
            << " MiB in " << std::chrono::duration_cast<std::chrono::milliseconds>(took).count() << " ms\n";
  ExpectLogsHoldNoSecrets(liar.seen_macs());
}

// A listed address answers every block with chosen bytes, a matching XXH3
// and made-up MACs: each member refuses its first answer, marks it suspect,
// reads those blocks from the bucket, and does not ask it again meanwhile.
// The members keep no other member's block in RAM, so the second pass would
// ask the liar again if it were still trusted.
TEST_F(GroupHostileTest, PeerAnsweringChosenBytesIsNotUsed) {
  HostilePeer liar(HostilePeer::Mode::kLie);
  ASSERT_FALSE(liar.address().empty());
  const std::string p0 = Peer(), p1 = Peer();
  const std::string group = "static://" + p0 + "," + p1 + "," + liar.address();
  ASSERT_NO_FATAL_FAILURE(StartMember(group, p0, "0"));
  ASSERT_NO_FATAL_FAILURE(StartMember(group, p1, "0"));
  ReadAllThrough(0);
  ReadAllThrough(1);
  const int asked = liar.requests();
  EXPECT_GT(asked, 0) << "the liar owns no block: the test proves nothing";
  EXPECT_GE(Sum("strata_group_peer_bad_answers_total"), 2u) << "each member refused the liar";
  // Suspect now (30 s): a second pass reads its blocks from the bucket without asking it.
  ReadAllThrough(0);
  ReadAllThrough(1);
  EXPECT_EQ(liar.requests(), asked) << "a member asked the liar again within its suspect period";
  EXPECT_GT(Sum("strata_group_peer_hits_total"), 0u) << "the honest members still share";
  ExpectLogsHoldNoSecrets(liar.seen_macs());
}

// Member 1 reaches member 0 through a proxy. Passing answers through
// unchanged, the proxy delivers peer hits (so the path works); altering one
// byte per answer (its XXH3 fixed), every answer is refused and the bytes
// read are still the bucket's.
TEST_F(GroupHostileTest, ProxyAlteringPeerAnswersIsCaught) {
  const std::string p0 = Peer(), p1 = Peer();
  ASSERT_NO_FATAL_FAILURE(StartMember("static://" + p0 + "," + p1, p0));
  HostilePeer proxy(HostilePeer::Mode::kProxy, p0);
  ASSERT_FALSE(proxy.address().empty());
  ASSERT_NO_FATAL_FAILURE(StartMember("static://" + proxy.address() + "," + p1, p1));
  ReadAllThrough(0);  // a gateway serves a bucket to its peers once it has opened it
  proxy.alter = false;
  ReadAllThrough(1);
  const uint64_t honest_hits = Metric(members_[1].endpoint, "strata_group_peer_hits_total");
  EXPECT_GT(honest_hits, 0u) << "the proxied path delivers when it alters nothing";
  EXPECT_EQ(Metric(members_[1].endpoint, "strata_group_peer_bad_answers_total"), 0u);
  // Member 1 keeps what it read in RAM: a fresh member behind the altering proxy reads everything again.
  proxy.alter = true;
  const std::string p2 = Peer();
  ASSERT_NO_FATAL_FAILURE(StartMember("static://" + proxy.address() + "," + p2, p2));
  const int before = proxy.requests();
  ReadAllThrough(2);
  EXPECT_GT(proxy.requests(), before) << "member 2 never went through the proxy";
  EXPECT_GE(Metric(members_[2].endpoint, "strata_group_peer_bad_answers_total"), 1u);
  EXPECT_EQ(Metric(members_[2].endpoint, "strata_group_peer_hits_total"), 0u) << "an altered answer was used";
  ExpectLogsHoldNoSecrets(proxy.seen_macs());
}

// etcd (TLS, client certificates) is down when the members start: they serve
// alone, then join once it answers, without a restart.
TEST_F(GroupHostileTest, MembersStartWithEtcdDownAndJoinWhenItAnswers) {
  auto tls = testing::MakeTestTlsFiles(dir_.string());
  ASSERT_TRUE(tls.ok()) << tls.status();
  const uint16_t port = testing::FreeLoopbackPort();
  const std::string group = "etcds://127.0.0.1:" + std::to_string(port) + "/late?ca=" + tls->ca +
                            "&cert=" + tls->client_cert + "&key=" + tls->client_key;
  ASSERT_NO_FATAL_FAILURE(StartMember(group, Peer()));
  ASSERT_NO_FATAL_FAILURE(StartMember(group, Peer()));
  ReadAllThrough(0);  // alone: from the bucket
  EXPECT_EQ(Sum("strata_group_members"), 0u);
  testing::EtcdOptions eo;
  eo.client_port = port;
  eo.cert_file = tls->server_cert;
  eo.key_file = tls->server_key;
  eo.client_ca_file = tls->ca;
  auto etcd = testing::StartEtcd(dir_.string(), eo);
  if (etcd.status().code() == Code::kNotFound) GTEST_SKIP() << etcd.status();
  ASSERT_TRUE(etcd.ok()) << etcd.status();
  etcd_ = std::move(etcd->process);
  EXPECT_TRUE(WaitFor([&] { return Sum("strata_group_members") == 4; }, std::chrono::seconds(30)))
      << Sum("strata_group_members");
  ReadAllThrough(1);
  EXPECT_GT(Metric(members_[1].endpoint, "strata_group_peer_hits_total"), 0u) << "joined, but shares nothing";
  ExpectLogsHoldNoSecrets({});
}

// A secret anyone on the node may read, or one too short to resist guessing: refused at start.
TEST_F(GroupHostileTest, LooseOrShortSecretsAreRefusedAtStart) {
  const std::string bin = std::string(std::getenv("STRATA_BINARY_DIR")) + "/src/cli/strata";
  auto serve = [&](const std::string& secret_file) {
    return testing::RunCommand({bin, "serve", "--backend", "file://" + (dir_ / "bucket").string(), "--listen",
                                "127.0.0.1:0", "--access-key", kAccessKey, "--secret-key", kSecretKey, "--cache-group",
                                "static://" + Peer(), "--peer-listen", Peer(), "--group-secret-file", secret_file});
  };
  fs::permissions(secret_file_, fs::perms::group_read | fs::perms::others_read, fs::perm_options::add);
  auto loose = serve(secret_file_);
  ASSERT_TRUE(loose.ok()) << loose.status();
  EXPECT_NE(loose->exit_code, 0);
  EXPECT_NE(loose->stderr_text.find("chmod 600"), std::string::npos) << loose->stderr_text;
  EXPECT_EQ(loose->stderr_text.find(kSecret), std::string::npos);
  const std::string short_file = (dir_ / "short").string();
  std::ofstream(short_file) << "sixteen-byte-key\n";
  fs::permissions(short_file, fs::perms::owner_read | fs::perms::owner_write, fs::perm_options::replace);
  auto short_one = serve(short_file);
  ASSERT_TRUE(short_one.ok()) << short_one.status();
  EXPECT_NE(short_one->exit_code, 0);
  EXPECT_NE(short_one->stderr_text.find("fewer than 32"), std::string::npos) << short_one->stderr_text;
}

}  // namespace
}  // namespace strata::group
