#!/usr/bin/python3
"""A kubelet-like CSI client (python3-grpcio, messages generated from src/csi/csi.proto by
protoc at start): the calls a kubelet makes, from the command line.

  csi_client.py SOCKET info
  csi_client.py SOCKET stage VOLUME_ID STAGING_PATH key=value...   (volume_context; secrets from
                                                                   AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY)
  csi_client.py SOCKET publish VOLUME_ID STAGING_PATH TARGET_PATH [ro]
  csi_client.py SOCKET unpublish VOLUME_ID TARGET_PATH
  csi_client.py SOCKET unstage VOLUME_ID STAGING_PATH
Exit 0 on OK, else prints the gRPC code and message and exits 1."""
import atexit
import importlib
import os
import shutil
import subprocess
import sys
import tempfile

import grpc

SRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src")
gen = tempfile.mkdtemp(prefix="strata-csi-py-")
atexit.register(shutil.rmtree, gen, True)
subprocess.run(["protoc", "-I", SRC, "--python_out", gen, os.path.join(SRC, "csi", "csi.proto")], check=True)
sys.path.insert(0, gen)
pb = importlib.import_module("csi.csi_pb2")


def call(channel, service, method, request, response_type):
    rpc = channel.unary_unary(f"/csi.v1.{service}/{method}", request_serializer=lambda m: m.SerializeToString(),
                              response_deserializer=response_type.FromString)
    return rpc(request, timeout=120)


def capability(ro=False):
    mode = pb.VolumeCapability.AccessMode.MULTI_NODE_READER_ONLY if ro else \
        pb.VolumeCapability.AccessMode.MULTI_NODE_MULTI_WRITER
    return pb.VolumeCapability(mount=pb.VolumeCapability.MountVolume(),
                               access_mode=pb.VolumeCapability.AccessMode(mode=mode))


def main(argv):
    sock, verb, args = argv[1], argv[2], argv[3:]
    channel = grpc.insecure_channel("unix://" + sock)
    secrets = {k: os.environ[k] for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY") if k in os.environ}
    try:
        if verb == "info":
            info = call(channel, "Identity", "GetPluginInfo", pb.GetPluginInfoRequest(), pb.GetPluginInfoResponse)
            node = call(channel, "Node", "NodeGetInfo", pb.NodeGetInfoRequest(), pb.NodeGetInfoResponse)
            print(info.name, info.vendor_version, node.node_id)
        elif verb == "stage":
            ctx = dict(a.split("=", 1) for a in args[2:])
            call(channel, "Node", "NodeStageVolume",
                 pb.NodeStageVolumeRequest(volume_id=args[0], staging_target_path=args[1],
                                           volume_capability=capability(), volume_context=ctx, secrets=secrets),
                 pb.NodeStageVolumeResponse)
        elif verb == "publish":
            ro = len(args) > 3 and args[3] == "ro"
            call(channel, "Node", "NodePublishVolume",
                 pb.NodePublishVolumeRequest(volume_id=args[0], staging_target_path=args[1], target_path=args[2],
                                             volume_capability=capability(ro), readonly=ro),
                 pb.NodePublishVolumeResponse)
        elif verb == "unpublish":
            call(channel, "Node", "NodeUnpublishVolume",
                 pb.NodeUnpublishVolumeRequest(volume_id=args[0], target_path=args[1]), pb.NodeUnpublishVolumeResponse)
        elif verb == "unstage":
            call(channel, "Node", "NodeUnstageVolume",
                 pb.NodeUnstageVolumeRequest(volume_id=args[0], staging_target_path=args[1]),
                 pb.NodeUnstageVolumeResponse)
        else:
            print(__doc__, file=sys.stderr)
            return 2
    except grpc.RpcError as e:
        print(f"{e.code().name}: {e.details()}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
