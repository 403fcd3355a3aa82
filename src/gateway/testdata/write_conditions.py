"""Conditional writes racing on the spilled PUT path, UploadPartCopy part
checksums and GetObjectAttributes through `strata serve`, driven by boto3.
Usage: write_conditions.py ENDPOINT KEY SECRET BUCKET. Debian's boto3 has no
IfMatch/IfNoneMatch parameters on writes: they are added as headers before
signing. Expected values are computed here (zlib, hashlib). Exits non-zero
on any failure; prints "N check(s), M failure(s)" last."""
import base64
import hashlib
import os
import sys
import threading
import zlib

from botocore.exceptions import ClientError

from boto3_checks import check, client, finish

ENDPOINT, KEY, SECRET, BUCKET = sys.argv[1:5]
MiB = 1 << 20
s3 = client(ENDPOINT, KEY, SECRET)


def b64(b):
    return base64.b64encode(b).decode()


def crc32(data):
    return zlib.crc32(data).to_bytes(4, "big")


def call(c, op, headers, **kw):
    """c.<op>(**kw) with extra request headers; returns (status, code, response)."""
    event = "before-sign.s3." + "".join(w.capitalize() for w in op.split("_"))

    def add(request, **_):
        for k, v in headers.items():
            request.headers[k] = v

    c.meta.events.register(event, add)
    try:
        return 200, "", getattr(c, op)(**kw)
    except ClientError as e:
        return e.response["ResponseMetadata"]["HTTPStatusCode"], e.response["Error"]["Code"], e.response
    finally:
        c.meta.events.unregister(event, add)


def race(key, headers, bodies):
    """Each body PUT by its own client at once with `headers`; [(status, code)]."""
    clients = [client(ENDPOINT, KEY, SECRET) for _ in bodies]
    barrier = threading.Barrier(len(bodies))
    results = [None] * len(bodies)

    def run(i):
        barrier.wait()
        st, code, _ = call(clients[i], "put_object", headers, Bucket=BUCKET, Key=key, Body=bodies[i])
        results[i] = (st, code)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(bodies))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results


def read(key):
    return s3.get_object(Bucket=BUCKET, Key=key)["Body"].read()


# ---- 1. Conditional writes, spilled bodies (20 MiB > the 16 MiB spill threshold), racing.
seen = set()
for round_ in range(3):
    key = "race/none-match-%d" % round_
    bodies = [os.urandom(20 * MiB), os.urandom(20 * MiB)]
    results = race(key, {"If-None-Match": "*"}, bodies)
    winners = [i for i, r in enumerate(results) if r[0] == 200]
    losers = [r for r in results if r[0] != 200]
    seen.update(r[0] for r in losers)
    check(len(winners) == 1, "If-None-Match race %d: exactly one writer wins %s" % (round_, results))
    check(all(r in ((412, "PreconditionFailed"), (409, "ConditionalRequestConflict")) for r in losers),
          "If-None-Match race %d: the other gets 412 or 409 %s" % (round_, results))
    if len(winners) == 1:
        check(read(key) == bodies[winners[0]], "If-None-Match race %d: the stored bytes are the winner's" % round_)

key = "race/if-match"
first = os.urandom(20 * MiB)
s3.put_object(Bucket=BUCKET, Key=key, Body=first)
etag = s3.head_object(Bucket=BUCKET, Key=key)["ETag"]
bodies = [os.urandom(20 * MiB), os.urandom(20 * MiB)]
results = race(key, {"If-Match": etag}, bodies)
winners = [i for i, r in enumerate(results) if r[0] == 200]
check(len(winners) == 1, "If-Match race: exactly one writer wins %s" % results)
check(all(r in ((412, "PreconditionFailed"), (409, "ConditionalRequestConflict")) for r in results if r[0] != 200),
      "If-Match race: the other gets 412 or 409 %s" % results)
if len(winners) == 1:
    check(read(key) == bodies[winners[0]], "If-Match race: the stored bytes are the winner's")
