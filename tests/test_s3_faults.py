"""S3 faults: the runs bucket's server stops mid-listing or mid-read, or blips.

The server is moto's S3 on loopback behind a switch (tests/s3_faults_server.py). A server that
stays down ends the grade with exit code 4 and a clear message after the client's bounded
retries, and nothing of the interrupted batch is published; a short blip is absorbed by those
retries. Results are local, so "byte-identical" is checked on real files.
"""

from __future__ import annotations

import json
import secrets
import shutil
import threading
import time
from pathlib import Path

import pytest
from run_folders import write_run
from s3_faults_server import (
    FaultyS3Server,
    is_head_request,
    is_list_page,
    is_object_read,
    lists_prefix,
)
from test_faults import CATALOG, assert_intact, assert_no_duplicates, snapshot
from typer.testing import CliRunner

from pipeline import exit_codes
from pipeline.catalog import connect
from pipeline.cli import app
from pipeline.sources.bucket import _Ledgers, filesystem
from pipeline.store import ResultStore

REPO = Path(__file__).resolve().parent.parent

FILLER = 1000  # keys beside the runs (old logs): the listing takes more than one page


@pytest.fixture
def s3(monkeypatch):
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    server = FaultyS3Server()
    server.start()
    yield server
    server.stop()


def seed(server: FaultyS3Server, local: Path, bucket: str | None = None,
         under: str = "runs/") -> str:
    """Copy the files under `local` into a bucket (fresh unless named), each key `under` + its
    path; return the runs root."""
    from moto.core import DEFAULT_ACCOUNT_ID
    from moto.s3.models import s3_backends

    if bucket is None:
        bucket = f"runs-{secrets.token_hex(4)}"
        filesystem(f"s3://{bucket}", server.endpoint).mkdir(bucket)
    # Through moto's own store: the grader reads over HTTP, but 1,000 uploads would be slow.
    backend = s3_backends[DEFAULT_ACCOUNT_ID]["aws"]
    for path in sorted(local.rglob("*")):
        if path.is_file():
            backend.put_object(bucket, f"{under}{path.relative_to(local)}", path.read_bytes())
    return f"s3://{bucket}/{under.rstrip('/')}"


def grade(runs: str, out: Path, endpoint: str, *extra: str):
    return CliRunner().invoke(app, ["grade", runs, "--out", str(out), "--json", "--workers", "1",
                                    "--endpoint-url", endpoint, *extra])


def first_grade(s3, tmp_path, runs: int) -> tuple[str, Path, dict[str, bytes]]:
    local, out = tmp_path / "local", tmp_path / "results"
    for i in range(runs):
        write_run(local, f"20261112-{i:06d}-s3")
    for i in range(FILLER):
        (local / "archive").mkdir(exist_ok=True)
        (local / "archive" / f"old-{i:04d}.log").write_text("rotated\n")
    uri = seed(s3, local)
    result = grade(uri, out, s3.endpoint)
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["found"] == runs
    return uri, out, snapshot(out)


def add_runs(s3, tmp_path, uri: str, runs: int) -> None:
    """New runs arrive in the bucket, so the next grade has runs to read."""
    local = tmp_path / "new"
    for i in range(runs):
        write_run(local, f"20261113-{i:06d}-s3new")
    seed(s3, local, uri.removeprefix("s3://").split("/", 1)[0])


def assert_failed_cleanly(result, out: Path, before: dict[str, bytes], commits: set[str],
                          elapsed: float) -> None:
    assert result.exit_code == exit_codes.STORAGE, result.output
    assert "a store failed" in result.output and "rerun" in result.output
    assert "Traceback" not in result.output
    assert elapsed < 90, f"retries took {elapsed:.0f}s"
    assert_intact(before, out)
    assert ResultStore(str(out)).committed_batches() == commits


@pytest.mark.parametrize("body", [
    b'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>InternalError</Code><Message>We '
    b"encountered an internal error. Please try again.</Message></Error>",
    b'<?xml version="1.0" encoding="UTF-8"?>\n<ListBucketResult xmlns="http://s3.amazonaws.com'
    b'/doc/2006-03-01/"><Name>runs</Name><IsTruncated>false</IsTruncated><Contents><Key>ru'],
    ids=["an error", "half a page"])
def test_a_listing_page_answered_200_with_no_listing_is_asked_again(s3, tmp_path, body):
    # S3 may answer 200 OK with an error in the body, or a connection may end mid-body: the
    # page is asked for again, never read as a listing that ends there (runs would be lost).
    # The runs' folder is listed as one range; old logs sort first and fill its first page.
    local, out = tmp_path / "local", tmp_path / "results"
    for i in range(12):
        write_run(local, f"20261112-{i:06d}-s3")
    (local / ".archive").mkdir()
    for i in range(FILLER):
        (local / ".archive" / f"old-{i:04d}.log").write_text("rotated\n")
    uri = seed(s3, local)
    s3.answer_once = (is_list_page(2), body)
    result = grade(uri, out, s3.endpoint)
    assert result.exit_code == 0, result.output
    assert s3.answer_once is None, "the page was never answered so"
    summary = json.loads(result.output)
    assert summary["found"] == summary["graded"] == 12
    assert_no_duplicates(out, 12)


