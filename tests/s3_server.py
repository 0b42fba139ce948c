"""A real S3 server on loopback for the tests: moto in server mode, on a free port.

`s3_server` starts one moto server (`moto_s3.S3Server`) per test session and points the usual
AWS variables at it; `s3_bucket` gives each test a fresh, empty bucket and returns its name.
Clients reach the server exactly as they would reach a real bucket (s3fs, boto3,
`--endpoint-url`).
"""

from __future__ import annotations

import logging
import os
import uuid

import pytest


@pytest.fixture(scope="session")
def s3_server():
    """The endpoint URL of a moto S3 server that lives for the whole session."""
    from moto_s3 import S3Server, free_port

    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # one log line per request otherwise
    port = free_port()
    server = S3Server(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    endpoint = f"http://127.0.0.1:{port}"
    saved = {k: os.environ.get(k) for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY",
                                             "AWS_DEFAULT_REGION", "AWS_ENDPOINT_URL")}
    os.environ.update({"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
                       "AWS_DEFAULT_REGION": "us-east-1"})
    os.environ.pop("AWS_ENDPOINT_URL", None)  # the tests pass --endpoint-url themselves
    try:
        yield endpoint
    finally:
        server.stop()
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


@pytest.fixture
def s3_bucket(s3_server):
    """A new empty bucket on the session's server; returns its name."""
    import boto3

    name = f"test-{uuid.uuid4().hex[:12]}"
    boto3.client("s3", endpoint_url=s3_server).create_bucket(Bucket=name)
    return name


@pytest.fixture
def s3fs_client(s3_server):
    """An s3fs filesystem on the server, with listings never cached."""
    import s3fs

    return s3fs.S3FileSystem(endpoint_url=s3_server, use_listings_cache=False)
