#include "csi/driver.h"

#include <grpcpp/grpcpp.h>
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <thread>

#include "base/log.h"
#include "base/stop_signals.h"
#include "csi/controller.h"
#include "csi/csi.grpc.pb.h"

namespace strata::csi {
namespace {

namespace v1 = ::csi::v1;
using grpc::ServerContext;

// The one Status -> gRPC code mapping (the codes the CSI spec names for each case).
grpc::Status ToGrpc(const Status& st) {
  if (st.ok()) return grpc::Status::OK;
  grpc::StatusCode code = grpc::StatusCode::INTERNAL;
  switch (st.code()) {
    case Code::kNotFound: code = grpc::StatusCode::NOT_FOUND; break;
    case Code::kInvalidArgument: code = grpc::StatusCode::INVALID_ARGUMENT; break;
    case Code::kAlreadyExists: code = grpc::StatusCode::ALREADY_EXISTS; break;
    case Code::kPreconditionFailed: code = grpc::StatusCode::FAILED_PRECONDITION; break;
    case Code::kThrottled: code = grpc::StatusCode::RESOURCE_EXHAUSTED; break;
    case Code::kUnavailable: code = grpc::StatusCode::UNAVAILABLE; break;
    case Code::kDeadlineExceeded: code = grpc::StatusCode::DEADLINE_EXCEEDED; break;
    case Code::kPermissionDenied: code = grpc::StatusCode::PERMISSION_DENIED; break;
    case Code::kUnauthenticated: code = grpc::StatusCode::UNAUTHENTICATED; break;
    case Code::kNotSupported: code = grpc::StatusCode::INVALID_ARGUMENT; break;
    case Code::kNoSpace: code = grpc::StatusCode::RESOURCE_EXHAUSTED; break;
    default: break;
  }
  return grpc::Status(code, st.ToString());
}

StringMap ToMap(const google::protobuf::Map<std::string, std::string>& m) { return StringMap(m.begin(), m.end()); }

// Logged per call: the method and the volume, never secrets or contexts.
grpc::Status Logged(const char* method, const std::string& volume, const Status& st) {
  if (st.ok()) {
    STRATA_LOG_INFO("csi: {} {}: ok", method, volume);
  } else {
    STRATA_LOG_WARN("csi: {} {}: {}", method, volume, st.ToString());
  }
  return ToGrpc(st);
}

bool ReaderOnly(v1::VolumeCapability::AccessMode::Mode m) {
  return m == v1::VolumeCapability::AccessMode::SINGLE_NODE_READER_ONLY ||
         m == v1::VolumeCapability::AccessMode::MULTI_NODE_READER_ONLY;
}

// A mount (file system) volume with a known access mode; `*read_only` when the
// mode or a "ro" mount flag says so.
Status CheckCapability(const v1::VolumeCapability& cap, bool* read_only) {
  if (cap.has_block()) return InvalidArgumentError("block volumes are not supported: strata volumes are file systems");
  if (!cap.has_mount()) return InvalidArgumentError("volume_capability needs an access type (mount)");
  const std::string& fs = cap.mount().fs_type();
  if (!fs.empty() && fs != "strata" && fs != "fuse.strata") {
    return InvalidArgumentError("fs_type \"" + fs + "\" is not supported (leave it empty)");
  }
  const auto mode = cap.access_mode().mode();
  if (mode == v1::VolumeCapability::AccessMode::UNKNOWN || !v1::VolumeCapability::AccessMode::Mode_IsValid(mode)) {
    return InvalidArgumentError("volume_capability needs a known access mode");
  }
  bool ro = ReaderOnly(mode);
  for (const auto& f : cap.mount().mount_flags()) ro = ro || f == "ro";
  if (read_only) *read_only = ro;
  return Status::Ok();
}

class IdentityService final : public v1::Identity::Service {
 public:
  IdentityService(std::string version, bool controller) : version_(std::move(version)), controller_(controller) {}
  grpc::Status GetPluginInfo(ServerContext*, const v1::GetPluginInfoRequest*, v1::GetPluginInfoResponse* out) override {
    out->set_name(kDriverName);
    out->set_vendor_version(version_);
    return grpc::Status::OK;
  }
  grpc::Status GetPluginCapabilities(ServerContext*, const v1::GetPluginCapabilitiesRequest*,
                                     v1::GetPluginCapabilitiesResponse* out) override {
    if (controller_) {
      out->add_capabilities()->mutable_service()->set_type(v1::PluginCapability::Service::CONTROLLER_SERVICE);
    }
    return grpc::Status::OK;
  }
  grpc::Status Probe(ServerContext*, const v1::ProbeRequest*, v1::ProbeResponse* out) override {
    out->mutable_ready()->set_value(true);  // serving means the state dir was read and mounts re-adopted
    return grpc::Status::OK;
  }

