"""boto3 against `strata serve` whose backend (RGW behind an nginx proxy) stops answering.

Freezes the proxy (SIGSTOP: connections are accepted, nothing is answered) and checks that a
cached object is still served byte-exact, that an uncached GET fails with a 503 and the S3 error
XML (SlowDown or ServiceUnavailable) within the gateway's --backend-timeout (plus a margin), and,
once the proxy runs again (SIGCONT), that the uncached object is served byte-exact.
Prints one "hung backend: ..." line with the figures.

argv: gateway_url key secret rgw_url rgw_key rgw_secret bucket proxy_pids(comma-separated)
      backend_timeout_s metadata_ttl_s
"""
import os
import signal
import sys
import time

import boto3
import botocore
from botocore.config import Config

(gw_url, key, secret, rgw_url, rgw_key, rgw_secret, bucket, pids, bound, ttl) = sys.argv[1:11]
pids = [int(p) for p in pids.split(",")]
bound, ttl = float(bound), float(ttl)
# No retries (botocore's max_attempts counts retries): the test times one request. A read timeout far
# beyond the bound: the gateway must answer.
cfg = Config(s3={"addressing_style": "path"}, retries={"max_attempts": 0, "mode": "standard"}, read_timeout=300,
             connect_timeout=10)
gw = boto3.client("s3", endpoint_url=gw_url, aws_access_key_id=key, aws_secret_access_key=secret,
                  region_name="us-east-1", config=cfg)
rgw = boto3.client("s3", endpoint_url=rgw_url, aws_access_key_id=rgw_key, aws_secret_access_key=rgw_secret,
                   region_name=os.environ.get("AWS_REGION", "us-east-1"), config=cfg)

warm, cold = os.urandom((5 << 20) + 123), os.urandom((3 << 20) + 7)
rgw.put_object(Bucket=bucket, Key="hung/warm", Body=warm)
rgw.put_object(Bucket=bucket, Key="hung/cold", Body=cold)  # written past the gateway: never cached
assert gw.get_object(Bucket=bucket, Key="hung/warm")["Body"].read() == warm
# Let the cached metadata expire, so the next read must revalidate (against a backend that hangs).
time.sleep(ttl + 0.5)


def signal_proxy(sig):
    # Each recorded pid is an nginx master leading its own process group (its workers are in it).
    for p in pids:
        os.killpg(p, sig)


signal_proxy(signal.SIGSTOP)
try:
    t0 = time.monotonic()
    body = gw.get_object(Bucket=bucket, Key="hung/warm")["Body"].read()
    cached_s = time.monotonic() - t0
    assert body == warm, "the cached object, byte-exact, while the backend hangs"

    t0 = time.monotonic()
    try:
        gw.get_object(Bucket=bucket, Key="hung/cold")["Body"].read()
        raise SystemExit("an uncached GET succeeded while the backend hangs")
    except botocore.exceptions.ClientError as e:
        first_error_s = time.monotonic() - t0
        status = e.response["ResponseMetadata"]["HTTPStatusCode"]
        code = e.response["Error"]["Code"]
        assert status == 503, e.response
        assert code in ("SlowDown", "ServiceUnavailable"), f"S3 error XML expected, got code {code!r}"
    # The bound plus a loaded machine's margin (the backend client's own timeouts are 30 s x 6 tries).
    assert first_error_s < bound + 10, f"503 after {first_error_s:.1f} s, bound {bound} s"
    t0 = time.monotonic()
    try:
        gw.head_object(Bucket=bucket, Key="hung/cold")
        raise SystemExit("an uncached HEAD succeeded while the backend hangs")
    except botocore.exceptions.ClientError as e:
        head_error_s = time.monotonic() - t0
        assert e.response["ResponseMetadata"]["HTTPStatusCode"] == 503, e.response
    assert head_error_s < bound + 10, f"HEAD 503 after {head_error_s:.1f} s, bound {bound} s"
    # The cached object again, after the failed one.
    assert gw.get_object(Bucket=bucket, Key="hung/warm")["Body"].read() == warm
finally:
    signal_proxy(signal.SIGCONT)

t0 = time.monotonic()
attempts = 0
while True:
    attempts += 1
    try:
        body = gw.get_object(Bucket=bucket, Key="hung/cold")["Body"].read()
        break
    except botocore.exceptions.ClientError as e:
        if e.response["ResponseMetadata"]["HTTPStatusCode"] != 503 or time.monotonic() - t0 > 120:
            raise
recovery_s = time.monotonic() - t0
assert body == cold, "the uncached object, byte-exact, once the backend answers"
print(f"hung backend: cached object served in {cached_s:.2f} s, uncached GET 503 {code} after {first_error_s:.2f} s "
      f"(HEAD 503 after {head_error_s:.2f} s; --backend-timeout {bound:g} s), recovered in {recovery_s:.2f} s ({attempts} GET(s) after SIGCONT)")
