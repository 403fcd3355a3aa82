#!/usr/bin/env python3
"""N concurrent single PUTs of SIZE bytes each through boto3 (put_object, one
request per object), then every object read back and compared by SHA-256.
The bodies are generated piecewise from a seed, never held whole.

usage: big_puts.py GATEWAY_URL KEY SECRET BUCKET N SIZE [put|parts|nospace]
  put:     as above; prints "N object(s) ok".
  parts:   one multipart upload whose N parts of SIZE bytes are sent
           concurrently (upload_part), completed, read back whole; prints
           "N part(s) ok".
  nospace: one put_object of SIZE must fail with 503 SlowDown (the spill
           directory is too small), then a small one must succeed; prints
           "nospace ok: <message>".
Exits non-zero otherwise.
"""
import concurrent.futures
import hashlib
import io
import random
import sys

import boto3
from botocore.config import Config

url, key, secret, bucket = sys.argv[1:5]
n, size = int(sys.argv[5]), int(sys.argv[6])
mode = sys.argv[7] if len(sys.argv) > 7 else "put"
CHUNK = 1 << 20


def chunk(seed, i):
    return random.Random(seed * 1000003 + i).randbytes(CHUNK)


class Generated(io.RawIOBase):
    """A seekable read-only stream of `size` deterministic bytes."""

    def __init__(self, seed, size):
        self.seed, self.size, self.pos = seed, size, 0
        self.cached = (-1, b"")  # clients read in small blocks: one chunk is made once

    def chunk(self, i):
        if self.cached[0] != i:
            self.cached = (i, chunk(self.seed, i))
        return self.cached[1]

    def readable(self):
        return True

    def seekable(self):
        return True

    def tell(self):
        return self.pos

    def seek(self, off, whence=0):
        self.pos = {0: off, 1: self.pos + off, 2: self.size + off}[whence]
        return self.pos

    def readinto(self, b):
        want = min(len(b), self.size - self.pos)
        got = 0
        while got < want:
            i, off = divmod(self.pos, CHUNK)
            piece = self.chunk(i)[off:off + want - got]
            b[got:got + len(piece)] = piece
            got += len(piece)
            self.pos += len(piece)
        return got


def expected_sha(seed):
    h = hashlib.sha256()
    s = Generated(seed, size)
    while True:
        b = s.read(CHUNK)
        if not b:
            return h.hexdigest()
        h.update(b)


s3 = boto3.client("s3", endpoint_url=url, aws_access_key_id=key, aws_secret_access_key=secret,
                  region_name="us-east-1",
                  config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1},
                                max_pool_connections=n + 2, read_timeout=600))


def put(i):
    s3.put_object(Bucket=bucket, Key="big/%d" % i, Body=Generated(i + 1, size))


def check(i):
    body = s3.get_object(Bucket=bucket, Key="big/%d" % i)["Body"]
    h = hashlib.sha256()
    total = 0
    for piece in body.iter_chunks(CHUNK):
        h.update(piece)
        total += len(piece)
    return total == size and h.hexdigest() == expected_sha(i + 1), total


def run_parts():
    key_ = "big/parts"
    up = s3.create_multipart_upload(Bucket=bucket, Key=key_)["UploadId"]

    def part(i):
        r = s3.upload_part(Bucket=bucket, Key=key_, UploadId=up, PartNumber=i + 1, Body=Generated(i + 1, size))
        return {"PartNumber": i + 1, "ETag": r["ETag"]}

    with concurrent.futures.ThreadPoolExecutor(n) as pool:
        parts = list(pool.map(part, range(n)))  # raises on any failed part
    s3.complete_multipart_upload(Bucket=bucket, Key=key_, UploadId=up, MultipartUpload={"Parts": parts})
    want = hashlib.sha256()
    for i in range(n):
        s = Generated(i + 1, size)
        while True:
            b = s.read(CHUNK)
            if not b:
                break
            want.update(b)
    got, total = hashlib.sha256(), 0
    for piece in s3.get_object(Bucket=bucket, Key=key_)["Body"].iter_chunks(CHUNK):
        got.update(piece)
        total += len(piece)
    if total != n * size or got.hexdigest() != want.hexdigest():
        print("FAIL: %s read back %d bytes, hash mismatch or short" % (key_, total))
        sys.exit(1)
    print("%d part(s) ok" % n)


def run_nospace():
    from botocore.exceptions import ClientError
    try:
        s3.put_object(Bucket=bucket, Key="big/nospace", Body=Generated(1, size))
    except ClientError as e:
        err = e.response["Error"]
        status = e.response["ResponseMetadata"]["HTTPStatusCode"]
        if status != 503 or err.get("Code") != "SlowDown" or "spill" not in err.get("Message", ""):
            print("FAIL: wanted 503 SlowDown naming the spill directory, got %d %s" % (status, err))
            sys.exit(1)
        s3.put_object(Bucket=bucket, Key="big/small", Body=b"still serving")
        if s3.get_object(Bucket=bucket, Key="big/small")["Body"].read() != b"still serving":
            sys.exit(1)
        print("nospace ok: %s" % err["Message"])
        return
    print("FAIL: a PUT larger than the spill directory succeeded")
    sys.exit(1)


if mode == "parts":
    run_parts()
    sys.exit(0)
if mode == "nospace":
    run_nospace()
    sys.exit(0)
with concurrent.futures.ThreadPoolExecutor(n) as pool:
    list(pool.map(put, range(n)))  # raises on any failed PUT
bad = 0
with concurrent.futures.ThreadPoolExecutor(min(n, 4)) as pool:
    for i, (ok, total) in enumerate(pool.map(check, range(n))):
        if not ok:
            bad += 1
            print("FAIL: big/%d read back %d bytes, hash mismatch or short" % (i, total))
if bad:
    sys.exit(1)
print("%d object(s) ok" % n)
