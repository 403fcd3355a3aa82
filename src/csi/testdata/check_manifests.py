#!/usr/bin/python3
"""Parses every manifest in deploy/kubernetes/, checks that the pieces that must agree
do (socket paths, registration path, health port, driver name, secret keys, the plugin
and the mount host), and prints the node plugin's and the mount host's command lines and
environments as JSON for csi_driver_test, which runs them exactly so. Exit 1 with the
reasons when a check fails."""
import glob
import json
import os
import sys

import yaml

root = sys.argv[1]
docs = []
for path in sorted(glob.glob(os.path.join(root, "*.yaml"))):
    with open(path) as f:
        for d in yaml.safe_load_all(f):
            if d is not None:
                docs.append((os.path.basename(path), d))
problems = []
by_kind = {}
for name, d in docs:
    for field in ("apiVersion", "kind", "metadata"):
        if field not in d:
            problems.append(f"{name}: a document without {field}")
    by_kind.setdefault(d.get("kind"), []).append(d)

for kind in ("Namespace", "CSIDriver", "DaemonSet", "Deployment", "StorageClass", "ServiceAccount", "ClusterRole",
             "ClusterRoleBinding", "PersistentVolume", "PersistentVolumeClaim", "Job", "Pod", "Secret", "Service",
             "ConfigMap"):
    if kind not in by_kind:
        problems.append(f"no {kind} in {root}")

driver = by_kind["CSIDriver"][0]["metadata"]["name"]
if driver != "csi.strata.dev":
    problems.append(f"CSIDriver is {driver}")
for sc in by_kind.get("StorageClass", []):
    if sc.get("provisioner") != driver:
        problems.append(f"StorageClass {sc['metadata']['name']} provisioner {sc.get('provisioner')}")
for pv in by_kind.get("PersistentVolume", []):
    if pv["spec"]["csi"]["driver"] != driver:
        problems.append(f"PV {pv['metadata']['name']} driver {pv['spec']['csi']['driver']}")