print("losers' statuses seen:", sorted(seen), flush=True)

# Sequential answers on the spilled path: 412 for an existing key, 404 for If-Match on a missing one.
st, code, _ = call(s3, "put_object", {"If-None-Match": "*"}, Bucket=BUCKET, Key=key, Body=os.urandom(17 * MiB))
check((st, code) == (412, "PreconditionFailed"), "spilled If-None-Match on an existing key: 412 (%s %s)" % (st, code))
st, code, _ = call(s3, "put_object", {"If-Match": '"0123"'}, Bucket=BUCKET, Key="race/missing",
                   Body=os.urandom(17 * MiB))
check((st, code) == (404, "NoSuchKey"), "spilled If-Match on a missing key: 404 NoSuchKey (%s %s)" % (st, code))
check(s3.list_objects_v2(Bucket=BUCKET, Prefix="race/missing").get("KeyCount") == 0, "  and nothing was stored")

# CompleteMultipartUpload with conditions: the first completion wins, the second gets 412.
key = "race/complete"
ups = [s3.create_multipart_upload(Bucket=BUCKET, Key=key)["UploadId"] for _ in range(2)]
parts = []
for i, up in enumerate(ups):
    e = s3.upload_part(Bucket=BUCKET, Key=key, UploadId=up, PartNumber=1, Body=b"complete %d" % i)["ETag"]
    parts.append([{"PartNumber": 1, "ETag": e}])
st, code, _ = call(s3, "complete_multipart_upload", {"If-None-Match": "*"}, Bucket=BUCKET, Key=key, UploadId=ups[0],
                   MultipartUpload={"Parts": parts[0]})
check(st == 200, "Complete with If-None-Match on a new key succeeds (%s %s)" % (st, code))
st, code, _ = call(s3, "complete_multipart_upload", {"If-None-Match": "*"}, Bucket=BUCKET, Key=key, UploadId=ups[1],
                   MultipartUpload={"Parts": parts[1]})
check((st, code) == (412, "PreconditionFailed"), "second Complete with If-None-Match: 412 (%s %s)" % (st, code))
check(read(key) == b"complete 0", "  the first completion's bytes stay")
s3.abort_multipart_upload(Bucket=BUCKET, Key=key, UploadId=ups[1])

# ---- 2. UploadPartCopy in an upload created with a checksum algorithm.
src = os.urandom(6 * MiB)
s3.put_object(Bucket=BUCKET, Key="copy/src", Body=src)
key = "copy/dst"
up = s3.create_multipart_upload(Bucket=BUCKET, Key=key, ChecksumAlgorithm="CRC32")["UploadId"]
copied = s3.upload_part_copy(Bucket=BUCKET, Key=key, UploadId=up, PartNumber=1,
                             CopySource={"Bucket": BUCKET, "Key": "copy/src"})["CopyPartResult"]
check(copied.get("ChecksumCRC32") == b64(crc32(src)),
      "UploadPartCopy returns the part's CRC32 (%s)" % copied.get("ChecksumCRC32"))
tail = os.urandom(1000)
p2 = s3.upload_part(Bucket=BUCKET, Key=key, UploadId=up, PartNumber=2, Body=tail, ChecksumAlgorithm="CRC32")
check(p2.get("ChecksumCRC32") == b64(crc32(tail)), "UploadPart returns its CRC32")
listed = s3.list_parts(Bucket=BUCKET, Key=key, UploadId=up)["Parts"]
check([p.get("ChecksumCRC32") for p in listed] == [b64(crc32(src)), b64(crc32(tail))],
      "ListParts names both parts' CRC32, the copied one too")
composite = b64(crc32(crc32(src) + crc32(tail))) + "-2"
done = s3.complete_multipart_upload(
    Bucket=BUCKET, Key=key, UploadId=up,
    MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": copied["ETag"], "ChecksumCRC32": copied["ChecksumCRC32"]},
                               {"PartNumber": 2, "ETag": p2["ETag"], "ChecksumCRC32": p2["ChecksumCRC32"]}]})
