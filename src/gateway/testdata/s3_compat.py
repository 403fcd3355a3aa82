#!/usr/bin/env python3
"""S3 answers that SDKs and conformance suites rely on, through `strata serve`,
driven by boto3 (each answer checked against what S3's API reference says):

  complete   a CompleteMultipartUpload sent again after it succeeded answers
             200 with the same ETag (SDKs retry Complete after a timeout); the
             same upload completed with another part list is NoSuchUpload; a
             part list in descending order is InvalidPartOrder.
  resend     part 1 sent twice at once: the upload that finishes last is the
             part (the other's ETag alone is InvalidPart; both listed, the
             last-finished last, complete it).
  create     CreateBucket of a bucket the requester owns: 200 in us-east-1
             (and the ACL reset to the request's), BucketAlreadyOwnedByYou
             elsewhere; another key's: BucketAlreadyExists.
  token      ListObjectsV2 with an empty continuation token: the first page,
             the empty token echoed.
  utf8       a key that is not UTF-8 (GET, HEAD, PUT, DELETE, multipart, copy
             source): 400 InvalidURI; a valid key with C1 controls is a key.

usage: s3_compat.py GATEWAY_URL PHASE REGION ALICE_KEY ALICE_SECRET [BOB_KEY BOB_SECRET]
PHASE is "run" (every item; writes the completed upload to STATE_FILE when
$STATE_FILE is set) or "retry" (the upload in $STATE_FILE completes again:
after a restart of the gateway). Each item prints "observed ITEM: ..." lines
(the status and code seen) and every check; the last line is
"N check(s), M failure(s)"; exits non-zero on any failure.
"""
import http.client
import json
import os
import sys
import urllib.parse
import uuid

from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

from boto3_checks import answer, check, client, finish

url, phase, region, alice_key, alice_secret = sys.argv[1:6]
bob_args = sys.argv[6:8]
MiB = 1 << 20

alice = client(url, alice_key, alice_secret, region)
bob = client(url, *bob_args, region) if bob_args else None


def observe(item, what):
    print("observed %s: %s" % (item, what), flush=True)


def unique(prefix):
    return prefix + "-" + uuid.uuid4().hex[:10]


def body(bucket, key):
    return alice.get_object(Bucket=bucket, Key=key)["Body"].read()


bucket = os.environ.get("COMPAT_BUCKET") or unique("compat")
if phase == "run" and not os.environ.get("COMPAT_BUCKET"):
    alice.create_bucket(Bucket=bucket)


def complete_twice():
    key = "twice/object"
    up = alice.create_multipart_upload(Bucket=bucket, Key=key)["UploadId"]
    data = [b"a" * (5 * MiB), b"tail bytes"]
    parts = [{"PartNumber": n, "ETag": alice.upload_part(Bucket=bucket, Key=key, UploadId=up, PartNumber=n,
                                                         Body=d)["ETag"]} for n, d in enumerate(data, 1)]
    first = alice.complete_multipart_upload(Bucket=bucket, Key=key, UploadId=up, MultipartUpload={"Parts": parts})
    status, code, again = answer(alice.complete_multipart_upload, Bucket=bucket, Key=key, UploadId=up,
                                 MultipartUpload={"Parts": parts})
    observe("complete", "second Complete: %d %s" % (status, code or again.get("ETag")))
    check(status == 200 and again.get("ETag") == first["ETag"],
          "second Complete answers 200 with the first's ETag %s: %d %s" % (first["ETag"], status, code))
    check(again.get("Key") == key and again.get("Bucket") == bucket, "second Complete names the object")
    check(alice.head_object(Bucket=bucket, Key=key)["ETag"] == first["ETag"], "the object is the completed one")
    check(body(bucket, key) == b"".join(data), "the object's bytes")
    status, code, _ = answer(alice.complete_multipart_upload, Bucket=bucket, Key=key, UploadId=up,
                             MultipartUpload={"Parts": parts[:1]})
    observe("complete", "Complete again with another part list: %d %s" % (status, code))
    check((status, code) == (404, "NoSuchUpload"), "another part list: %d %s" % (status, code))
    if os.environ.get("STATE_FILE"):
        with open(os.environ["STATE_FILE"], "w") as f:
            json.dump({"bucket": bucket, "key": key, "upload": up, "parts": parts, "etag": first["ETag"]}, f)
    # A part list in descending order: S3's InvalidPartOrder.
    up2 = alice.create_multipart_upload(Bucket=bucket, Key=key + "2")["UploadId"]
    listed = [{"PartNumber": n, "ETag": alice.upload_part(Bucket=bucket, Key=key + "2", UploadId=up2, PartNumber=n,
                                                          Body=b"part")["ETag"]} for n in (2, 1)]
    status, code, _ = answer(alice.complete_multipart_upload, Bucket=bucket, Key=key + "2", UploadId=up2,
                             MultipartUpload={"Parts": listed})
    observe("complete", "parts listed 2, 1: %d %s" % (status, code))
    check((status, code) == (400, "InvalidPartOrder"), "parts listed 2, 1: %d %s" % (status, code))
    alice.abort_multipart_upload(Bucket=bucket, Key=key + "2", UploadId=up2)


