"""Telling a store outage from a broken run, without loading the S3 clients for local runs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from pipeline.sources.outage import is_outage

REPO = Path(__file__).resolve().parent.parent

# Reads every sample run (graded and refused alike) in a fresh interpreter, then reports the
# refusal reasons and whether any S3 client module got loaded on the way.
READ_SAMPLES = """
import json, sys
from pipeline.grade import read_runs
from pipeline.sources.bucket import Bucket
root = sys.argv[1]
rows = read_runs(root, list(Bucket(root).discover()))
print(json.dumps({
    "runs": len(rows.runs),
    "refusals": sorted({r["reason"] for r in rows.refusals}),
    "loaded": sorted(m for m in ("botocore", "aiohttp", "s3fs") if m in sys.modules),
}))
"""


def test_reading_local_runs_loads_no_s3_client():
    done = subprocess.run([sys.executable, "-c", READ_SAMPLES, str(REPO / "data" / "runs")],
                          capture_output=True, text=True, timeout=120, cwd=REPO)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    assert seen["runs"] > 0 and seen["refusals"], seen  # refused runs went through is_outage
    assert seen["loaded"] == [], seen


def test_s3_client_errors_count_as_outages_once_loaded():
    boto = pytest.importorskip("botocore.exceptions")
    aiohttp = pytest.importorskip("aiohttp")
    down = boto.EndpointConnectionError(endpoint_url="http://127.0.0.1:1")
    try:
        try:
            raise down
        except boto.EndpointConnectionError as exc:
            raise OSError("reading runs/x/program.md") from exc
    except OSError as wrapped:
        assert is_outage(wrapped)
    assert is_outage(aiohttp.ServerDisconnectedError())
    assert is_outage(TimeoutError())
    assert not is_outage(FileNotFoundError("runs/x/program.md"))
    assert not is_outage(ValueError("not JSON"))
