"""The quicker reader of S3's XML answers gives what botocore's own reader gives."""

from __future__ import annotations

import asyncio

import boto3
import pytest
from aiobotocore.parsers import AioResponseParserFactory
from s3_server import s3_bucket, s3_server  # noqa: F401  (fixtures)

from pipeline.sources.bucket import Bucket, _timestamp
from pipeline.sources.s3_xml import QuickParserFactory, _QuickRestXMLParser

# Keys a listing has to escape or decode: XML's own characters, spaces, percent signs and
# pluses (listings are URL-encoded), names that are not ASCII, empty folder names, a folder
# marker, a file under it
KEYS = ["runs/20261112-000000-a/program.md", "runs/20261112-000000-a/bindings/w/a & b <c>.md",
        "runs/20261112-000000-a/bindings/w/100% + 1.md", "runs/20261112-000000-a/é/ß 😀.md",
        "runs//20261112-000001-b/state.md", "runs/folder/", "runs/folder/x.md", "top.md"]


def answers(endpoint: str, bucket: str) -> list[tuple[str, object, dict]]:
    """(operation, output shape, raw answer) of the S3 calls rungrade makes, and of an error,
    as a plain botocore client receives them."""
    client = boto3.client("s3", endpoint_url=endpoint)
    caught: list[tuple[str, object, dict]] = []

    def catch(operation_model, response_dict, **_):
        caught.append((operation_model.name, operation_model.output_shape,
                       dict(response_dict)))

    client.meta.events.register("before-parse.s3.*", catch)
    for key in KEYS:
        client.put_object(Bucket=bucket, Key=key, Body=key.encode())
    client.list_objects_v2(Bucket=bucket)
    client.list_objects_v2(Bucket=bucket, Prefix="runs/", Delimiter="/")
    client.list_objects_v2(Bucket=bucket, MaxKeys=2, StartAfter="runs/", FetchOwner=True)
    client.list_objects_v2(Bucket=bucket, Prefix="nothing/")
    client.list_objects(Bucket=bucket, Delimiter="/")
    client.head_object(Bucket=bucket, Key=KEYS[0])
    client.copy_object(Bucket=bucket, Key="copy.md", CopySource={"Bucket": bucket,
                                                                  "Key": KEYS[1]})
    client.delete_objects(Bucket=bucket, Delete={"Objects": [{"Key": "copy.md"},
                                                             {"Key": "never.md"}]})
    client.list_buckets()
    client.get_bucket_location(Bucket=bucket)
    with pytest.raises(client.exceptions.ClientError):
        client.head_object(Bucket=bucket, Key="never.md")
    with pytest.raises(client.exceptions.NoSuchKey):
        client.get_object(Bucket=bucket, Key="never.md")
    return [(name, shape, response) for name, shape, response in caught
            if name != "GetObject" or response["status_code"] >= 300]  # (a body is a stream)


def test_the_quicker_reader_gives_what_botocores_gives(s3_server, s3_bucket):  # noqa: F811
    stock, quick = AioResponseParserFactory(), QuickParserFactory()
    for factory in (stock, quick):
        factory.set_parser_defaults(timestamp_parser=_timestamp)
    seen = set()
    for name, shape, response in answers(s3_server, s3_bucket):
        expected = asyncio.run(stock.create_parser("rest-xml").parse(response, shape))
        got = asyncio.run(quick.create_parser("rest-xml").parse(response, shape))
        assert got == expected, name
        seen.add(name)
    assert {"ListObjectsV2", "ListObjects", "DeleteObjects", "CopyObject", "ListBuckets",
            "GetObject"} <= seen


def test_a_grade_lists_s3_with_the_quicker_reader(s3_server, s3_bucket):  # noqa: F811
    client = boto3.client("s3", endpoint_url=s3_server)
    for key in KEYS[:4]:
        client.put_object(Bucket=s3_bucket, Key=key, Body=b"x")
    _QuickRestXMLParser._plans.clear()
    (run,) = Bucket(f"s3://{s3_bucket}/runs", s3_server).discover()
    assert run.run_id == "20261112-000000-a"
    assert {shape.name for shape, _ in _QuickRestXMLParser._plans.values()} >= {
        "ListObjectsV2Output", "Object"}