check(done.get("ChecksumCRC32") == composite, "Complete after a part copy combines the checksums (%s, want %s)" %
      (done.get("ChecksumCRC32"), composite))
head = s3.head_object(Bucket=BUCKET, Key=key, ChecksumMode="ENABLED")
check(head.get("ChecksumCRC32") == composite, "HEAD with checksum mode returns it")
check(read(key) == src + tail, "the object is the copied part and the uploaded one")

# A part copy with a wrong part checksum at Complete: InvalidPart.
up = s3.create_multipart_upload(Bucket=BUCKET, Key="copy/bad", ChecksumAlgorithm="CRC32")["UploadId"]
copied = s3.upload_part_copy(Bucket=BUCKET, Key="copy/bad", UploadId=up, PartNumber=1,
                             CopySource={"Bucket": BUCKET, "Key": "copy/src"})["CopyPartResult"]
st, code, _ = call(s3, "complete_multipart_upload", {}, Bucket=BUCKET, Key="copy/bad", UploadId=up,
                   MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": copied["ETag"],
                                               "ChecksumCRC32": b64(crc32(b"other"))}]})
check((st, code) == (400, "InvalidPart"), "Complete naming another CRC32 for the copied part: InvalidPart (%s)" % code)
s3.abort_multipart_upload(Bucket=BUCKET, Key="copy/bad", UploadId=up)

# ---- 3. GetObjectAttributes.
ALL = ["ETag", "Checksum", "ObjectParts", "StorageClass", "ObjectSize"]
body = b"attributes " * 100
put = s3.put_object(Bucket=BUCKET, Key="attr/single", Body=body, ChecksumAlgorithm="SHA256")
a = s3.get_object_attributes(Bucket=BUCKET, Key="attr/single", ObjectAttributes=ALL)
check(a.get("ETag") == hashlib.md5(body).hexdigest(), "attributes: ETag, unquoted (%s)" % a.get("ETag"))
check(a.get("ObjectSize") == len(body), "attributes: ObjectSize")
check(a.get("StorageClass") == "STANDARD", "attributes: StorageClass")
check(a.get("Checksum", {}).get("ChecksumSHA256") == b64(hashlib.sha256(body).digest()), "attributes: Checksum")
check("ObjectParts" not in a, "attributes: a single-part object has no ObjectParts")
check(a.get("LastModified") is not None, "attributes: Last-Modified")
a = s3.get_object_attributes(Bucket=BUCKET, Key="attr/single", ObjectAttributes=["ObjectSize"])
check(a.get("ObjectSize") == len(body) and "ETag" not in a and "Checksum" not in a,
      "attributes: only what was asked for")
a = s3.get_object_attributes(Bucket=BUCKET, Key="copy/dst", ObjectAttributes=ALL, MaxParts=1, PartNumberMarker=1)
parts = a.get("ObjectParts", {})
check(parts.get("TotalPartsCount") == 2, "attributes: PartsCount of a multipart object (%s)" % parts)
check(parts.get("MaxParts") == 1 and parts.get("PartNumberMarker") == 1, "attributes: max-parts / marker echoed")
check(a.get("Checksum", {}).get("ChecksumCRC32") == composite.split("-")[0],
      "attributes: the composite checksum, without -N")
check(a.get("ETag", "").endswith("-2"), "attributes: multipart ETag")
st, code, _ = call(s3, "get_object_attributes", {}, Bucket=BUCKET, Key="attr/none", ObjectAttributes=["ETag"])
check((st, code) == (404, "NoSuchKey"), "attributes of a missing key: NoSuchKey (%s %s)" % (st, code))
st, code, _ = call(s3, "get_object_attributes", {}, Bucket=BUCKET, Key="attr/single", ObjectAttributes=["Colour"])
check((st, code) == (400, "InvalidArgument"), "attributes: an unknown attribute is InvalidArgument (%s)" % code)

finish()