def retry_after_restart():
    with open(os.environ["STATE_FILE"]) as f:
        s = json.load(f)
    status, code, again = answer(alice.complete_multipart_upload, Bucket=s["bucket"], Key=s["key"],
                                 UploadId=s["upload"], MultipartUpload={"Parts": s["parts"]})
    observe("complete", "Complete after a restart: %d %s" % (status, code or again.get("ETag")))
    check(status == 200 and again.get("ETag") == s["etag"], "Complete after a restart: %d %s" % (status, code))


def signed_part_put(key, upload_id, part, data):
    """A signed UploadPart whose body is sent by the caller (in pieces): the connection and the rest."""
    u = urllib.parse.urlsplit(url)
    path = "/%s/%s?partNumber=%d&uploadId=%s" % (bucket, urllib.parse.quote(key), part,
                                                 urllib.parse.quote(upload_id, safe=""))
    req = AWSRequest(method="PUT", url=url + path, data=data, headers={"Content-Length": str(len(data))})
    req.headers["x-amz-content-sha256"] = __import__("hashlib").sha256(data).hexdigest()
    SigV4Auth(Credentials(alice_key, alice_secret), "s3", region).add_auth(req)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=60)
    conn.putrequest("PUT", path, skip_host=True, skip_accept_encoding=True)
    conn.putheader("Host", u.netloc)
    for k, v in req.headers.items():
        conn.putheader(k, v)
    conn.endheaders()
    return conn


