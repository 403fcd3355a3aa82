#!/usr/bin/env python3
"""PUT throughput of one S3 endpoint: CLIENTS concurrent uploads of FILE
through boto3, either as single PUTs (put_object, one request per object) or
as multipart uploads (upload_file with PART_MIB parts, 4 in flight per
object). With --pid, the peak RSS (VmHWM) of that process during the uploads
is measured too (reset first through /proc/PID/clear_refs). The objects are
deleted afterwards. Prints one JSON object.

usage: gateway_put_bench.py --endpoint URL --bucket B --access-key AK --secret-key SK
         --file PATH --clients N --mode single|multipart [--part-mib 32] [--pid PID]
"""
import argparse
import concurrent.futures
import json
import os
import time

import boto3
from boto3.s3.transfer import TransferConfig
from botocore.config import Config

p = argparse.ArgumentParser()
for a in ("--endpoint", "--bucket", "--access-key", "--secret-key", "--file", "--mode"):
    p.add_argument(a, required=True)
p.add_argument("--clients", type=int, default=4)
p.add_argument("--part-mib", type=int, default=32)
p.add_argument("--pid", type=int)
a = p.parse_args()

s3 = boto3.client("s3", endpoint_url=a.endpoint, aws_access_key_id=a.access_key,
                  aws_secret_access_key=a.secret_key, region_name="us-east-1",
                  config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1},
                                max_pool_connections=4 * a.clients + 2, read_timeout=600))
size = os.path.getsize(a.file)
keys = ["put-bench/%s/%d" % (a.mode, i) for i in range(a.clients)]
transfer = TransferConfig(multipart_threshold=1, multipart_chunksize=a.part_mib << 20, max_concurrency=4)


def vm_hwm():
    with open("/proc/%d/status" % a.pid) as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return 0


def put(key):
    if a.mode == "single":
        with open(a.file, "rb") as f:
            s3.put_object(Bucket=a.bucket, Key=key, Body=f)
    else:
        s3.upload_file(a.file, a.bucket, key, Config=transfer)


if a.pid:
    with open("/proc/%d/clear_refs" % a.pid, "w") as f:
        f.write("5")  # resets VmHWM to the current RSS
rss_before = vm_hwm() if a.pid else None
start = time.monotonic()
with concurrent.futures.ThreadPoolExecutor(a.clients) as pool:
    list(pool.map(put, keys))  # raises on any failed upload
seconds = time.monotonic() - start
out = {"mode": a.mode, "clients": a.clients, "object_bytes": size, "seconds": seconds,
       "bytes_per_second": a.clients * size / seconds}
if a.mode == "multipart":
    out["part_bytes"] = a.part_mib << 20
if a.pid:
    out["rss_before_bytes"] = rss_before
    out["peak_rss_bytes"] = vm_hwm()
for k in keys:
    if s3.head_object(Bucket=a.bucket, Key=k)["ContentLength"] != size:
        raise SystemExit("%s: wrong size after upload" % k)
    s3.delete_object(Bucket=a.bucket, Key=k)
print(json.dumps(out))
