#include "group/etcd_client.h"

#include <nlohmann/json.hpp>

#include "group/address.h"
#include "group/etcd_json.h"
#include "io/secret_file.h"
#include "net/http.h"

namespace strata::group {
namespace {

// etcd user names and passwords are short; a file larger than this is not one.
constexpr size_t kMaxUserFile = 1024;

Status CheckReadable(const std::string& path, const char* what) {
  FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return InvalidArgumentError(std::string("cannot read the etcd ") + what + " file " + path);
  std::fclose(f);
  return Status::Ok();
}

}  // namespace

Result<EtcdEndpoint> ParseEtcdEndpoint(bool tls, std::string_view host_port, std::string_view query) {
  STRATA_RETURN_IF_ERROR(ParseHostPort(host_port).status());
  EtcdEndpoint e;
  e.url = (tls ? "https://" : "http://") + std::string(host_port);
  if (query.empty()) return e;
  if (!tls) {
    return InvalidArgumentError("etcd:// takes no options; TLS files and users need etcds://HOST:PORT/GROUP?...");
  }
  STRATA_ASSIGN_OR_RETURN(auto params, net::ParseQueryString(query, /*plus_is_space=*/false));
  for (auto& [name, value] : params) {
    std::string* field = name == "ca"          ? &e.ca_file
                         : name == "cert"      ? &e.cert_file
                         : name == "key"       ? &e.key_file
                         : name == "user_file" ? &e.user_file
                                               : nullptr;
    if (!field) {
      return InvalidArgumentError("unknown etcds:// option \"" + name.substr(0, 32) +
                                  "\" (ca, cert, key and user_file take file paths)");
    }
    if (value.empty() || !field->empty()) return InvalidArgumentError("etcds:// option " + name + " empty or repeated");
    *field = value;
  }
  if (e.cert_file.empty() != e.key_file.empty()) {
    return InvalidArgumentError("etcds:// needs both cert= and key= for a client certificate");
  }
  return e;
}

EtcdClient::EtcdClient(EtcdEndpoint endpoint, std::chrono::milliseconds timeout)
    : endpoint_(std::move(endpoint)), timeout_(timeout), http_([&] {
        net::HttpClientOptions h;
        h.connect_timeout = timeout;
        h.total_timeout = timeout;
        h.max_connections = 4;
        h.ca_bundle = endpoint_.ca_file;
        h.client_cert = endpoint_.cert_file;
        h.client_key = endpoint_.key_file;
        return h;
      }()) {}

Result<std::unique_ptr<EtcdClient>> EtcdClient::Open(EtcdEndpoint endpoint, std::chrono::milliseconds timeout) {
  std::string user, password;
  if (!endpoint.ca_file.empty()) STRATA_RETURN_IF_ERROR(CheckReadable(endpoint.ca_file, "CA"));
  if (!endpoint.cert_file.empty()) {
    STRATA_RETURN_IF_ERROR(CheckReadable(endpoint.cert_file, "client certificate"));
    // A private key others can read is no longer private.
    STRATA_RETURN_IF_ERROR(
        io::ReadSecretFile(endpoint.key_file, {.what = "the etcd client key", .max_bytes = 64 << 10}).status());
  }
  if (!endpoint.user_file.empty()) {
    STRATA_ASSIGN_OR_RETURN(
        std::string cred, io::ReadSecretFile(endpoint.user_file, {.what = "the etcd user", .max_bytes = kMaxUserFile}));
    const size_t colon = cred.find(':');
    if (colon == std::string::npos || colon == 0 || colon + 1 == cred.size()) {
      return InvalidArgumentError("the etcd user file " + endpoint.user_file + " must hold USER:PASSWORD");
    }
    user = cred.substr(0, colon);
    password = cred.substr(colon + 1);
    for (unsigned char c : cred) {
      if (c < 0x20 || c == 0x7f) {
        return InvalidArgumentError("the etcd user file " + endpoint.user_file + " holds a control character");
      }
    }
  }
  std::unique_ptr<EtcdClient> c(new EtcdClient(std::move(endpoint), timeout));
  c->user_ = std::move(user);
  c->password_ = std::move(password);
  return c;
}

net::HttpClientOptions EtcdClient::ClientOptions() const {
  net::HttpClientOptions h;
  h.connect_timeout = timeout_;
  h.ca_bundle = endpoint_.ca_file;
  h.client_cert = endpoint_.cert_file;
  h.client_key = endpoint_.key_file;
  return h;
}

Result<net::HttpResponse> EtcdClient::Post(const std::string& path, const std::string& json, const std::string& token) {
  net::HttpRequest req;
  req.method = "POST";
  req.url = endpoint_.url + path;
  req.headers.emplace_back("Content-Type", "application/json");
  if (!token.empty()) req.headers.emplace_back("Authorization", token);
  req.body = Buffer::Copy(json);
  req.timeout = timeout_;
  return http_.Send(std::move(req));
}

Result<std::string> EtcdClient::Token(bool renew) {
  if (user_.empty()) return std::string();
  {
    MutexLock lock(mu_);
    if (!renew && !token_.empty()) return token_;
  }
  // Not UTF-8 is etcd's to refuse: never an exception here.
  const std::string body = nlohmann::json{{"name", user_}, {"password", password_}}.dump(
      -1, ' ', false, nlohmann::json::error_handler_t::replace);
  STRATA_ASSIGN_OR_RETURN(net::HttpResponse resp, Post("/v3/auth/authenticate", body, ""));
  if (resp.status != 200) {
    // etcd answers a wrong user or password with 400: a setting to fix, not a retry.
    return Status(Code::kPermissionDenied,
                  "etcd refused the user in " + endpoint_.user_file + " (HTTP " + std::to_string(resp.status) + ")",
                  resp.body.ToString().substr(0, 200), false);
  }
  STRATA_ASSIGN_OR_RETURN(std::string token, ParseEtcdAuthToken(resp.body.view()));
  MutexLock lock(mu_);
  token_ = token;
  return token;
}

Result<std::string> EtcdClient::Call(const std::string& path, const std::string& json) {
  STRATA_ASSIGN_OR_RETURN(std::string token, Token(false));
  STRATA_ASSIGN_OR_RETURN(net::HttpResponse resp, Post(path, json, token));
  if (resp.status == 401 && !user_.empty()) {
    // Simple tokens expire (etcd --auth-token-ttl) and die with a restart: get another once.
    STRATA_ASSIGN_OR_RETURN(token, Token(true));
    STRATA_ASSIGN_OR_RETURN(resp, Post(path, json, token));
  }
  if (resp.status == 401 || resp.status == 403) {
    return Status(Code::kPermissionDenied,
                  "etcd " + path + " refused this member (HTTP " + std::to_string(resp.status) +
                      "): check its user, role or certificate",
                  resp.body.ToString().substr(0, 200), false);
  }
  if (resp.status != 200) {
    return UnavailableError("etcd " + path + " answered HTTP " + std::to_string(resp.status),
                            resp.body.ToString().substr(0, 200));
  }
  return resp.body.ToString();
}

Result<net::HttpRequest> EtcdClient::StreamRequest(const std::string& path, const std::string& json) {
  STRATA_ASSIGN_OR_RETURN(std::string token, Token(false));
  net::HttpRequest req;
  req.method = "POST";
  req.url = endpoint_.url + path;
  req.headers.emplace_back("Content-Type", "application/json");
  if (!token.empty()) req.headers.emplace_back("Authorization", token);
  req.body = Buffer::Copy(json);
  return req;
}

}  // namespace strata::group
