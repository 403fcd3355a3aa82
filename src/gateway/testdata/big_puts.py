#!/usr/bin/env python3
"""N concurrent single PUTs of SIZE bytes each through boto3 (put_object, one
request per object), then every object read back and compared by SHA-256.
The bodies are generated piecewise from a seed, never held whole.

usage: big_puts.py GATEWAY_URL KEY SECRET BUCKET N SIZE
Prints "N object(s) ok" on success; exits non-zero otherwise.
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
