"""boto3 against `strata serve` whose backend (RGW behind an nginx proxy) stops answering.

Freezes the proxy (SIGSTOP: connections are accepted, nothing is answered) and checks that a
cached object is still served byte-exact, that an uncached GET fails with a 503 and the S3 error
XML (SlowDown or ServiceUnavailable) within the gateway's --backend-timeout (plus a margin), and,
once the proxy runs again (SIGCONT), that the uncached object is served byte-exact. Then halts
the proxy (`cloud-proxy.sh stop DIR`: connections refused), checks the same for another uncached
object, restarts it on its port (`cloud-proxy.sh start DIR`, which returns once nginx accepts) and
times the recovery. Prints "hung backend: ..." and "refused backend: ..." lines with the figures.

argv: gateway_url key secret rgw_url rgw_key rgw_secret bucket proxy_pids(comma-separated)
      backend_timeout_s metadata_ttl_s proxy_script proxy_dir
"""
import os
import signal
import subprocess
import sys
import time

import boto3
import botocore
from botocore.config import Config

(gw_url, key, secret, rgw_url, rgw_key, rgw_secret, bucket, pids, bound, ttl, proxy_script, proxy_dir) = sys.argv[1:13]
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

warm, cold, cold2 = os.urandom((5 << 20) + 123), os.urandom((3 << 20) + 7), os.urandom((1 << 20) + 1)
rgw.put_object(Bucket=bucket, Key="hung/warm", Body=warm)
rgw.put_object(Bucket=bucket, Key="hung/cold", Body=cold)  # written past the gateway: never cached
rgw.put_object(Bucket=bucket, Key="hung/cold2", Body=cold2)
assert gw.get_object(Bucket=bucket, Key="hung/warm")["Body"].read() == warm
# Let the cached metadata expire, so the next read must revalidate (against a backend that hangs).
time.sleep(ttl + 0.5)


def signal_proxy(sig):
    # Each recorded pid is an nginx master leading its own process group (its workers are in it).
    for p in pids:
        os.killpg(p, sig)


def expect_503(what, call):
    """Runs `call`, which must fail with a 503; returns (seconds to the error, S3 error code)."""
    t0 = time.monotonic()
    try:
        call()
    except botocore.exceptions.ClientError as e:
        seconds = time.monotonic() - t0
        assert e.response["ResponseMetadata"]["HTTPStatusCode"] == 503, e.response
        return seconds, e.response["Error"]["Code"]
    raise SystemExit(f"{what} succeeded while the backend is down")


def expect_get_503(key):
    """An uncached GET: a 503 with the S3 error XML; returns (seconds, code)."""
    seconds, code = expect_503(f"an uncached GET of {key}", lambda: gw.get_object(Bucket=bucket, Key=key)["Body"].read())
    assert code in ("SlowDown", "ServiceUnavailable"), f"S3 error XML expected, got code {code!r}"
    return seconds, code


signal_proxy(signal.SIGSTOP)
try:
    t0 = time.monotonic()
    body = gw.get_object(Bucket=bucket, Key="hung/warm")["Body"].read()
    cached_s = time.monotonic() - t0
    assert body == warm, "the cached object, byte-exact, while the backend hangs"

    first_error_s, code = expect_get_503("hung/cold")
    # The bound plus a loaded machine's margin (the backend client's own timeouts are 30 s x 6 tries).
    assert first_error_s < bound + 10, f"503 after {first_error_s:.1f} s, bound {bound} s"
    head_error_s, _ = expect_503("an uncached HEAD", lambda: gw.head_object(Bucket=bucket, Key="hung/cold"))
    assert head_error_s < bound + 10, f"HEAD 503 after {head_error_s:.1f} s, bound {bound} s"
    # The cached object again, after the failed one.
    assert gw.get_object(Bucket=bucket, Key="hung/warm")["Body"].read() == warm
finally:
    signal_proxy(signal.SIGCONT)



def get_until_exact(key, want):
    """GETs `key` until it succeeds (each failure a 503); returns (seconds, GETs)."""
    t0 = time.monotonic()
    attempts = 0
    while True:
        attempts += 1
        try:
            body = gw.get_object(Bucket=bucket, Key=key)["Body"].read()
            break
        except botocore.exceptions.ClientError as e:
            if e.response["ResponseMetadata"]["HTTPStatusCode"] != 503 or time.monotonic() - t0 > 120:
                raise
        time.sleep(0.05)  # polling the recovering gateway
    assert body == want, f"{key}, byte-exact, once the backend answers"
    return time.monotonic() - t0, attempts


recovery_s, attempts = get_until_exact("hung/cold", cold)
print(f"hung backend: cached object served in {cached_s:.2f} s, uncached GET 503 {code} after {first_error_s:.2f} s "
      f"(HEAD 503 after {head_error_s:.2f} s; --backend-timeout {bound:g} s), recovered in {recovery_s:.2f} s ({attempts} GET(s) after SIGCONT)")


def proxy(cmd):
    r = subprocess.run(["bash", proxy_script, cmd, proxy_dir], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, f"cloud-proxy.sh {cmd}: {r.stdout}{r.stderr}"


# Refused: nginx gone, its port closed. The warm object's metadata expires again meanwhile.
proxy("stop")
time.sleep(ttl + 0.5)
t0 = time.monotonic()
assert gw.get_object(Bucket=bucket, Key="hung/warm")["Body"].read() == warm, "cached, byte-exact, while refused"
cached2_s = time.monotonic() - t0
refused_error_s, code2 = expect_get_503("hung/cold2")
assert refused_error_s < bound + 10, f"503 after {refused_error_s:.1f} s, bound {bound} s"

proxy("start")  # same port and options; returns once nginx accepts connections
recovery2_s, attempts2 = get_until_exact("hung/cold2", cold2)
# No failed-read backoff in the gateway: the first GET after the restart should succeed. The
# margin is for a loaded machine.
assert recovery2_s < 5, f"recovered {recovery2_s:.2f} s after the proxy accepted again"
print(f"refused backend: cached object served in {cached2_s:.2f} s, uncached GET 503 {code2} after "
      f"{refused_error_s:.2f} s, recovered in {recovery2_s:.2f} s ({attempts2} GET(s) after the proxy accepted again "
      f"on its port)")