secret_keys = {"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "STRATA_GROUP_SECRET"}
for s in by_kind.get("Secret", []):
    if s["metadata"]["name"] == "strata-csi-state-key":
        continue
    unknown = set(s.get("stringData", {})) - secret_keys
    if unknown:
        problems.append(f"Secret {s['metadata']['name']} has keys the driver refuses: {sorted(unknown)}")


def flag(args, name):
    for a in args:
        if a.startswith(name + "="):
            return a.split("=", 1)[1]
    return None


daemonsets = {d["metadata"]["name"]: d for d in by_kind["DaemonSet"]}
if set(daemonsets) != {"strata-csi-node", "strata-csi-mounts"}:
    problems.append(f"the DaemonSets must be strata-csi-node and strata-csi-mounts, not {sorted(daemonsets)}")
    print("\n".join(problems), file=sys.stderr)
    sys.exit(1)
ds = daemonsets["strata-csi-node"]
spec = ds["spec"]["template"]["spec"]
containers = {c["name"]: c for c in spec["containers"]}
plugin = containers.get("strata-csi")
registrar = containers.get("node-driver-registrar")
probe = containers.get("liveness-probe")
if not (plugin and registrar and probe):
    problems.append("the DaemonSet needs the containers strata-csi, node-driver-registrar and liveness-probe")
    print("\n".join(problems), file=sys.stderr)
    sys.exit(1)
volumes = {v["name"]: v for v in spec["volumes"]}
mounts = {m["mountPath"]: m["name"] for m in plugin["volumeMounts"]}
endpoint = flag(plugin["args"], "--endpoint")
sock = endpoint[len("unix://"):] if endpoint and endpoint.startswith("unix://") else None
if sock is None:
    problems.append(f"plugin --endpoint {endpoint} is not unix://")
else:
    for c in (registrar, probe):
        if flag(c["args"], "--csi-address") != sock:
            problems.append(f"{c['name']} --csi-address differs from the plugin's socket {sock}")
    sock_dir = os.path.dirname(sock)
    host_dir = volumes[mounts[sock_dir]]["hostPath"]["path"]
    reg = flag(registrar["args"], "--kubelet-registration-path")
    if reg != os.path.join(host_dir, os.path.basename(sock)):
        problems.append(f"registration path {reg} is not the socket's host path {host_dir}")
port = plugin["livenessProbe"]["httpGet"]["port"]
ports = {p["name"]: p["containerPort"] for p in plugin.get("ports", [])}
if str(ports.get(port, port)) != flag(probe["args"], "--health-port"):
    problems.append("the plugin's livenessProbe port is not the liveness-probe sidecar's --health-port")
kubelet = [m for m in plugin["volumeMounts"] if m["mountPath"] == "/var/lib/kubelet"]
if not kubelet or kubelet[0].get("mountPropagation") != "Bidirectional":
    problems.append("the plugin needs /var/lib/kubelet with mountPropagation: Bidirectional")
if not plugin.get("securityContext", {}).get("privileged"):
    problems.append("the plugin must be privileged (FUSE, bind mounts)")

# The scheduler extender verifies the members' records with the group secret, read
# from a file of a Secret volume that holds that key and only its owner may read.
extenders = [d for d in by_kind.get("Deployment", []) if d["metadata"]["name"] == "strata-scheduler-extender"]
if not extenders:
    problems.append("no strata-scheduler-extender Deployment")
else:
    xspec = extenders[0]["spec"]["template"]["spec"]
    xc = xspec["containers"][0]
    secret_file = flag(xc["args"], "--group-secret-file")
    xvolumes = {v["name"]: v for v in xspec.get("volumes", [])}
    found = False
    for m in xc.get("volumeMounts", []):
        if secret_file and secret_file.startswith(m["mountPath"].rstrip("/") + "/"):
            sv = xvolumes.get(m["name"], {}).get("secret", {})
            rel = secret_file[len(m["mountPath"].rstrip("/")) + 1:]
            items = {i["path"]: i["key"] for i in sv.get("items", [])}
            mode = sv.get("defaultMode", 0o644)
            found = items.get(rel) == "STRATA_GROUP_SECRET" and mode & 0o077 == 0
    if not found:
        problems.append("the extender's --group-secret-file is not the STRATA_GROUP_SECRET key of a Secret volume "
                        "with an owner-only defaultMode")

# The mount host: the plugin's mounts run in its container, which must outlive the
# plugin's (OnDelete), share its socket and state dir on the same host paths, see the
# same PIDs (both hostPID) and mount into the kubelet's tree as the plugin does.
hds = daemonsets["strata-csi-mounts"]
hspec = hds["spec"]["template"]["spec"]
host = hspec["containers"][0]
hvolumes = {v["name"]: v for v in hspec["volumes"]}
hmounts = {m["mountPath"]: m["name"] for m in host["volumeMounts"]}
if hds["spec"].get("updateStrategy", {}).get("type") != "OnDelete":
    problems.append("strata-csi-mounts must be updated OnDelete: a rollout would kill every mount")
if "livenessProbe" in host:
    problems.append("the mount host must have no liveness probe: a restart kills every mount")
for name, s in (("strata-csi-node", spec), ("strata-csi-mounts", hspec)):
    if not s.get("hostPID"):
        problems.append(f"{name} needs hostPID: the plugin adopts the mount host's mounts by PID")
if spec.get("hostNetwork") != hspec.get("hostNetwork"):
    problems.append("the mount host's hostNetwork differs from the plugin's (the mounts' peer endpoints)")
host_sock_flag = flag(host["args"], "--mount-host")
if flag(host["args"], "--mode") != "mounts" or not host_sock_flag:
    problems.append("the mount host must run --mode=mounts with --mount-host")
if flag(plugin["args"], "--mount-host") != host_sock_flag:
    problems.append(f"the plugin's --mount-host {flag(plugin['args'], '--mount-host')} is not the host's {host_sock_flag}")


def host_path(path, mounts_, volumes_):
    """The host path of a container path, through the volume mounted at it or above it."""
    best = max((m for m in mounts_ if path == m or path.startswith(m.rstrip("/") + "/")), key=len, default=None)
    if best is None:
        return None
    base = (volumes_[mounts_[best]].get("hostPath") or {}).get("path")
    return None if base is None else base + path[len(best):]


state_dir = flag(plugin["args"], "--state-dir")
for path in filter(None, [host_sock_flag and host_sock_flag[len("unix://"):], state_dir, "/var/lib/kubelet"]):
    if host_path(path, mounts, volumes) is None or host_path(path, mounts, volumes) != host_path(path, hmounts,
                                                                                                  hvolumes):
        problems.append(f"{path} is not the same host path in the plugin and the mount host")
hkubelet = [m for m in host["volumeMounts"] if m["mountPath"] == "/var/lib/kubelet"]
if not hkubelet or hkubelet[0].get("mountPropagation") != "Bidirectional":
    problems.append("the mount host needs /var/lib/kubelet with mountPropagation: Bidirectional")
if not host.get("securityContext", {}).get("privileged"):
    problems.append("the mount host must be privileged (FUSE)")


def environment(container):
    env = {}
    for e in container.get("env", []):
        if "value" in e:
            env[e["name"]] = e["value"]
        else:
            env[e["name"]] = "fieldRef:" + e["valueFrom"]["fieldRef"]["fieldPath"]
    return env


out = {"command": plugin["command"], "args": plugin["args"], "env": environment(plugin),
       "mounts": {path: (volumes[name].get("hostPath") or {}).get("path", "") for path, name in mounts.items()},
       "mount_host": {"command": host["command"], "args": host["args"], "env": environment(host)}}
if problems:
    print("\n".join(problems), file=sys.stderr)
    sys.exit(1)
print(json.dumps(out))