@pytest.mark.parametrize("attempt", ["listing", "asking", "reading"])
def test_server_stopped_mid_grade_publishes_nothing(s3, tmp_path, monkeypatch, attempt):
    monkeypatch.setenv("AWS_RETRY_MODE", "standard")
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "3")
    uri, out, before = first_grade(s3, tmp_path, 4)
    commits = ResultStore(str(out)).committed_batches()
    add_runs(s3, tmp_path, uri, 6)
    # a folder with more keys than this before its markers' place is asked about (HEAD)
    monkeypatch.setattr(_Ledgers, "HELD_KEYS", 10)

    # The server dies at the second listing page, at discovery's first question whether a
    # folder is a ledger, or after 30 object reads of this grade.
    s3.fail_from = {"listing": is_list_page(2), "asking": is_head_request(),
                    "reading": is_object_read(30)}[attempt]
    threading.Thread(target=_stop_when_tripped, args=(s3,), daemon=True).start()
    started = time.monotonic()
    result = grade(uri, out, s3.endpoint)
    assert_failed_cleanly(result, out, before, commits, time.monotonic() - started)
    assert s3.attempts, "the fault was never injected"

    s3.start()  # the same buckets, served again
    rerun = grade(uri, out, s3.endpoint)
    assert rerun.exit_code == 0, rerun.output
    assert json.loads(rerun.output)["found"] == 10
    assert_intact(before, out, derived=CATALOG)
    assert_no_duplicates(out, 10)


def _stop_when_tripped(server: FaultyS3Server) -> None:
    # A tripped server resets the request in flight, then stops listening.
    while not server.failing:
        time.sleep(0.001)
    server.stop()


def test_reads_fail_mid_batch_after_earlier_batches_committed(s3, tmp_path, monkeypatch):
    # Batches of 5: some commit, then the server dies inside a batch; only whole batches stay.
    monkeypatch.setenv("AWS_RETRY_MODE", "standard")
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "2")
    local, out = tmp_path / "local", tmp_path / "results"
    for i in range(20):
        write_run(local, f"20261112-{i:06d}-s3")
    uri = seed(s3, local)
    # 9 reads a run: the sample's reading first (all 20), two batches, then mid third batch
    s3.fail_from = is_object_read(20 * 9 + 2 * 5 * 9 + 25)
    threading.Thread(target=_stop_when_tripped, args=(s3,), daemon=True).start()
    result = grade(uri, out, s3.endpoint, "--batch-size", "5")
    assert result.exit_code == exit_codes.STORAGE, result.output
    store = ResultStore(str(out))
    committed = store.committed_batches()
    assert len(committed) == 2
    # readers see the two whole batches and not one run of the third
    assert_no_duplicates(out, 10)
    before = snapshot(out)

    s3.start()
    rerun = grade(uri, out, s3.endpoint, "--batch-size", "5")
    assert rerun.exit_code == 0, rerun.output
    assert_intact(before, out, derived=CATALOG)
    assert_no_duplicates(out, 20)


def test_a_ledger_whose_read_the_server_drops_is_not_refused(s3, tmp_path, monkeypatch):
    # A ledger read that the store did not answer was refused ledger-unreadable-artifact, as
    # if the ledger were broken: committed so, and never read again. A run is not refused
    # for an outage; neither is a ledger.
    monkeypatch.setenv("AWS_RETRY_MODE", "standard")
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "2")
    local, out = tmp_path / "local", tmp_path / "results"
    for ledger in sorted((REPO / "data/runs/moltzap-evals/ledgers").iterdir()):
        shutil.copytree(ledger, local / ledger.name)
    uri = seed(s3, local)
    s3.fail_from = is_object_read(4)  # a ledger is 3 reads: the second ledger's second
    threading.Thread(target=_stop_when_tripped, args=(s3,), daemon=True).start()
    result = grade(uri, out, s3.endpoint)
    assert result.exit_code == exit_codes.STORAGE, result.output
    assert "a store failed" in result.output and "did not answer" in result.output
    assert not ResultStore(str(out)).committed_batches()

    s3.start()
    rerun = grade(uri, out, s3.endpoint)
    assert rerun.exit_code == 0, rerun.output
    summary = json.loads(rerun.output)
    assert (summary["found"], summary["refused"]) == (3, 0), summary


def test_a_short_blip_is_absorbed_by_retries(s3, tmp_path, monkeypatch):
    monkeypatch.setenv("AWS_RETRY_MODE", "standard")
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "6")
    local, out = tmp_path / "local", tmp_path / "results"
    for i in range(12):
        write_run(local, f"20261112-{i:06d}-s3")
    uri = seed(s3, local)
    s3.fail_from = is_object_read(40)

    def blip() -> None:
        _stop_when_tripped(s3)
        time.sleep(0.3)
        s3.start()

    threading.Thread(target=blip, daemon=True).start()
    result = grade(uri, out, s3.endpoint)
    assert result.exit_code == 0, result.output
    assert s3.attempts, "the blip never happened"
    summary = json.loads(result.output)
    assert summary["found"] == summary["graded"] == 12
    assert_no_duplicates(out, 12)


