"""x-amz-checksum-* through `strata serve --backend s3://` in front of Ceph
RGW 16.2, which ignores checksums: the gateway verifies them and keeps the
value in the reserved user metadata x-amz-meta-strata-checksum (see
object/s3_metadata.h), so reads with checksum mode return it. Usage:
upstream_checksums.py GATEWAY KEY SECRET BUCKET RGW RGW_KEY RGW_SECRET."""
import base64
import hashlib
import os
import sys
import zlib

from botocore.exceptions import ClientError

from boto3_checks import check, client, finish

GW, KEY, SECRET, BUCKET, RGW, RGW_KEY, RGW_SECRET = sys.argv[1:8]
gw = client(GW, KEY, SECRET)
rgw = client(RGW, RGW_KEY, RGW_SECRET)


def b64(b):
    return base64.b64encode(b).decode()


def error_of(f):
    try:
        f()
    except ClientError as e:
        return e.response["ResponseMetadata"]["HTTPStatusCode"], e.response["Error"]["Code"]
    return 200, ""


gw.create_bucket(Bucket=BUCKET)

# A checksummed single PUT reads back with checksum mode, from HEAD and GET.
body = os.urandom(100000)
crc = b64(zlib.crc32(body).to_bytes(4, "big"))
put = gw.put_object(Bucket=BUCKET, Key="ck/small", Body=body, ChecksumAlgorithm="CRC32",
                    Metadata={"owner": "me"})
check(put.get("ChecksumCRC32") == crc, "PUT answers the CRC32")
head = gw.head_object(Bucket=BUCKET, Key="ck/small", ChecksumMode="ENABLED")
check(head.get("ChecksumCRC32") == crc, "HEAD with checksum mode returns it (%s)" % head.get("ChecksumCRC32"))
check(head.get("Metadata") == {"owner": "me"}, "the user metadata is the client's only (%s)" % head.get("Metadata"))
got = gw.get_object(Bucket=BUCKET, Key="ck/small", ChecksumMode="ENABLED")
check(got.get("ChecksumCRC32") == crc and got["Body"].read() == body, "GET with checksum mode returns it and the bytes")
check("ChecksumCRC32" not in gw.head_object(Bucket=BUCKET, Key="ck/small"), "without checksum mode: no checksum")

sha = b64(hashlib.sha256(body).digest())
gw.put_object(Bucket=BUCKET, Key="ck/sha", Body=body, ChecksumSHA256=sha)
check(gw.head_object(Bucket=BUCKET, Key="ck/sha", ChecksumMode="ENABLED").get("ChecksumSHA256") == sha,
      "SHA256 likewise")

# A wrong checksum is BadDigest and nothing reaches RGW.
st = error_of(lambda: gw.put_object(Bucket=BUCKET, Key="ck/bad", Body=body, ChecksumCRC32=b64(b"\0\0\0\0")))
check(st == (400, "BadDigest"), "a wrong CRC32 is BadDigest (%s)" % (st,))
check(error_of(lambda: rgw.head_object(Bucket=BUCKET, Key="ck/bad"))[0] == 404, "  and nothing is stored in RGW")

# A spilled (20 MiB) PUT goes to RGW as a multipart upload: its checksum is kept all the same.
big = os.urandom(20 << 20)
bigcrc = b64(zlib.crc32(big).to_bytes(4, "big"))
gw.put_object(Bucket=BUCKET, Key="ck/big", Body=big, ChecksumCRC32=bigcrc)
check(gw.head_object(Bucket=BUCKET, Key="ck/big", ChecksumMode="ENABLED").get("ChecksumCRC32") == bigcrc,
      "a spilled PUT's CRC32 reads back")
st = error_of(lambda: gw.put_object(Bucket=BUCKET, Key="ck/bigbad", Body=big, ChecksumCRC32=crc))
check(st == (400, "BadDigest"), "a spilled PUT with a wrong CRC32 is BadDigest (%s)" % (st,))
check(error_of(lambda: rgw.head_object(Bucket=BUCKET, Key="ck/bigbad"))[0] == 404, "  and nothing is stored in RGW")
check(not rgw.list_multipart_uploads(Bucket=BUCKET).get("Uploads"), "  nor an upload left behind")

# A multipart upload with checksums passes them on; RGW takes (and ignores) them.
up = gw.create_multipart_upload(Bucket=BUCKET, Key="ck/mp", ChecksumAlgorithm="CRC32")["UploadId"]
p1 = os.urandom(5 << 20)
r1 = gw.upload_part(Bucket=BUCKET, Key="ck/mp", UploadId=up, PartNumber=1, Body=p1, ChecksumAlgorithm="CRC32")
check(r1.get("ChecksumCRC32") == b64(zlib.crc32(p1).to_bytes(4, "big")), "UploadPart answers the part's CRC32")
done = gw.complete_multipart_upload(
    Bucket=BUCKET, Key="ck/mp", UploadId=up,
    MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": r1["ETag"], "ChecksumCRC32": r1["ChecksumCRC32"]}]})
check(done.get("ETag", "").endswith('-1"'), "Complete with part checksums succeeds through RGW")
check(gw.get_object(Bucket=BUCKET, Key="ck/mp")["Body"].read() == p1, "  and the object reads back")

finish()
