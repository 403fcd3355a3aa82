#!/usr/bin/env python3
"""`strata serve --backend 's3://?endpoint=RGW'` driven by boto3: buckets made
through the gateway exist in RGW, objects land in the right upstream bucket,
ListBuckets passes through, a second GET is a cache hit (gateway metrics),
DeleteBucket passes through.

usage: upstream_clients.py GATEWAY_URL GW_KEY GW_SECRET RGW_URL RGW_KEY RGW_SECRET
Prints "N check(s), 0 failure(s)" at the end; exits non-zero on any failure.
"""
import hashlib
import re
import sys
import urllib.request

from boto3_checks import answer, check, client, finish

gw_url, gw_key, gw_secret, rgw_url, rgw_key, rgw_secret = sys.argv[1:7]
gw = client(gw_url, gw_key, gw_secret)
rgw = client(rgw_url, rgw_key, rgw_secret)


def error_code(fn):
    """(the error's code or None, the HTTP status)."""
    status, code, _ = answer(fn)
    return code or None, status


def metric(name, labels=""):
    text = urllib.request.urlopen(gw_url + "/metrics").read().decode()
    total = 0.0
    for line in text.splitlines():
        m = re.match(r"^" + re.escape(name) + r"(\{[^}]*\})?\s+(\S+)$", line)
        if m and labels in (m.group(1) or ""):
            total += float(m.group(2))
    return total


a, b = "upfront-a", "upfront-b"
bodies = {a: b"alpha " * 200000, b: bytes(range(256)) * 4096}  # 1.2 MB and 1 MiB

for bucket in (a, b):
    gw.create_bucket(Bucket=bucket)
    check(rgw.head_bucket(Bucket=bucket)["ResponseMetadata"]["HTTPStatusCode"] == 200,
          bucket + " created through the gateway exists in RGW")
# Creating it again: the gateway knows its owner (the bucket's tags), so its owner hears
# 200, as from S3 in us-east-1 (the gateway's default region; elsewhere BucketAlreadyOwnedByYou).
code, status = error_code(lambda: gw.create_bucket(Bucket=a))
check((code, status) == (None, 200), "creating %s again: %s" % (a, (code, status)))

names = [x["Name"] for x in gw.list_buckets()["Buckets"]]
upstream_names = [x["Name"] for x in rgw.list_buckets()["Buckets"]]
check(a in names and b in names, "ListBuckets through the gateway shows both: %s" % names)
check(sorted(names) == sorted(upstream_names), "ListBuckets is the upstream's: %s vs %s" % (names, upstream_names))

for bucket, body in bodies.items():
    gw.put_object(Bucket=bucket, Key="dir/obj", Body=body, ContentType="text/x-" + bucket)
    got = rgw.get_object(Bucket=bucket, Key="dir/obj")
    check(hashlib.sha256(got["Body"].read()).hexdigest() == hashlib.sha256(body).hexdigest(),
          "object put through the gateway is in RGW bucket " + bucket)
    check(got["ContentType"] == "text/x-" + bucket, "content type kept upstream: " + got["ContentType"])
# Same key, different buckets, different bytes: nothing mixes them (the cache key names the bucket).
for bucket, body in bodies.items():
    got = gw.get_object(Bucket=bucket, Key="dir/obj")["Body"].read()
    check(got == body, "GET through the gateway reads back %s's own object" % bucket)

# A second GET is served from the cache: hits go up, backend bytes do not.
hits0 = metric("strata_cache_hits_total")
backend0 = metric("strata_cache_read_bytes_total", 'source="backend"')
gets0 = metric("strata_s3_requests_total", 'op="GetObject"')
for bucket, body in bodies.items():
    got = gw.get_object(Bucket=bucket, Key="dir/obj")["Body"].read()
    check(got == body, "second GET of %s byte-exact" % bucket)
check(metric("strata_cache_hits_total") > hits0, "second GETs are cache hits")
check(metric("strata_cache_read_bytes_total", 'source="backend"') == backend0, "second GETs read nothing upstream")
check(metric("strata_s3_requests_total", 'op="GetObject"') == gets0, "second GETs send no GetObject upstream")

# An object written upstream directly is visible through the gateway.
rgw.put_object(Bucket=b, Key="direct", Body=b"from rgw")
check(gw.get_object(Bucket=b, Key="direct")["Body"].read() == b"from rgw", "upstream object readable")
keys = [o["Key"] for o in gw.list_objects_v2(Bucket=b)["Contents"]]
check(keys == ["dir/obj", "direct"], "listing passes through: %s" % keys)

# A bucket the upstream does not have.
code, status = error_code(lambda: gw.head_bucket(Bucket="upfront-none"))
check(status == 404, "HeadBucket of a missing bucket: 404, got %s" % status)
code, status = error_code(lambda: gw.get_object(Bucket="upfront-none", Key="k"))
check(code == "NoSuchBucket", "GET in a missing bucket: NoSuchBucket, got %s" % code)

# DeleteBucket passes through: refused while not empty, then gone upstream.
code, status = error_code(lambda: gw.delete_bucket(Bucket=a))
check(code == "BucketNotEmpty" and status == 409, "deleting a non-empty bucket: BucketNotEmpty, got %s" % code)
gw.delete_object(Bucket=a, Key="dir/obj")
gw.delete_bucket(Bucket=a)
code, status = error_code(lambda: rgw.head_bucket(Bucket=a))
check(status == 404, "deleted through the gateway: gone from RGW (%s)" % status)
code, status = error_code(lambda: gw.head_bucket(Bucket=a))
check(status == 404, "and HeadBucket through the gateway says so (%s)" % status)
names = [x["Name"] for x in gw.list_buckets()["Buckets"]]
check(a not in names and b in names, "ListBuckets after the delete: %s" % names)
code, status = error_code(lambda: gw.get_object(Bucket=a, Key="dir/obj"))
check(code == "NoSuchBucket", "GET in the deleted bucket: NoSuchBucket, got %s" % code)

finish()
