#include "object/s3_config.h"

#include <gtest/gtest.h>

namespace strata::object {
namespace {

ConfigEnv Env(std::map<std::string, std::string> vars, std::map<std::string, std::string> files = {}) {
  if (!vars.count("HOME")) vars["HOME"] = "/home/u";
  return ConfigEnv::FromMaps(std::move(vars), std::move(files));
}

TEST(S3ConfigTest, UrlWithParamsAndEnvCredentials) {
  auto env = Env({{"AWS_ACCESS_KEY_ID", "AK"}, {"AWS_SECRET_ACCESS_KEY", "SK"}, {"AWS_SESSION_TOKEN", "TOK"}});
  auto c = S3ConfigFromUrl(
      "s3://my-bucket/data/train?endpoint=http%3A%2F%2F127.0.0.1%3A9000&region=eu-west-1"
      "&path_style=1&part_size=6000000&concurrency=4&max_retries=2",
      env);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->bucket, "my-bucket");
  EXPECT_EQ(c->prefix, "data/train/");
  EXPECT_EQ(c->endpoint, "http://127.0.0.1:9000");
  EXPECT_EQ(c->region, "eu-west-1");
  EXPECT_EQ(c->addressing, S3Addressing::kPath);
  EXPECT_EQ(c->part_size, 6000000u);
  EXPECT_EQ(c->concurrency, 4);
  EXPECT_EQ(c->max_retries, 2);
  EXPECT_EQ(c->credentials.access_key_id, "AK");
  EXPECT_EQ(c->credentials.secret_access_key, "SK");
  EXPECT_EQ(c->credentials.session_token, "TOK");
}

TEST(S3ConfigTest, BadUrlsAreInvalidArgument) {
  auto env = Env({{"AWS_ACCESS_KEY_ID", "AK"}, {"AWS_SECRET_ACCESS_KEY", "SK"}});
  for (const char* url : {"file:///x", "s3://", "s3://a*b", "s3://bad bucket/x", "s3://bucket?typo=1",
                          "s3://bucket?path_style=maybe", "s3://bucket?part_size=0", "s3://bucket/%zz",
                          "s3://bucket?endpoint=ftp://h", "s3://bucket?endpoint=http://h/path"}) {
    auto c = S3ConfigFromUrl(url, env);
    ASSERT_FALSE(c.ok()) << url;
    EXPECT_EQ(c.status().code(), Code::kInvalidArgument) << url << " " << c.status();
  }
}

TEST(S3ConfigTest, MissingCredentialsSaysWhatWasTried) {
  auto c = S3ConfigFromUrl("s3://bucket/p", Env({}));
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), Code::kUnauthenticated);
  const std::string& m = c.status().message();
  EXPECT_NE(m.find("AWS_ACCESS_KEY_ID"), std::string::npos) << m;
  EXPECT_NE(m.find("/home/u/.aws/credentials (not found)"), std::string::npos) << m;
  EXPECT_NE(m.find("/home/u/.aws/config (not found)"), std::string::npos) << m;
  EXPECT_NE(m.find("'default'"), std::string::npos) << m;
}

TEST(S3ConfigTest, ProfilesFromSharedFiles) {
  std::map<std::string, std::string> files = {
      {"/home/u/.aws/credentials",
       "# comment\n[default]\naws_access_key_id = D_AK\naws_secret_access_key = D_SK\n\n"
       "[ci]\naws_access_key_id=CI_AK\naws_secret_access_key=CI_SK\naws_session_token = CI_TOK\n"},
      {"/home/u/.aws/config",
       "[default]\nregion = us-west-2\n[profile ci]\nregion = ap-south-1\ns3 =\n  addressing_style = path\n"
       "  endpoint_url = http://127.0.0.1:7480\n"}};
  auto d = S3ConfigFromUrl("s3://bucket", Env({}, files));
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->credentials.access_key_id, "D_AK");
  EXPECT_EQ(d->region, "us-west-2");
  EXPECT_EQ(d->endpoint, "");

  auto ci = S3ConfigFromUrl("s3://bucket", Env({{"AWS_PROFILE", "ci"}}, files));
  ASSERT_TRUE(ci.ok()) << ci.status();
  EXPECT_EQ(ci->credentials.access_key_id, "CI_AK");
  EXPECT_EQ(ci->credentials.session_token, "CI_TOK");
  EXPECT_EQ(ci->region, "ap-south-1");
  EXPECT_EQ(ci->endpoint, "http://127.0.0.1:7480");
  EXPECT_EQ(ci->addressing, S3Addressing::kPath);

  // Variables beat AWS_PROFILE; an explicit URL profile beats variables.
  auto vars = S3ConfigFromUrl(
      "s3://bucket",
      Env({{"AWS_PROFILE", "ci"}, {"AWS_ACCESS_KEY_ID", "V"}, {"AWS_SECRET_ACCESS_KEY", "VS"}, {"AWS_REGION", "r1"}},
          files));
  ASSERT_TRUE(vars.ok());
  EXPECT_EQ(vars->credentials.access_key_id, "V");
  EXPECT_EQ(vars->region, "r1");
  auto explicit_profile = S3ConfigFromUrl("s3://bucket?profile=ci",
                                          Env({{"AWS_ACCESS_KEY_ID", "V"}, {"AWS_SECRET_ACCESS_KEY", "VS"}}, files));
  ASSERT_TRUE(explicit_profile.ok());
  EXPECT_EQ(explicit_profile->credentials.access_key_id, "CI_AK");
  auto missing = S3ConfigFromUrl("s3://bucket?profile=nope", Env({}, files));
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), Code::kInvalidArgument);
}