 private:
  std::string version_;
  bool controller_;
};

class NodeService final : public v1::Node::Service {
 public:
  explicit NodeService(NodeManager& node) : node_(node) {}

  grpc::Status NodeStageVolume(ServerContext*, const v1::NodeStageVolumeRequest* in,
                               v1::NodeStageVolumeResponse*) override {
    StageRequest r;
    r.volume_id = in->volume_id();
    r.staging_path = in->staging_target_path();
    r.context = ToMap(in->volume_context());
    r.secrets = ToMap(in->secrets());
    Status st = in->has_volume_capability() ? CheckCapability(in->volume_capability(), &r.read_only)
                                            : InvalidArgumentError("volume_capability is required");
    if (st.ok()) st = node_.Stage(r);
    return Logged("NodeStageVolume", r.volume_id, st);
  }
  grpc::Status NodeUnstageVolume(ServerContext*, const v1::NodeUnstageVolumeRequest* in,
                                 v1::NodeUnstageVolumeResponse*) override {
    return Logged("NodeUnstageVolume", in->volume_id(), node_.Unstage(in->volume_id(), in->staging_target_path()));
  }
  grpc::Status NodePublishVolume(ServerContext*, const v1::NodePublishVolumeRequest* in,
                                 v1::NodePublishVolumeResponse*) override {
    PublishRequest r;
    r.volume_id = in->volume_id();
    r.staging_path = in->staging_target_path();
    r.target_path = in->target_path();
    r.context = ToMap(in->volume_context());
    bool cap_ro = false;
    Status st = in->has_volume_capability() ? CheckCapability(in->volume_capability(), &cap_ro)
                                            : InvalidArgumentError("volume_capability is required");
    r.read_only = in->readonly() || cap_ro;
    if (st.ok()) st = node_.Publish(r);
    return Logged("NodePublishVolume", r.volume_id, st);
  }
  grpc::Status NodeUnpublishVolume(ServerContext*, const v1::NodeUnpublishVolumeRequest* in,
                                   v1::NodeUnpublishVolumeResponse*) override {
    return Logged("NodeUnpublishVolume", in->volume_id(), node_.Unpublish(in->volume_id(), in->target_path()));
  }
  grpc::Status NodeGetVolumeStats(ServerContext*, const v1::NodeGetVolumeStatsRequest* in,
                                  v1::NodeGetVolumeStatsResponse* out) override {
    auto s = node_.Stats(in->volume_id(), in->volume_path());
    if (!s.ok()) return Logged("NodeGetVolumeStats", in->volume_id(), s.status());
    auto* u = out->add_usage();
    u->set_unit(v1::VolumeUsage::BYTES);
    u->set_used(static_cast<int64_t>(s->cached_bytes));
    u->set_total(static_cast<int64_t>(s->capacity_bytes));
    u->set_available(static_cast<int64_t>(s->capacity_bytes - std::min(s->capacity_bytes, s->cached_bytes)));
    return grpc::Status::OK;
  }
  grpc::Status NodeGetCapabilities(ServerContext*, const v1::NodeGetCapabilitiesRequest*,
                                   v1::NodeGetCapabilitiesResponse* out) override {
    for (auto t :
         {v1::NodeServiceCapability::RPC::STAGE_UNSTAGE_VOLUME, v1::NodeServiceCapability::RPC::GET_VOLUME_STATS}) {
      out->add_capabilities()->mutable_rpc()->set_type(t);
    }
    return grpc::Status::OK;
  }
  grpc::Status NodeGetInfo(ServerContext*, const v1::NodeGetInfoRequest*, v1::NodeGetInfoResponse* out) override {
    out->set_node_id(node_.options().node_id);
    return grpc::Status::OK;
  }

