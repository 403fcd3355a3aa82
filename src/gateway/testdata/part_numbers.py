"""GetObject/HeadObject with PartNumber through `strata serve`, driven by
boto3. Usage: part_numbers.py ENDPOINT KEY SECRET BUCKET [UPSTREAM UKEY USECRET].
A 3-part upload answers each part's byte range (206, Content-Range,
ContentLength, PartsCount, the object's ETag, bytes exact) and 416
InvalidPartNumber past the last part; a single PUT answers part 1 as the whole
object without PartsCount. With the gateway's s3:// upstream named, a 3-part
object uploaded to the upstream directly answers through the gateway as the
upstream itself answers (its parts where it knows ?partNumber=, else one
part, the whole object). Exits non-zero on any failure; prints "N check(s), M failure(s)"
last."""
import sys

from botocore.exceptions import ClientError

from boto3_checks import check, client, finish

ENDPOINT, KEY, SECRET, BUCKET = sys.argv[1:5]
MiB = 1 << 20
s3 = client(ENDPOINT, KEY, SECRET)


def error_of(fn, **kw):
    try:
        fn(**kw)
        return 200, ""
    except ClientError as e:
        return e.response["ResponseMetadata"]["HTTPStatusCode"], e.response["Error"].get("Code", "")


parts = [bytes([65 + i]) * size for i, size in enumerate([5 * MiB, 5 * MiB + 7, 1234])]
total = sum(len(p) for p in parts)
key = "multi/object"
up = s3.create_multipart_upload(Bucket=BUCKET, Key=key)
done = []
for n, data in enumerate(parts, 1):
    r = s3.upload_part(Bucket=BUCKET, Key=key, UploadId=up["UploadId"], PartNumber=n, Body=data)
    done.append({"PartNumber": n, "ETag": r["ETag"]})
etag = s3.complete_multipart_upload(Bucket=BUCKET, Key=key, UploadId=up["UploadId"],
                                    MultipartUpload={"Parts": done})["ETag"]
check(etag.endswith('-3"'), "multipart ETag " + etag)

for rnd in ("first", "cached"):
    begin = 0
    for n, data in enumerate(parts, 1):
        end = begin + len(data) - 1
        want_range = "bytes %d-%d/%d" % (begin, end, total)
        g = s3.get_object(Bucket=BUCKET, Key=key, PartNumber=n)
        body = g["Body"].read()
        what = "%s GET part %d" % (rnd, n)
        check(g["ResponseMetadata"]["HTTPStatusCode"] == 206, what + " is 206")
        check(g["ContentLength"] == len(data), what + " ContentLength %s" % g["ContentLength"])
        check(g.get("ContentRange") == want_range, what + " ContentRange %s" % g.get("ContentRange"))
        check(g.get("PartsCount") == 3, what + " PartsCount %s" % g.get("PartsCount"))
        check(g["ETag"] == etag, what + " ETag")
        check(body == data, what + " bytes exact")
        h = s3.head_object(Bucket=BUCKET, Key=key, PartNumber=n)
        what = "%s HEAD part %d" % (rnd, n)
        check(h["ResponseMetadata"]["HTTPStatusCode"] == 206, what + " is 206")
        check(h["ContentLength"] == len(data), what + " ContentLength %s" % h["ContentLength"])
        # Debian's botocore models no ContentRange on HeadObject: read the header.
        got_range = h["ResponseMetadata"]["HTTPHeaders"].get("content-range")
        check(got_range == want_range, what + " Content-Range %s" % got_range)
        check(h.get("PartsCount") == 3, what + " PartsCount %s" % h.get("PartsCount"))
        begin = end + 1

status, code = error_of(s3.get_object, Bucket=BUCKET, Key=key, PartNumber=4)
check(status == 416 and code == "InvalidPartNumber", "GET part 4: %s %s" % (status, code))
status, _ = error_of(s3.head_object, Bucket=BUCKET, Key=key, PartNumber=4)
check(status == 416, "HEAD part 4: %s" % status)
whole = s3.get_object(Bucket=BUCKET, Key=key)
check(whole["Body"].read() == b"".join(parts) and "PartsCount" not in whole, "plain GET is the whole object")

s3.put_object(Bucket=BUCKET, Key="single", Body=b"one piece")
g = s3.get_object(Bucket=BUCKET, Key="single", PartNumber=1)
check(g["ResponseMetadata"]["HTTPStatusCode"] == 200 and g["Body"].read() == b"one piece",
      "single PUT part 1 is the whole object")
check("PartsCount" not in g and "ContentRange" not in g, "single PUT part 1 has no PartsCount/ContentRange")
status, code = error_of(s3.get_object, Bucket=BUCKET, Key="single", PartNumber=2)
check(status == 416 and code == "InvalidPartNumber", "single PUT part 2: %s %s" % (status, code))

if len(sys.argv) >= 8:
    up_s3 = client(sys.argv[5], sys.argv[6], sys.argv[7])
    direct = "direct/object"
    up = up_s3.create_multipart_upload(Bucket=BUCKET, Key=direct)
    done = []
    for n, data in enumerate(parts, 1):
        r = up_s3.upload_part(Bucket=BUCKET, Key=direct, UploadId=up["UploadId"], PartNumber=n, Body=data)
        done.append({"PartNumber": n, "ETag": r["ETag"]})
    up_s3.complete_multipart_upload(Bucket=BUCKET, Key=direct, UploadId=up["UploadId"],
                                    MultipartUpload={"Parts": done})
    knows_parts = "PartsCount" in up_s3.head_object(Bucket=BUCKET, Key=direct, PartNumber=1)
    print("upstream answers ?partNumber=: %s" % knows_parts)
    g = s3.get_object(Bucket=BUCKET, Key=direct, PartNumber=1)
    body = g["Body"].read()
    if knows_parts:
        check(body == parts[0] and g.get("PartsCount") == 3, "uploaded upstream: part 1 as the upstream's")
    else:
        check(body == b"".join(parts) and "PartsCount" not in g, "uploaded upstream: part 1 is the whole object")
        status, code = error_of(s3.get_object, Bucket=BUCKET, Key=direct, PartNumber=2)
        check(status == 416 and code == "InvalidPartNumber", "uploaded upstream: part 2: %s %s" % (status, code))

finish()
