"""What the boto3 scripts beside it share: a path-style client that does not retry (a retry
would hide the answer under test), a tally of checks, and a call's answer without raising.

    from boto3_checks import answer, check, client, finish
    s3 = client(url, key, secret)
    check(answer(s3.head_bucket, Bucket="b")[0] == 200, "the bucket is there")
    finish()   # prints "N check(s), M failure(s)"; exits 1 on any failure

The C++ tests that run these scripts look for " check(s), 0 failure(s)" in the output.
"""
import sys

import boto3
from botocore.config import Config
from botocore.exceptions import ClientError

CONFIG = Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1})
_tally = {"checks": 0, "failures": 0}


def client(url, key, secret, region="us-east-1", **config):
    """An S3 client of `url` signing with key/secret; `config` is more botocore Config fields."""
    return boto3.client("s3", endpoint_url=url, aws_access_key_id=key, aws_secret_access_key=secret,
                        region_name=region, config=CONFIG.merge(Config(**config)) if config else CONFIG)


def check(cond, what):
    """Counts a check and prints it, passed ("ok") or not ("FAIL")."""
    _tally["checks"] += 1
    if not cond:
        _tally["failures"] += 1
    print(("ok   " if cond else "FAIL ") + what, flush=True)


def answer(fn, **kw):
    """(HTTP status, error code, response) of a call; the code is "" on success."""
    try:
        r = fn(**kw)
        return r["ResponseMetadata"]["HTTPStatusCode"], "", r
    except ClientError as e:
        return e.response["ResponseMetadata"]["HTTPStatusCode"], e.response["Error"].get("Code", ""), e.response


def finish():
    print("%d check(s), %d failure(s)" % (_tally["checks"], _tally["failures"]))
    sys.exit(1 if _tally["failures"] else 0)
