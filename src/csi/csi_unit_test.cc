// The driver's pure parts: volume_context and secrets validation, the state
// record round trip, mountinfo parsing, and the scheduler extender's scoring.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "csi/extender.h"
#include "csi/mounts.h"
#include "csi/sealed.h"
#include "csi/volume.h"

namespace strata::csi {
namespace {

TEST(VolumeContext, TurnsKeysIntoMountFlags) {
  auto spec = ParseVolumeContext({{"url", "s3://b/p?endpoint=http://127.0.0.1:1"},
                                  {"cache-disk", "20GiB"},
                                  {"cache-free-space", "5%"},
                                  {"metadata-ttl", "forever"},
                                  {"read-only", "true"}});
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->url, "s3://b/p?endpoint=http://127.0.0.1:1");
  EXPECT_EQ(spec->dataset, "s3://b/p");
  EXPECT_TRUE(spec->read_only);
  EXPECT_EQ(spec->mount_args, (std::vector<std::string>{"--cache-disk", "20GiB", "--cache-free-space", "5%",
                                                        "--metadata-ttl", "forever"}));
  EXPECT_FALSE(spec->has_cache_group);
  // Group member flags only with a group.
  auto alone = ParseVolumeContext({{"url", "s3://b"}, {"peer-listen", "10.0.0.7:0"}});
  ASSERT_TRUE(alone.ok());
  EXPECT_TRUE(alone->mount_args.empty());
  auto grouped =
      ParseVolumeContext({{"url", "s3://b"}, {"peer-listen", "10.0.0.7:0"}, {"cache-group", "etcd://e:1/g"}});
  ASSERT_TRUE(grouped.ok());
  EXPECT_EQ(grouped->mount_args,
            (std::vector<std::string>{"--cache-group", "etcd://e:1/g", "--peer-listen", "10.0.0.7:0"}));
  EXPECT_TRUE(grouped->has_cache_group);
}

TEST(VolumeContext, RefusesWhatCouldReachTheCommandLineWrongly) {
  EXPECT_EQ(ParseVolumeContext({}).status().code(), Code::kInvalidArgument);  // no url
  EXPECT_EQ(ParseVolumeContext({{"url", "s3://b"}, {"log-file", "/etc/passwd"}}).status().code(),
            Code::kInvalidArgument);
  EXPECT_EQ(ParseVolumeContext({{"url", "s3://b"}, {"cache-disk", "--foreground"}}).status().code(),
            Code::kInvalidArgument);
  EXPECT_EQ(ParseVolumeContext({{"url", "-x"}}).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(ParseVolumeContext({{"url", "s3://b\nx"}}).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(ParseVolumeContext({{"url", "s3://b"}, {"read-only", "maybe"}}).status().code(), Code::kInvalidArgument);
  // The CO's pod info keys are tolerated.
  EXPECT_TRUE(ParseVolumeContext({{"url", "s3://b"}, {"csi.storage.k8s.io/pod.name", "p"}}).ok());
  // The context is kept in the volume record (JSON): bytes that are not UTF-8 are refused here.
  EXPECT_EQ(ParseVolumeContext({{"url", "s3://b/\xff"}}).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(ParseVolumeContext({{"url", "s3://b"}, {"csi.storage.k8s.io/\xc3", "p"}}).status().code(),
            Code::kInvalidArgument);
  EXPECT_TRUE(ParseVolumeContext({{"url", "s3://b/caf\xc3\xa9"}}).ok());
}

// A record that cannot be written would leave a mount nobody can unstage: bytes that are not
// UTF-8 (nlohmann's dump() throws on them) are written as U+FFFD instead.
TEST(VolumeRecord, IsWrittenEvenWithBytesThatAreNotUtf8) {
  VolumeRecord r;
  r.volume_id = "vol-\xff";
  r.staging_path = "/stage/\xfe";
  r.cache_dir = "/cache";
  r.context = {{"url", "s3://b/\xc3"}};
  std::string text;
  ASSERT_NO_THROW(text = SerializeVolumeRecord(r));
  auto back = ParseVolumeRecord(text);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->volume_id, "vol-\xEF\xBF\xBD");
  EXPECT_EQ(back->staging_path, "/stage/\xEF\xBF\xBD");
}

TEST(Secrets, KnownKeysOnlyAndTheValueIsNeverQuoted) {
  EXPECT_TRUE(CheckSecrets({{"AWS_ACCESS_KEY_ID", "AK"}, {"AWS_SECRET_ACCESS_KEY", "SK"}}).ok());
  Status st = CheckSecrets({{"password", "hunter2"}});
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_EQ(st.ToString().find("hunter2"), std::string::npos);
  st = CheckSecrets({{"AWS_SECRET_ACCESS_KEY", "two\nlines"}});
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_EQ(st.ToString().find("two"), std::string::npos);
  StringMap s = {{"AWS_ACCESS_KEY_ID", "AK"}, {"STRATA_GROUP_SECRET", "g=s"}};
  auto back = ParseSecrets(FormatSecrets(s));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, s);
}

TEST(SealedSecrets, OpenOnlyWithTheKeyForTheVolume) {
  const std::string key(32, 'k'), other(32, 'o');
  StringMap s = {{"AWS_ACCESS_KEY_ID", "AK"}, {"AWS_SECRET_ACCESS_KEY", "very-secret-value"}};
  auto sealed = SealSecrets(s, key, "vol-1");
  ASSERT_TRUE(sealed.ok()) << sealed.status();
  EXPECT_EQ(sealed->find("very-secret-value"), std::string::npos);
  EXPECT_NE(*SealSecrets(s, key, "vol-1"), *sealed);  // a fresh nonce each time
  auto opened = UnsealSecrets(*sealed, key, "vol-1");
  ASSERT_TRUE(opened.ok()) << opened.status();
  EXPECT_EQ(*opened, s);
  EXPECT_EQ(UnsealSecrets(*sealed, other, "vol-1").status().code(), Code::kCorruption);
  EXPECT_EQ(UnsealSecrets(*sealed, key, "vol-2").status().code(), Code::kCorruption);  // moved to another volume
  std::string flipped = *sealed;
  flipped[20] = flipped[20] == 'A' ? 'B' : 'A';
  EXPECT_EQ(UnsealSecrets(flipped, key, "vol-1").status().code(), Code::kCorruption);
  EXPECT_EQ(UnsealSecrets("!!", key, "vol-1").status().code(), Code::kCorruption);
}

TEST(VolumeRecord, RoundTripsAndRejectsDamage) {
  VolumeRecord r;
  r.volume_id = "s3://b/p/pvc-1?endpoint=http://127.0.0.1:1";
  r.staging_path = "/var/lib/kubelet/plugins/x/globalmount";
  r.context = {{"url", "s3://b/p"}};
  r.read_only = true;
  r.has_secrets = true;
  r.pid = 1234;
  r.pid_start_time = 987654321;
  r.cache_dir = "/var/lib/strata-csi/cache/abc";
  r.sealed_secrets = "c2VhbGVk";
  r.targets = {{"/pods/a/mount", false}, {"/pods/b/mount", true}};
  auto back = ParseVolumeRecord(SerializeVolumeRecord(r));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->volume_id, r.volume_id);
  EXPECT_EQ(back->staging_path, r.staging_path);
  EXPECT_EQ(back->context, r.context);
  EXPECT_TRUE(back->read_only);
  EXPECT_TRUE(back->has_secrets);
  EXPECT_EQ(back->pid, 1234);
  EXPECT_EQ(back->pid_start_time, 987654321u);
  EXPECT_EQ(back->targets, r.targets);
  EXPECT_EQ(back->sealed_secrets, r.sealed_secrets);
  EXPECT_EQ(ParseVolumeRecord("{").status().code(), Code::kCorruption);
  // A version of another type is a corrupt record, not an exception (found by fuzz_csi_volume).
  EXPECT_EQ(ParseVolumeRecord(R"({"version":"/c","volume_id":"v","staging_path":"/s","cache_dir":"c","context":{}})")
                .status()
                .code(),
            Code::kCorruption);
  EXPECT_EQ(ParseVolumeRecord(R"({"version":1,"volume_id":"v","staging_path":"rel","cache_dir":"c","context":{}})")
                .status()
                .code(),
            Code::kCorruption);
  EXPECT_NE(VolumeKey("a"), VolumeKey("b"));
  EXPECT_EQ(VolumeKey("a").size(), 32u);
}

TEST(MountInfo, ParsesEscapesOptionalFieldsAndReadOnly) {
  const char* text =
      "36 35 98:0 /mnt1 /mnt/with\\040space rw,noatime master:1 - ext3 /dev/root rw,errors=continue\n"
      "40 36 0:50 / /var/lib/kubelet/pods/x/volumes/y ro,nosuid shared:7 master:3 - fuse.strata strata:s3://b rw\n";
  auto t = ParseMountInfo(text);
  ASSERT_TRUE(t.ok()) << t.status();
  ASSERT_EQ(t->size(), 2u);
  EXPECT_EQ((*t)[0].mount_point, "/mnt/with space");
  EXPECT_EQ((*t)[0].fs_type, "ext3");
  EXPECT_FALSE((*t)[0].read_only);
  EXPECT_EQ((*t)[1].fs_type, "fuse.strata");
  EXPECT_TRUE((*t)[1].read_only);
  EXPECT_EQ((*t)[1].major, 0u);
  EXPECT_EQ((*t)[1].minor, 50u);
  EXPECT_TRUE(FindMount(*t, "/mnt/with space").ok());
  EXPECT_EQ(FindMount(*t, "/nope").status().code(), Code::kNotFound);
  EXPECT_FALSE(ParseMountInfo("1 2 3\n").ok());
}

TEST(Extender, ScoresNodesByTheFractionOfThePodsDataCachedThere) {
  ClusterCache cache;
  ASSERT_TRUE(AddMemberRecord(R"({"node":"n1","datasets":{"imagenet":300,"other":999}})", &cache).ok());
  ASSERT_TRUE(AddMemberRecord(R"({"node":"n2","datasets":{"imagenet":100}})", &cache).ok());
  ASSERT_TRUE(AddMemberRecord(R"({"node":"n3","datasets":{}})", &cache).ok());
  EXPECT_FALSE(AddMemberRecord(R"({"datasets":{}})", &cache).ok());
  const char* pod = R"({"Pod":{"metadata":{"annotations":{"csi.strata.dev/datasets":"imagenet"}},
      "spec":{"volumes":[{"name":"v","csi":{"driver":"csi.strata.dev","volumeAttributes":{"url":"s3://x/y?endpoint=e"}}}]}},
      "NodeNames":["n1","n2","n3"]})";
  auto args = ParseExtenderArgs(pod);
  ASSERT_TRUE(args.ok()) << args.status();
  EXPECT_EQ(args->datasets, (std::vector<std::string>{"imagenet", "s3://x/y"}));
  EXPECT_DOUBLE_EQ(CachedFraction(cache, args->datasets, "n1"), 0.75);
  EXPECT_DOUBLE_EQ(CachedFraction(cache, args->datasets, "n3"), 0.0);
  EXPECT_EQ(PrioritizeResponse(*args, cache),
            R"([{"Host":"n1","Score":8},{"Host":"n2","Score":3},{"Host":"n3","Score":0}])");
  auto filtered = nlohmann::json::parse(FilterResponse(*args, cache, 0.5));
  EXPECT_EQ(filtered["NodeNames"], nlohmann::json::array({"n1"}));
  EXPECT_TRUE(filtered["FailedNodes"].contains("n2"));
  EXPECT_EQ(nlohmann::json::parse(FilterResponse(*args, cache, 0))["NodeNames"].size(), 3u);
  // Data cached nowhere filters nothing.
  auto uncached = ParseExtenderArgs(R"({"Pod":{"metadata":{"annotations":{"csi.strata.dev/datasets":"new"}}},
      "NodeNames":["n1","n2"]})");
  ASSERT_TRUE(uncached.ok());
  EXPECT_EQ(nlohmann::json::parse(FilterResponse(*uncached, cache, 0.5))["NodeNames"].size(), 2u);
  EXPECT_FALSE(ParseExtenderArgs("[1,2]").ok());
}

}  // namespace
}  // namespace strata::csi