TEST(S3ConfigTest, FileLocationsAndEndpointFromEnvironment) {
  std::map<std::string, std::string> files = {
      {"/etc/creds", "[default]\naws_access_key_id = F\naws_secret_access_key = FS\n"}};
  auto c = S3ConfigFromUrl("s3://bucket", Env({{"AWS_SHARED_CREDENTIALS_FILE", "/etc/creds"},
                                               {"AWS_ENDPOINT_URL", "http://127.0.0.1:1/"},
                                               {"AWS_DEFAULT_REGION", "dr"}},
                                              files));
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->credentials.access_key_id, "F");
  EXPECT_EQ(c->endpoint, "http://127.0.0.1:1");
  EXPECT_EQ(c->region, "dr");
  auto s3_specific = S3ConfigFromUrl("s3://bucket", Env({{"AWS_SHARED_CREDENTIALS_FILE", "/etc/creds"},
                                                         {"AWS_ENDPOINT_URL", "http://127.0.0.1:1"},
                                                         {"AWS_ENDPOINT_URL_S3", "http://127.0.0.1:2"}},
                                                        files));
  ASSERT_TRUE(s3_specific.ok());
  EXPECT_EQ(s3_specific->endpoint, "http://127.0.0.1:2");
}

TEST(S3ConfigTest, MalformedIniIsAnErrorWithLineNumber) {
  std::map<std::string, std::string> files = {{"/home/u/.aws/credentials", "[default]\nno equals sign\n"}};
  auto c = S3ConfigFromUrl("s3://bucket", Env({}, files));
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), Code::kInvalidArgument);
  EXPECT_NE(c.status().message().find("line 2"), std::string::npos) << c.status();
}

TEST(S3ConfigTest, IniParser) {
  auto ini = ParseAwsIni("[a]\nk = v = w\n;c\n[profile    x ]\nK=1\n");
  ASSERT_TRUE(ini.ok()) << ini.status();
  EXPECT_EQ((*ini)["a"]["k"], "v = w");
  EXPECT_EQ((*ini)["profile x"]["k"], "1");
  EXPECT_FALSE(ParseAwsIni("k=v\n").ok());
  EXPECT_FALSE(ParseAwsIni("[a\n").ok());
  EXPECT_FALSE(ParseAwsIni("[]\n").ok());
  EXPECT_FALSE(ParseAwsIni("[a]\n=v\n").ok());
  EXPECT_FALSE(ParseAwsIni("[a]\nk=" + std::string(5000, 'x')).ok());
  EXPECT_TRUE(ParseAwsIni("").ok());
}

TEST(S3ConfigTest, Addressing) {
  S3Config c;
  c.bucket = "bkt";
  c.endpoint = "http://127.0.0.1:9000";
  auto e = ResolveS3Endpoint(c);
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_TRUE(e->path_style);
  EXPECT_EQ(e->base_url, "http://127.0.0.1:9000");
  EXPECT_EQ(e->bucket_path, "/bkt");
  EXPECT_EQ(e->host_header, "127.0.0.1:9000");

  c.endpoint = "";
  c.region = "eu-west-1";
  e = ResolveS3Endpoint(c);
  ASSERT_TRUE(e.ok());
  EXPECT_FALSE(e->path_style);
  EXPECT_EQ(e->base_url, "https://bkt.s3.eu-west-1.amazonaws.com");
  EXPECT_EQ(e->bucket_path, "");

  c.endpoint = "https://storage.example.com";
  e = ResolveS3Endpoint(c);
  ASSERT_TRUE(e.ok());
  EXPECT_FALSE(e->path_style);
  EXPECT_EQ(e->host_header, "bkt.storage.example.com");

  c.addressing = S3Addressing::kPath;
  e = ResolveS3Endpoint(c);
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->base_url, "https://storage.example.com");
  EXPECT_EQ(e->bucket_path, "/bkt");

  c.addressing = S3Addressing::kVirtual;
  c.bucket = "Upper_Case";
  EXPECT_EQ(ResolveS3Endpoint(c).status().code(), Code::kInvalidArgument);
}

TEST(S3ConfigTest, UrlRoundTrip) {
  S3Config c;
  c.bucket = "b";
  c.prefix = "a b/";
  c.endpoint = "http://127.0.0.1:1";
  c.addressing = S3Addressing::kPath;
  c.credentials = {"AK", "SECRET", ""};
  std::string url = S3ConfigUrl(c);
  EXPECT_EQ(url.find("SECRET"), std::string::npos);
  auto back = S3ConfigFromUrl(url, Env({{"AWS_ACCESS_KEY_ID", "AK"}, {"AWS_SECRET_ACCESS_KEY", "S"}}));
  ASSERT_TRUE(back.ok()) << back.status() << " " << url;
  EXPECT_EQ(back->prefix, "a b/");
  EXPECT_EQ(back->endpoint, c.endpoint);
  EXPECT_EQ(back->addressing, S3Addressing::kPath);
}

}  // namespace
}  // namespace strata::object