def resend_first_finishes_last():
    for size, label in ((8, "8 B"), (6 * MiB, "6 MiB")):
        key = "resend/" + label.replace(" ", "")
        up = alice.create_multipart_upload(Bucket=bucket, Key=key)["UploadId"]
        a, b = b"A" * size, b"B" * size
        conn = signed_part_put(key, up, 1, a)
        conn.send(a[: size // 2])  # A is under way ...
        eb = alice.upload_part(Bucket=bucket, Key=key, UploadId=up, PartNumber=1, Body=b)["ETag"]  # ... B done
        conn.send(a[size // 2:])  # ... then A finishes, last
        resp = conn.getresponse()
        ea = resp.getheader("ETag")
        resp.read()
        conn.close()
        check(resp.status == 200 and ea and ea != eb, "%s: both uploads of part 1 answered 200" % label)
        listed = alice.list_parts(Bucket=bucket, Key=key, UploadId=up)["Parts"]
        check([(p["PartNumber"], p["ETag"]) for p in listed] == [(1, ea)],
              "%s: ListParts shows the last-finished upload: %s" % (label, listed))
        status, code, _ = answer(alice.complete_multipart_upload, Bucket=bucket, Key=key, UploadId=up,
                                 MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": eb}]})
        observe("resend", "%s: Complete with the first-finished ETag: %d %s" % (label, status, code))
        check((status, code) == (400, "InvalidPart"), "%s: the overwritten part's ETag: %d %s" % (label, status, code))
        # Both answers listed, the last-finished one last (as a conformance suite's client lists them).
        status, code, _ = answer(alice.complete_multipart_upload, Bucket=bucket, Key=key, UploadId=up,
                                 MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": eb}, {"PartNumber": 1, "ETag": ea}]})
        got = body(bucket, key) if status == 200 else b""
        observe("resend", "%s: Complete listing part 1 with both ETags, the last-finished last: %d %s, object %s" %
                (label, status, code, "A" if got == a else "B" if got == b else "other"))
        check(status == 200 and got == a, "%s: the object is the last-finished part" % label)


def create_existing():
    name = unique("mine")
    alice.create_bucket(Bucket=name)
    alice.put_object(Bucket=name, Key="kept", Body=b"kept")
    status, code, _ = answer(alice.create_bucket, Bucket=name)
    observe("create", "owner re-creates (%s): %d %s" % (region, status, code))
    if region == "us-east-1":
        check((status, code) == (200, ""), "us-east-1: the owner re-creating answers 200: %d %s" % (status, code))
        status, code, _ = answer(alice.create_bucket, Bucket=name, ACL="public-read")
        grants = {g["Grantee"].get("URI", "") for g in alice.get_bucket_acl(Bucket=name)["Grants"]}
        check(status == 200 and any(u.endswith("AllUsers") for u in grants), "re-created public-read: ACL reset")
        status, code, _ = answer(alice.create_bucket, Bucket=name)
        grants = {g["Grantee"].get("URI", "") for g in alice.get_bucket_acl(Bucket=name)["Grants"]}
        check(status == 200 and not any(u.endswith("AllUsers") for u in grants), "re-created: ACL back to private")
    else:
        check((status, code) == (409, "BucketAlreadyOwnedByYou"), "%s: %d %s" % (region, status, code))
    check(body(name, "kept") == b"kept", "the bucket's objects stay")
    if bob:
        status, code, _ = answer(bob.create_bucket, Bucket=name)
        observe("create", "another key creates it: %d %s" % (status, code))
        check((status, code) == (409, "BucketAlreadyExists"), "another key: %d %s" % (status, code))
    alice.delete_object(Bucket=name, Key="kept")
    alice.delete_bucket(Bucket=name)


def empty_token():
    for k in ("t/a", "t/b", "t/c"):
        alice.put_object(Bucket=bucket, Key=k, Body=b"x")
    status, code, r = answer(alice.list_objects_v2, Bucket=bucket, Prefix="t/", ContinuationToken="")
    observe("token", "ListObjectsV2 continuation-token='': %d %s" % (status, code))
    check(status == 200 and [o["Key"] for o in r.get("Contents", [])] == ["t/a", "t/b", "t/c"],
          "an empty token lists from the start: %d %s" % (status, code))
    check(r.get("ContinuationToken") == "" and r.get("IsTruncated") is False, "the empty token is echoed")
    page = alice.list_objects_v2(Bucket=bucket, Prefix="t/", MaxKeys=2)
    rest = alice.list_objects_v2(Bucket=bucket, Prefix="t/", ContinuationToken=page["NextContinuationToken"])
    check([o["Key"] for o in rest["Contents"]] == ["t/c"], "a real token still pages")
    status, code, _ = answer(alice.list_objects_v2, Bucket=bucket, ContinuationToken="not-a-token")
    check((status, code) == (400, "InvalidArgument"), "a bad token: %d %s" % (status, code))


def not_utf8():
    raw = client(url, alice_key, alice_secret, region, parameter_validation=False)
    bad = b"\xae\x8a-"
    calls = {
        "GetObject": lambda: raw.get_object(Bucket=bucket, Key=bad),
        "PutObject": lambda: raw.put_object(Bucket=bucket, Key=bad, Body=b"x"),
        "DeleteObject": lambda: raw.delete_object(Bucket=bucket, Key=bad),
        "CreateMultipartUpload": lambda: raw.create_multipart_upload(Bucket=bucket, Key=bad),
        "CopyObject to it": lambda: raw.copy_object(Bucket=bucket, Key=bad, CopySource=bucket + "/t/a"),
    }
    for op, fn in calls.items():
        status, code, r = answer(fn)
        observe("utf8", "%s of b'\\xae\\x8a-': %d %s" % (op, status, code))
        check((status, code) == (400, "InvalidURI"), "%s: %d %s" % (op, status, code))
    status, code, r = answer(raw.head_object, Bucket=bucket, Key=bad)
    observe("utf8", "HeadObject of b'\\xae\\x8a-': %d" % status)
    check(status == 400, "HeadObject (no body, so no code): %d" % status)
    # botocore escapes every '%' of CopySource: the header is set as sent, bucket/%AE%8A-.
    def raw_source(request, **_):
        request.headers.replace_header("x-amz-copy-source", bucket + "/%AE%8A-")
    raw.meta.events.register_first("before-sign.s3.CopyObject", raw_source)
    status, code, r = answer(raw.copy_object, Bucket=bucket, Key="copy", CopySource=bucket + "/placeholder")
    raw.meta.events.unregister("before-sign.s3.CopyObject", raw_source)
    observe("utf8", "CopyObject from it: %d %s" % (status, code))
    check((status, code) == (400, "InvalidArgument"), "copy source not UTF-8: %d %s" % (status, code))
    # U+00AE U+008A '-' (what the same Python literal is as text) is valid UTF-8: an ordinary key.
    text = "\xae\x8a-"
    status, code, _ = answer(alice.get_object, Bucket=bucket, Key=text)
    check((status, code) == (404, "NoSuchKey"), "a valid key with a C1 control, absent: %d %s" % (status, code))
    alice.put_object(Bucket=bucket, Key=text, Body=b"c1")
    check(body(bucket, text) == b"c1", "a valid key with a C1 control reads back")
    alice.delete_object(Bucket=bucket, Key=text)


def copy_source_versions():
    alice.put_object(Bucket=bucket, Key="src", Body=b"source")
    for suffix, want in (("", (200, "")), ("?versionId=null", (200, "")),
                         ("?versionId=3HL4kqtJlcpXroDTDmJ.rmSpXd3dIbrH", (400, "InvalidArgument"))):
        for op in ("CopyObject", "UploadPartCopy"):
            if op == "CopyObject":
                status, code, _ = answer(alice.copy_object, Bucket=bucket, Key="dst", CopySource=bucket + "/src" + suffix)
            else:
                up = alice.create_multipart_upload(Bucket=bucket, Key="dst")["UploadId"]
                status, code, _ = answer(alice.upload_part_copy, Bucket=bucket, Key="dst", UploadId=up, PartNumber=1,
                                         CopySource=bucket + "/src" + suffix)
                alice.abort_multipart_upload(Bucket=bucket, Key="dst", UploadId=up)
            observe("copysource", "%s from src%s: %d %s" % (op, suffix, status, code))
            check((status, code) == want, "%s from src%s: %d %s" % (op, suffix, status, code))


if phase == "run":
    items = os.environ.get("COMPAT_ITEMS", "complete,resend,create,token,utf8,copysource").split(",")
    for name, fn in (("complete", complete_twice), ("resend", resend_first_finishes_last),
                     ("create", create_existing), ("token", empty_token), ("utf8", not_utf8),
                     ("copysource", copy_source_versions)):
        if name in items:
            try:
                fn()
            except Exception as e:  # an item that raised is a failure, the others still run
                check(False, "%s raised %r" % (name, e))
elif phase == "retry":
    retry_after_restart()
else:
    sys.exit("unknown phase " + phase)

finish()