 private:
  NodeManager& node_;
};

class ControllerService final : public v1::Controller::Service {
 public:
  grpc::Status CreateVolume(ServerContext*, const v1::CreateVolumeRequest* in, v1::CreateVolumeResponse* out) override {
    Status st;
    if (in->volume_capabilities().empty()) st = InvalidArgumentError("volume_capabilities is required");
    for (const auto& cap : in->volume_capabilities()) {
      if (st.ok()) st = CheckCapability(cap, nullptr);
    }
    if (st.ok() && in->has_volume_content_source()) {
      st = InvalidArgumentError("volume content sources (snapshots, clones) are not supported");
    }
    if (st.ok()) {
      auto created = csi::CreateVolume(in->name(), ToMap(in->parameters()), ToMap(in->secrets()));
      st = created.status();
      if (created.ok()) {
        auto* v = out->mutable_volume();
        v->set_volume_id(created->volume_id);
        if (in->has_capacity_range()) v->set_capacity_bytes(in->capacity_range().required_bytes());
        for (const auto& [k, val] : created->context) (*v->mutable_volume_context())[k] = val;
      }
    }
    return Logged("CreateVolume", in->name(), st);
  }
  grpc::Status DeleteVolume(ServerContext*, const v1::DeleteVolumeRequest* in, v1::DeleteVolumeResponse*) override {
    return Logged("DeleteVolume", in->volume_id(), csi::DeleteVolume(in->volume_id(), ToMap(in->secrets())));
  }
  grpc::Status ValidateVolumeCapabilities(ServerContext*, const v1::ValidateVolumeCapabilitiesRequest* in,
                                          v1::ValidateVolumeCapabilitiesResponse* out) override {
    Status st = CheckVolumeId(in->volume_id());
    if (st.ok() && in->volume_capabilities().empty()) st = InvalidArgumentError("volume_capabilities is required");
    if (!st.ok()) return Logged("ValidateVolumeCapabilities", in->volume_id(), st);
    for (const auto& cap : in->volume_capabilities()) {
      Status c = CheckCapability(cap, nullptr);
      if (!c.ok()) {
        out->set_message(c.message());
        return grpc::Status::OK;  // not confirmed: the answer, not an error
      }
    }
    auto* confirmed = out->mutable_confirmed();
    *confirmed->mutable_volume_capabilities() = in->volume_capabilities();
    *confirmed->mutable_volume_context() = in->volume_context();
    *confirmed->mutable_parameters() = in->parameters();
    return grpc::Status::OK;
  }
  grpc::Status ControllerGetCapabilities(ServerContext*, const v1::ControllerGetCapabilitiesRequest*,
                                         v1::ControllerGetCapabilitiesResponse* out) override {
    out->add_capabilities()->mutable_rpc()->set_type(v1::ControllerServiceCapability::RPC::CREATE_DELETE_VOLUME);
    return grpc::Status::OK;
  }
};

Result<std::string> SocketPath(const std::string& endpoint) {
  if (!endpoint.starts_with("unix://")) return InvalidArgumentError("--endpoint must be unix:///path/to/csi.sock");
  std::string path = endpoint.substr(7);
  if (path.empty() || path[0] != '/') return InvalidArgumentError("--endpoint must name an absolute socket path");
  return path;
}

}  // namespace

Status RunDriver(const DriverOptions& options) {
  const sigset_t stop = BlockStopSignals();

  STRATA_ASSIGN_OR_RETURN(std::string socket, SocketPath(options.endpoint));
  std::unique_ptr<NodeManager> node;
  if (options.node) {
    STRATA_ASSIGN_OR_RETURN(node, NodeManager::Open(options.node_options));
  }
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(socket).parent_path(), ec);
  std::filesystem::remove(socket, ec);  // a stale socket of a previous run

  IdentityService identity(options.version, options.controller);
  std::unique_ptr<NodeService> node_service;
  ControllerService controller;
  grpc::ServerBuilder builder;
  builder.AddListeningPort(options.endpoint, grpc::InsecureServerCredentials());
  builder.RegisterService(&identity);
  if (node) {
    node_service = std::make_unique<NodeService>(*node);
    builder.RegisterService(node_service.get());
  }
  if (options.controller) builder.RegisterService(&controller);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (!server) return UnavailableError("cannot serve gRPC on " + options.endpoint);
  STRATA_LOG_INFO("csi: {} {} serving {} on {}{}{}", kDriverName, options.version, "Identity", options.endpoint,
                  node ? ", Node (node " + options.node_options.node_id + ")" : "",
                  options.controller ? ", Controller" : "");
  std::thread waiter([&] {
    int sig = 0;
    sigwait(&stop, &sig);
    STRATA_LOG_INFO("csi: signal {}: stopping (mounts stay up)", sig);
    server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(5));
  });
  server->Wait();
  waiter.join();
  std::filesystem::remove(socket, ec);
  return Status::Ok();
}

}  // namespace strata::csi
