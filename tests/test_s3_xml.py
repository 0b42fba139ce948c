"""The quicker reader of S3's XML answers gives what botocore's own reader gives."""

from __future__ import annotations

import asyncio
import sys

import boto3
import pytest
from aiobotocore.parsers import AioResponseParserFactory
from botocore.handlers import _handle_200_error
from s3_server import s3_bucket, s3_server  # noqa: F401  (fixtures)

from pipeline.sources.bucket import Bucket, _timestamp
from pipeline.sources.s3_xml import _READ, QuickParserFactory, _QuickRestXMLParser, check_200_error

# Keys a listing has to escape or decode: XML's own characters, spaces, percent signs and
# pluses (listings are URL-encoded), names that are not ASCII, empty folder names, a folder
# marker, a file under it
KEYS = ["runs/20261112-000000-a/program.md", "runs/20261112-000000-a/bindings/w/a & b <c>.md",
        "runs/20261112-000000-a/bindings/w/100% + 1.md", "runs/20261112-000000-a/é/ß 😀.md",
        "runs//20261112-000001-b/state.md", "runs/folder/", "runs/folder/x.md", "top.md"]


def answers(endpoint: str, bucket: str) -> list[tuple[object, dict]]:
    """(operation, raw answer) of the S3 calls rungrade makes, and of errors, as a plain
    botocore client receives them."""
    client = boto3.client("s3", endpoint_url=endpoint)
    caught: list[tuple[object, dict]] = []

    def catch(operation_model, response_dict, **_):
        caught.append((operation_model, dict(response_dict)))

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
    return [(operation, response) for operation, response in caught
            if operation.name != "GetObject" or response["status_code"] >= 300]  # (a stream)


def listing_answer(endpoint: str, bucket: str) -> tuple[object, dict]:
    """(operation, raw answer) of the first ListObjectsV2 call of `answers`."""
    return next((o, r) for o, r in answers(endpoint, bucket) if o.name == "ListObjectsV2")


def read_by_both(operation, response: dict) -> tuple[dict, dict]:
    """What botocore reads of an answer (its 200-error check, then its parser), and what
    rungrade's session reads (`check_200_error`, then the quicker reader)."""
    stock, quick = AioResponseParserFactory(), QuickParserFactory()
    for factory in (stock, quick):
        factory.set_parser_defaults(timestamp_parser=_timestamp)
    theirs, ours = dict(response), dict(response)
    _handle_200_error(operation_model=operation, response_dict=theirs)
    check_200_error(operation_model=operation, response_dict=ours)
    assert ours["status_code"] == theirs["status_code"]
    return (asyncio.run(stock.create_parser("rest-xml").parse(theirs, operation.output_shape)),
            asyncio.run(quick.create_parser("rest-xml").parse(ours, operation.output_shape)))


def test_the_quicker_reader_gives_what_botocores_gives(s3_server, s3_bucket):  # noqa: F811
    seen = set()
    for operation, response in answers(s3_server, s3_bucket):
        expected, got = read_by_both(operation, response)
        assert got == expected, operation.name
        seen.add(operation.name)
        # (keys put with a checksum list it: a flattened list of scalars in each key)
        if any("ChecksumAlgorithm" in item for item in got.get("Contents", [])):
            seen.add("a flattened list")
    assert {"ListObjectsV2", "ListObjects", "DeleteObjects", "CopyObject", "ListBuckets",
            "GetObject", "a flattened list"} <= seen
    assert not _READ  # every tree the check read was taken by the parser


@pytest.mark.parametrize("body", [
    b"<Error><Code>InternalError</Code><Message>Try again.</Message></Error>",
    b'<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>b</Name><Conte',
    b"", b"not xml"])
def test_a_200_answer_holding_no_listing_is_made_an_error_as_botocore_makes_it(
        s3_server, s3_bucket, body):  # noqa: F811
    operation, response = listing_answer(s3_server, s3_bucket)
    for status in (200, 503):
        expected, got = read_by_both(operation, {**response, "status_code": status,
                                                 "body": body})
        assert got == expected
    assert not _READ


def test_a_grade_lists_s3_with_the_quicker_reader(s3_server, s3_bucket):  # noqa: F811
    client = boto3.client("s3", endpoint_url=s3_server)
    for key in KEYS[:4]:
        client.put_object(Bucket=s3_bucket, Key=key, Body=b"x")
    _QuickRestXMLParser._plans.clear()
    (run,) = Bucket(f"s3://{s3_bucket}/runs", s3_server).discover()
    assert run.run_id == "20261112-000000-a"
    assert {shape().name for shape, _ in _QuickRestXMLParser._plans.values()} >= {
        "ListObjectsV2Output", "Object"}
    assert not _READ  # each listing page was read once, its tree taken by the parser


def test_without_the_quicker_reader_s3_is_read_by_botocores(s3_server, s3_bucket,  # noqa: F811
                                                           monkeypatch):
    # a botocore to come without the names s3_xml leans on: it does not import, and the
    # session reads as botocore does
    from pipeline.sources import bucket as bucket_module

    client = boto3.client("s3", endpoint_url=s3_server)
    for key in KEYS[:4]:
        client.put_object(Bucket=s3_bucket, Key=key, Body=b"x")
    monkeypatch.setitem(sys.modules, "pipeline.sources.s3_xml", None)  # (import fails)
    bucket_module._s3_session.cache_clear()
    _QuickRestXMLParser._plans.clear()
    try:
        (run,) = Bucket(f"s3://{s3_bucket}/runs", s3_server).discover()
    finally:
        bucket_module._s3_session.cache_clear()
    assert run.run_id == "20261112-000000-a" and len(run.files) == 4
    assert not _QuickRestXMLParser._plans


def test_a_plan_goes_with_its_shape(s3_server, s3_bucket):  # noqa: F811
    # each client has shapes of its own: a process that makes clients over and over does not
    # keep the plans of those gone
    import gc

    import botocore.session

    operation, response = listing_answer(s3_server, s3_bucket)
    gc.collect()
    before = len(_QuickRestXMLParser._plans)
    for _ in range(3):
        model = botocore.session.get_session().get_service_model("s3")
        fresh = model.operation_model("ListObjectsV2")
        assert fresh.output_shape is not operation.output_shape
        read_by_both(fresh, response)
        assert len(_QuickRestXMLParser._plans) > before
        del model, fresh
        gc.collect()
        assert len(_QuickRestXMLParser._plans) == before