def test_a_folder_whose_listing_is_denied_is_named_and_the_rest_graded(s3, tmp_path):
    # A bucket policy denies listing one team's prefix: its runs cannot be found. The other
    # team's runs are graded and committed, then the grade exits 4 naming the prefix (as for
    # a local folder that cannot be listed); once the policy allows it, the rerun grades them.
    local, out = tmp_path / "local", tmp_path / "results"
    for i in range(3):
        write_run(local / "team-a", f"20261112-{i:06d}-a")
        write_run(local / "team-b", f"20261112-{i:06d}-b")
    uri = seed(s3, local)
    bucket = uri.removeprefix("s3://").split("/")[0]
    s3.deny = lists_prefix("runs/team-b/")
    denied = grade(uri, out, s3.endpoint)
    assert denied.exit_code == exit_codes.STORAGE, denied.output
    summary = json.loads(denied.stdout)
    assert (summary["found"], summary["graded"] + summary["refused"]) == (3, 3)
    assert summary["unlisted"] == [{"path": f"s3://{bucket}/runs/team-b/",
                                    "error": "Access Denied"}]
    assert f"s3://{bucket}/runs/team-b/ (Access Denied)" in denied.stderr
    assert_no_duplicates(out, 3)

    s3.deny = None
    rerun = grade(uri, out, s3.endpoint)
    assert rerun.exit_code == 0, rerun.output
    summary = json.loads(rerun.stdout)
    assert (summary["found"], summary["new"], summary["skipped"], summary["unlisted"]) == (
        6, 3, 3, [])
    assert_no_duplicates(out, 6)


def test_a_run_cut_by_a_denied_listing_page_is_not_graded_in_part(s3, tmp_path):
    # The denial comes at the second page of a folder's listing, which ends inside a run:
    # that run is neither graded on the files listed so far nor refused; the folder is named.
    local, out = tmp_path / "local", tmp_path / "results"
    for i in range(3):
        write_run(local / "team-a", f"20261112-{i:06d}-a")
    cut = write_run(local / "team-b", "20261112-000000-b")
    archive = local / "team-b" / "0-archive"  # sorts before the run: fills most of page one
    archive.mkdir()
    for i in range(1000 - 4):
        (archive / f"old-{i:04d}.log").write_text("rotated\n")
    assert sum(p.is_file() for p in cut.rglob("*")) > 4  # its keys straddle the page end
    uri = seed(s3, local)

    def second_page(environ: dict) -> bool:
        return lists_prefix("runs/team-b/")(environ) and "continuation-token" in environ[
            "QUERY_STRING"]

    s3.deny = second_page
    denied = grade(uri, out, s3.endpoint)
    assert denied.exit_code == exit_codes.STORAGE, denied.output
    summary = json.loads(denied.stdout)
    assert (summary["found"], summary["graded"], summary["refused"]) == (3, 3, 0)
    assert [u["path"].rsplit("/", 2)[-2] for u in summary["unlisted"]] == ["team-b"]
    graded = connect(str(out)).sql("select run_uri from runs").fetchall()
    assert len(graded) == 3 and all("/team-a/" in uri for uri, in graded)


def test_a_range_of_folders_whose_listing_is_denied_is_named_and_the_rest_graded(s3,
                                                                                  tmp_path):
    # Run folders listed in ranges (130 of them: ranges from the 1st, 65th and 129th): the
    # second range's listing is denied, so its 64 runs are not found and the others are.
    local, out = tmp_path / "local", tmp_path / "results"
    names = [f"20261112-{i:06d}-r" for i in range(130)]
    for name in names:
        write_run(local, name, drop=("services", "bindings"))  # refused: enough to count
    uri = seed(s3, local)
    bucket = uri.removeprefix("s3://").split("/")[0]

    def second_range(environ: dict) -> bool:
        from urllib.parse import parse_qs
        return parse_qs(environ.get("QUERY_STRING", "")).get("start-after") == [
            f"runs/{names[64]}"]

    s3.deny = second_range
    denied = grade(uri, out, s3.endpoint)
    assert denied.exit_code == exit_codes.STORAGE, denied.output
    summary = json.loads(denied.stdout)
    assert (summary["found"], summary["graded"] + summary["refused"]) == (66, 66)
    assert summary["unlisted"] == [{
        "path": f"s3://{bucket}/runs/{names[64]}/",
        "error": "Access Denied; so were the 63 folders listed with it"}]

    s3.deny = None
    rerun = grade(uri, out, s3.endpoint)
    assert rerun.exit_code == 0, rerun.output
    assert (json.loads(rerun.stdout)["new"], json.loads(rerun.stdout)["skipped"]) == (64, 66)
