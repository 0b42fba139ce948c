"""RUNS and RESULTS on S3: a real moto server on loopback, reached through s3fs and the CLI."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import polars as pl
import pytest
from run_folders import write_run
from typer.testing import CliRunner

from pipeline import exit_codes
from pipeline.catalog import connect, read_grades
from pipeline.checks import DEFAULT_GRADER_ID
from pipeline.checks.clause_analysis import readings_version
from pipeline.cli import app
from pipeline.numbers import shown
from pipeline.sources.bucket import Bucket
from pipeline.store import ResultsLocked, ResultStore, grader_slug, new_batch_id
from pipeline.synth import synthesize

RUNS = 8


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("s3corpus")
    synthesize(str(root), RUNS, seed=5, workers=1)
    return root


@pytest.fixture
def runs_bucket(corpus: Path, s3_bucket: str, s3fs_client) -> str:
    """The corpus uploaded under s3://{bucket}/nightly/; returns that URL."""
    s3fs_client.put(str(corpus) + "/", f"{s3_bucket}/nightly/", recursive=True)
    return f"s3://{s3_bucket}/nightly"


def test_list_and_read_runs_on_s3(corpus: Path, runs_bucket: str, s3_server: str):
    local = {r.run_id: r for r in Bucket(str(corpus)).discover()}
    for ref in local.values():
        Bucket(str(corpus)).list_run(ref)
    bucket = Bucket(runs_bucket, s3_server)
    remote = list(bucket.discover())
    rel = sorted(str(Path(r.path).relative_to(corpus)) for r in local.values())
    # every run once (top-level folders are listed side by side, so their runs interleave)
    assert sorted(r.uri.removeprefix(runs_bucket + "/") for r in remote) == rel
    for ref in remote:
        assert ref.listed and ref.uri.startswith(runs_bucket + "/")
        assert {k: v.size for k, v in ref.files.items()} == {
            k: v.size for k, v in local[ref.run_id].files.items()}
    ref = remote[0]
    data, truncated = bucket.read(f"{ref.path}/program.md", 1 << 20)
    assert not truncated
    assert data == (Path(local[ref.run_id].path) / "program.md").read_bytes()
    head, truncated = bucket.read(f"{ref.path}/program.md", 10)
    assert (head, truncated) == (data[:10], True)


def test_grade_s3_to_s3_incremental_and_sql(runs_bucket: str, s3_bucket: str, s3_server: str,
                                            s3fs_client):
    results = f"s3://{s3_bucket}/results"
    cli = CliRunner()
    args = ["grade", runs_bucket, "--out", results, "--endpoint-url", s3_server,
            "--batch-size", "5", "--workers", "2", "--json"]
    first = cli.invoke(app, args)
    assert first.exit_code == 0, first.output
    summary = json.loads(first.output)
    assert (summary["found"], summary["new"], summary["skipped"]) == (RUNS, RUNS, 0)
    assert summary["graded"] + summary["refused"] == RUNS
    assert len(summary["batches"]) == 2
    assert s3fs_client.exists(f"{s3_bucket}/results/_commits/{summary['batches'][0]}.json")
    assert not s3fs_client.exists(f"{s3_bucket}/results/_staging")
    assert not s3fs_client.exists(f"{s3_bucket}/results/_lock.json")  # released
    slug = summary["grader_id"].replace("/", "-")
    reports = s3fs_client.ls(f"{s3_bucket}/results/reports/grader={slug}")
    assert len(reports) == summary["graded"]
    # the workers kept what they read of the clauses, for the grades after this one
    readings = f"{s3_bucket}/results/_readings/{readings_version()}"
    kept = s3fs_client.ls(readings)
    assert kept and all(path.endswith(".parquet") for path in kept)

    # a grade killed outright left its record running (written here as it would have)
    record = json.loads(s3fs_client.cat_file(
        f"{s3_bucket}/results/_grades/{summary['grade_id']}.json"))
    store = ResultStore(results, s3_server)
    store.log_grade(
        {**record, "grade_id": new_batch_id(), "status": "running", "finished_at": None})
    # no lock object: `rungrade grades` reads that grade interrupted at once (its record
    # says running until the next grade); while a lock's heartbeat is fresh, running
    assert store.lock_held() is False
    assert read_grades(results, s3_server)["status"].to_list() == ["finished", "interrupted"]
    with store.lock():
        assert store.lock_held() is True and store.lock_held(stale_after=0) is False
        assert read_grades(results, s3_server)["status"].to_list()[-1] == "running"

    # nothing changed: everything is skipped and nothing is committed, also where a marker
    # does not say which ledger graders its batch read ledgers with, as older ones do not
    # (the grade then reads which runs of that batch are refused ledgers: none here)
    marker = f"{s3_bucket}/results/_commits/{summary['batches'][0]}.json"
    unsaid = json.loads(s3fs_client.cat_file(marker))
    del unsaid["ledger_graders"]
    s3fs_client.pipe_file(marker, json.dumps(unsaid).encode())
    stored = store.committed_runs({"run_uri": pl.String}, with_batch=True)
    assert sorted(set(stored["batch_id"])) == summary["batches"]
    again = json.loads(cli.invoke(app, args).output)
    assert (again["skipped"], again["graded"] + again["refused"], again["batches"]) == (
        RUNS, 0, [])

    # a service rewrites one binding of one run: that run alone is graded again
    key = next(k for k in s3fs_client.find(f"{s3_bucket}/nightly")
               if "/bindings/" in k and "/caller/" not in k)
    uri = "s3://" + key.split("/bindings/")[0]
    time.sleep(1.1)  # S3 mtimes have one-second resolution
    s3fs_client.pipe_file(key, s3fs_client.cat_file(key) + b"\nA late correction.\n")
    third = json.loads(cli.invoke(app, args).output)
    assert (third["changed"], third["skipped"], len(third["batches"])) == (1, RUNS - 1, 1)
    assert s3fs_client.ls(readings) == kept  # its clauses were found there, not read again

    # analysts read the results back from S3: `rungrade sql` over the catalog views (DuckDB
    # through s3fs): every run once, the changed one from the newest batch
    shown = cli.invoke(app, ["sql", "select count(*) as n, count(distinct run_uri) as uris, "
                             "count(*) filter (status = 'graded') as graded, "
                             f"max(batch_id) filter (run_uri = '{uri}') as changed_batch, "
                             "(select count(*) from run_scores) as scored from runs",
                             "--results", results, "--endpoint-url", s3_server])
    assert shown.exit_code == 0, shown.output
    rows = [line.split() for line in shown.output.splitlines()]
    assert [str(RUNS), str(RUNS), str(summary["graded"]), third["batches"][0],
            str(summary["graded"])] in rows
    # and the record each of the three grades left in the results: what it found and did
    log = cli.invoke(app, ["sql", "select grade_id, status, found, skipped, len(batches) "
                           "from grades", "--results", results, "--endpoint-url", s3_server])
    assert log.exit_code == 0, log.output
    assert [line.split() for line in log.output.splitlines() if "finished" in line] == [
        [s["grade_id"], "finished", str(RUNS), str(s["skipped"]), str(len(s["batches"]))]
        for s in (summary, again, third)]
    shown = cli.invoke(app, ["grades", results, "--endpoint-url", s3_server])
    assert shown.exit_code == 0, shown.output
    assert [line.split()[2] for line in shown.stdout.splitlines() if line.startswith(" 20")] == [
        "finished", "interrupted", "finished", "finished"]  # closed by the next grade


def test_s3_lock_refuses_a_second_writer_and_expires(s3_bucket: str, s3_server: str):
    import boto3

    store = ResultStore(f"s3://{s3_bucket}/results", s3_server)
    second = ResultStore(f"s3://{s3_bucket}/results", s3_server)
    with store.lock(), pytest.raises(ResultsLocked, match="being written by another"), \
            second.lock():
        pass
    # a holder that died without releasing: its lock stops being refreshed
    boto3.client("s3", endpoint_url=s3_server).put_object(
        Bucket=s3_bucket, Key="results/_lock.json",
        Body=json.dumps({"pid": 1, "host": "gone", "since": "earlier"}).encode())
    with pytest.raises(ResultsLocked, match="pid 1 on gone"), store.lock(stale_after=600):
        pass
    time.sleep(1.5)
    with store.lock(stale_after=1.0) as still_locked:  # stale: taken over
        still_locked()
    assert not boto3.client("s3", endpoint_url=s3_server).list_objects_v2(
        Bucket=s3_bucket, Prefix="results/_lock").get("Contents")


def test_compact_while_a_first_grade_holds_the_s3_lock_is_told_it_is_locked(
        s3_bucket: str, s3_server: str):
    # nothing committed yet: it said "no committed results" (exit 2) of results on their way
    from pipeline.compact import compact

    store = ResultStore(f"s3://{s3_bucket}/first", s3_server)
    with store.lock(), pytest.raises(ResultsLocked, match="being written by another "
                                                           "`rungrade grade`"):
        compact(f"s3://{s3_bucket}/first", s3_server)
    with pytest.raises(FileNotFoundError, match="holds no committed results"):
        compact(f"s3://{s3_bucket}/first", s3_server)  # (the lock let go)


def test_an_s3_lock_a_killed_grade_left_is_taken_at_once_on_its_machine(
        runs_bucket: str, s3_bucket: str, s3_server: str, s3fs_client):
    # A grade killed outright cannot delete its lock object. The next grade on the same
    # machine sees that the holder is dead and takes the lock at once, instead of refusing
    # (exit 3) until the heartbeat is 600 s old; elsewhere it cannot tell, and waits.
    results = f"s3://{s3_bucket}/results-killed"
    lock = f"{s3_bucket}/results-killed/_lock.json"
    command = [str(Path(sys.executable).parent / "rungrade"), "grade", runs_bucket, "--out",
               results, "--endpoint-url", s3_server, "--json"]
    killed = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while not s3fs_client.exists(lock):
            assert killed.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
    finally:
        os.killpg(killed.pid, signal.SIGKILL)
        killed.communicate()
    left = json.loads(s3fs_client.cat_file(lock))
    assert left["pid"] == killed.pid and ResultStore(results, s3_server).lock_held() is False

    # the same lock, as if held by a process of another machine with this host name
    s3fs_client.pipe_file(lock, json.dumps({**left, "machine": "another"}).encode())
    elsewhere = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert elsewhere.returncode == exit_codes.LOCKED, elsewhere.stderr
    assert f"pid {killed.pid}" in elsewhere.stderr

    s3fs_client.pipe_file(lock, json.dumps(left).encode())
    here = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert here.returncode == 0, here.stderr
    assert json.loads(here.stdout)["found"] == RUNS
    assert not s3fs_client.exists(lock)  # released


def test_an_s3_lock_is_aged_by_the_servers_clock(s3_bucket: str, s3_server: str,
                                                monkeypatch):
    # A machine whose clock ran ten minutes ahead of S3's read every lock as stale, and took
    # over the lock of a grade still writing
    from datetime import datetime, timedelta

    from pipeline import store as store_module

    class Ahead(datetime):  # this machine's clock, an hour ahead of the server's
        @classmethod
        def now(cls, tz=None):
            return datetime.now(tz) + timedelta(hours=1)

    holder = ResultStore(f"s3://{s3_bucket}/results-skew", s3_server)
    other = ResultStore(f"s3://{s3_bucket}/results-skew", s3_server)
    assert other.lock_held() is False
    with holder.lock():
        monkeypatch.setattr(store_module, "datetime", Ahead)
        assert other.lock_held() is True
        with pytest.raises(ResultsLocked, match="being written by another"), other.lock():
            pass
    assert other.lock_held() is False


def test_s3_results_leftovers_of_an_uncommitted_batch_are_found_and_dropped(
        runs_bucket: str, s3_bucket: str, s3_server: str, s3fs_client):
    results = f"s3://{s3_bucket}/results"
    done = CliRunner().invoke(app, ["grade", runs_bucket, "--out", results, "--endpoint-url",
                                    s3_server, "--batch-size", "5", "--json"])
    assert done.exit_code == 0, done.output
    store = ResultStore(results, s3_server)
    committed = store.table_files("runs")
    known = store.fingerprints({json.loads(done.output)["grader_id"]})
    assert len(committed) >= 2 and len(known) == RUNS
    # a publish killed half way: parts of a batch that has no commit marker
    ghost = "20991231-235959-ghost"
    for table in ("runs", "checks"):
        source = next(p for p in s3fs_client.find(f"{s3_bucket}/results/{table}")
                      if p.endswith(".parquet"))
        grader_dir = source.split("/batch=", 1)[0]
        s3fs_client.copy(source, f"{grader_dir}/batch={ghost}/part-0.parquet")
    assert store.table_files("runs") == committed  # readers never see it
    assert store.fingerprints({json.loads(done.output)["grader_id"]}) == known
    assert store.discard_uncommitted() == [ghost]
    assert not [p for p in s3fs_client.find(f"{s3_bucket}/results") if ghost in p]
    assert store.table_files("runs") == committed and store.discard_uncommitted() == []


def test_a_first_grade_on_s3_reads_a_sample_of_the_runs_found_first(
        runs_bucket: str, s3_bucket: str, s3_server: str, s3fs_client, monkeypatch):
    import pipeline.grade as grade
    from pipeline.checks import clause_analysis, default_grader

    def graded(results: str) -> tuple[list[str], dict]:
        clause_analysis._READ.clear()  # as a fresh process: only kept readings to go by
        summary = grade.grade_runs(runs_bucket, f"s3://{s3_bucket}/{results}", default_grader(),
                                   workers=1, batch_size=2, endpoint_url=s3_server)
        kept = s3fs_client.ls(f"{s3_bucket}/{results}/_readings/{readings_version()}")
        return kept, {k: v for k, v in summary.as_dict().items()
                      if k not in ("grade_id", "results", "batches", "elapsed_s")}

    try:
        # two runs a batch: each batch that meets a program first reads its clauses
        monkeypatch.setattr(grade, "PREREAD_RUNS", 0)
        apart, without = graded("apart")
        assert len(apart) > 1
        # with a sample of the runs found first read first, in one reading, no batch reads
        monkeypatch.setattr(grade, "PREREAD_RUNS", 64)
        first, summary = graded("first")
        assert len(first) == 1
        assert summary == without and summary["found"] == RUNS
    finally:
        clause_analysis._READ.clear()


def test_results_kept_under_the_runs_prefix_are_not_runs(runs_bucket: str, s3_server: str):
    # The same on S3: results in a folder under the runs prefix (whose `_commits/` keys are
    # listed before its reports), then at the runs prefix itself (its folders listed apart),
    # each graded twice; results given as RUNS say so.
    cli = CliRunner()
    for out in (f"{runs_bucket}/results", runs_bucket):
        for turn in range(2):
            done = cli.invoke(app, ["grade", runs_bucket, "--out", out, "--endpoint-url",
                                    s3_server, "--workers", "1", "--json"])
            assert done.exit_code == 0, done.output
            summary = json.loads(done.stdout)
            assert (summary["found"], summary["skipped"]) == (RUNS, RUNS if turn else 0)
    assert list(Bucket(runs_bucket + "/results", s3_server).discover()) == []
    given = cli.invoke(app, ["grade", f"{runs_bucket}/results", "--out",
                             f"{runs_bucket}/other", "--endpoint-url", s3_server])
    assert given.exit_code == 2, given.output
    # and a run's own prefix given as RUNS says which to give
    run = next(ref.uri for ref in Bucket(runs_bucket, s3_server).discover()
               if "program.md" in ref.files)
    one = cli.invoke(app, ["grade", run, "--out", f"{runs_bucket}/other", "--endpoint-url",
                           s3_server])
    assert one.exit_code == 2, one.output
    assert f"Give the folder that holds it: {run.rsplit('/', 1)[0]}" in " ".join(
        one.stderr.split())


def test_misplaced_s3_roots_and_results_are_usage_errors_with_no_summary(
        runs_bucket: str, s3_server: str):
    cli = CliRunner()

    def grade(runs: str, out: str):
        return cli.invoke(app, ["grade", runs, "--out", out, "--endpoint-url", s3_server,
                                "--workers", "1", "--json"])

    run = next(ref.uri for ref in Bucket(runs_bucket, s3_server).discover()
               if "program.md" in ref.files)
    # a run's prefix as RUNS: found only once listed, and answered as a usage error alone
    # (before: a whole summary on stdout, and the grade logged `finished`)
    one = grade(run, f"{runs_bucket}/other")
    assert one.exit_code == exit_codes.USAGE, one.output
    assert one.stdout == "" and "is itself a run folder" in one.stderr
    (record,) = read_grades(f"{runs_bucket}/other", s3_server).to_dicts()
    assert record["status"] == "failed" and "is itself a run folder" in record["error"]
    # results kept inside a run's prefix: that run would change at every grade (before:
    # accepted on S3, refused only locally)
    inside = grade(runs_bucket, f"{run}/results")
    assert inside.exit_code == exit_codes.USAGE, inside.output
    assert "would be graded as part of that run" in " ".join(inside.stderr.split())
    assert not Bucket(f"{run}/results", s3_server).exists()
    # an object (a key) as RUNS: no run under it, ever (before: exit 0, "no run found")
    key = f"{run}/program.md"
    obj = grade(key, f"{runs_bucket}/third")
    assert obj.exit_code == exit_codes.USAGE, obj.output
    assert "is an object, not a prefix of objects" in " ".join(obj.stderr.split())


def test_a_results_bucket_that_does_not_exist_is_named(runs_bucket: str, s3_server: str):
    # the readers advised running a grade first, and a grade into it failed saying "The
    # specified bucket does not exist", not which of the two
    cli = CliRunner()
    missing = "s3://no-such-bucket-here/res"
    said = "bucket no-such-bucket-here does not exist (or the endpoint is no S3 service)"
    for args in (["sql", missing, "select 1"], ["grades", missing], ["trend", missing],
                 ["compact", missing],
                 ["grade", runs_bucket, "--out", missing, "--workers", "1"]):
        result = cli.invoke(app, [*args, "--endpoint-url", s3_server])
        assert result.exit_code == exit_codes.USAGE, result.output
        assert said in " ".join(result.output.split()), (args, result.output)
    # `catalog` takes --endpoint-url as every command does (it was "No such option")
    catalog = cli.invoke(app, ["catalog", missing, "--endpoint-url", s3_server])
    assert catalog.exit_code == exit_codes.USAGE, catalog.output
    assert "where results have no catalog file" in " ".join(catalog.output.split())


def test_an_s3_runs_prefix_given_as_results_is_named_as_runs(runs_bucket: str,
                                                             s3_bucket: str, s3_server: str,
                                                             s3fs_client):
    # Local folders of runs given where results are expected were named as such; on S3 the
    # readers advised running a first grade into the runs prefix (results mixed into runs)
    cli = CliRunner()
    for args in (["sql", runs_bucket, "select 1"], ["grades", runs_bucket],
                 ["trend", runs_bucket], ["compact", runs_bucket]):
        result = cli.invoke(app, [*args, "--endpoint-url", s3_server])
        assert result.exit_code == exit_codes.USAGE, result.output
        said = " ".join(result.output.split())
        assert f"{runs_bucket} holds runs, not results: grade them with `rungrade grade " \
               f"{runs_bucket} --out RESULTS`" in said, (args, said)
    # a prefix with no run below it keeps the usual advice: empty (results still to be
    # written), or holding a note, in a folder that is itself named like a run
    s3fs_client.pipe(f"{s3_bucket}/kept/20261112-000000-old/results/NOTES.txt", b"notes")
    for prefix in ("nothing-yet", "kept/20261112-000000-old/results"):
        empty = cli.invoke(app, ["sql", f"s3://{s3_bucket}/{prefix}", "select 1",
                                 "--endpoint-url", s3_server])
        assert empty.exit_code == exit_codes.USAGE, empty.output
        assert "holds runs" not in empty.output and "rungrade grade" in empty.output


def test_results_kept_among_run_folders_listed_in_ranges_are_not_runs(s3_bucket: str,
                                                                       s3_server: str,
                                                                       s3fs_client):
    # A prefix mostly of run folders (a program's `.prose/runs/`) is listed in ranges of
    # consecutive folders. With results kept at the same prefix, a range can start at one of
    # their table folders, after `_commits/`, and still list their `reports/` (named after
    # runs): those are passed over all the same.
    from pipeline.sources import bucket as bucket_module

    prefix = f"{s3_bucket}/ranged"
    runs = [f"20261112-0000{k:02d}-r{k}" for k in range(60)]
    tables = ["bindings", "checks", "clause_verdicts", "clauses", "refusals", "run_scores",
              "runs", "service_scores", "services"]
    keys = {f"{prefix}/{run}/program.md": b"# p" for run in runs}
    keys |= {f"{prefix}/{t}/grader=g/batch=b/part-0.parquet": b"" for t in tables}
    keys |= {f"{prefix}/_commits/b.json": b"{}", f"{prefix}/catalog.duckdb": b""}
    keys |= {f"{prefix}/reports/{run}.json": b"{}" for run in runs[:3]}
    s3fs_client.pipe(keys)
    bucket = Bucket(f"s3://{prefix}", s3_server)
    folders = bucket._s3_level()[3]
    size = max(bucket_module.FOLDERS_PER_RANGE, -(-(len(runs) + len(tables))
                                                  // bucket_module.RANGES_AT_MOST))
    assert size == 64 and len(folders) == 60 + 9 + 2  # a range starts at `refusals/`
    assert sorted(ref.run_id for ref in bucket.discover()) == runs


def graded_in_three_batches(runs_bucket: str, results: str, s3_server: str) -> dict:
    """Grade the runs bucket into `results` in batches of three runs; its JSON summary."""
    return json.loads(CliRunner().invoke(app, [
        "grade", runs_bucket, "--out", results, "--endpoint-url", s3_server,
        "--batch-size", "3", "--workers", "1", "--json"]).output)


def test_compact_s3_results(runs_bucket: str, s3_bucket: str, s3_server: str, s3fs_client):
    from test_compact import assert_same, views

    results = f"s3://{s3_bucket}/compacted"
    cli = CliRunner()
    first = graded_in_three_batches(runs_bucket, results, s3_server)
    assert len(first["batches"]) == 3
    before = views(results, s3_server)

    done = cli.invoke(app, ["compact", results, "--endpoint-url", s3_server])
    assert done.exit_code == 0, done.output
    assert "3 batches → 1" in done.stdout
    assert_same(before, views(results, s3_server))
    parts = [p for p in s3fs_client.find(f"{s3_bucket}/compacted") if "/grader=" in p
             and p.endswith(".parquet") and "/reports/" not in p]
    assert len(parts) == len({p.rsplit("/batch=", 1)[0] for p in parts})  # one per table
    assert len(s3fs_client.ls(f"{s3_bucket}/compacted/_commits")) == 1
    assert not s3fs_client.exists(f"{s3_bucket}/compacted/_staging")
    # the grade log names the three batches and, now, the compacted batch that holds them
    (compacted,) = (c["batch_id"] for c in ResultStore(results, s3_server).commits())
    logged = read_grades(results, s3_server)
    assert logged.select("batches", "batches_now").rows() == [(first["batches"], [compacted])]
    assert connect(results, s3_server).sql("select batches_now from grades").fetchall() == [
        ([compacted],)]
    again = graded_in_three_batches(runs_bucket, results, s3_server)
    assert (again["skipped"], again["batches"]) == (RUNS, [])


def test_queries_on_s3_views_only_read_the_committed_parts(runs_bucket: str, s3_bucket: str,
                                                          s3_server: str):
    """The views name each committed part, DuckDB takes the parts' sizes from the listing the
    catalog made, and each part is read whole once: queries then ask S3 nothing."""
    import duckdb

    from pipeline.catalog import create_views

    results = f"s3://{s3_bucket}/queried"
    first = graded_in_three_batches(runs_bucket, results, s3_server)
    assert len(first["batches"]) == 3
    store = ResultStore(results, s3_server)
    con = duckdb.connect()
    create_views(con, store)
    asked: list[str] = []

    def count(model, **_) -> None:
        asked.append(model.name)

    # DuckDB reaches S3 only through the filesystem the views were made with
    store.query_filesystem().s3.meta.events.register("before-call.s3", count)
    scores = con.sql("select count(*) from run_scores").fetchall()
    con.sql("select * from version_summary").pl()  # a mart: several tables in one query
    # the grade log as the connection opened
    log = con.sql("select grade_id, status, graded from grades").fetchall()
    assert scores == [(first["graded"],)]
    assert log == [(first["grade_id"], "finished", first["graded"])]
    assert not asked, asked


def test_query_filesystem_keeps_the_parts_it_read_within_its_budget(
        runs_bucket: str, s3_bucket: str, s3_server: str, monkeypatch):
    from pipeline import store as store_module

    results = f"s3://{s3_bucket}/kept"
    graded_in_three_batches(runs_bucket, results, s3_server)
    store = ResultStore(results, s3_server)
    parts = store.table_files("checks", store.committed_batches())
    sizes = [store.fs.size(part) for part in parts]
    assert len(parts) == 3
    # room for the last two: reading the third has dropped the first
    monkeypatch.setattr(store_module, "PARTS_KEPT_BYTES", sizes[1] + sizes[2])
    fs = store.query_filesystem()
    fs.connect()
    gets: list[str] = []
    fs.s3.meta.events.register("before-parameter-build.s3.GetObject",
                               lambda params, **_: gets.append(params["Key"]))

    def read(part: str) -> bytes:
        with fs.open(part) as handle:
            return handle.read()

    key = [part.split("/", 3)[3] for part in parts]
    assert [read(part) for part in parts] == [store.fs.cat_file(part) for part in parts]
    assert gets == key  # one GET each
    read(parts[2]), read(parts[1])
    assert gets == key  # kept
    read(parts[0])
    assert gets == [*key, key[0]]  # dropped for the third, read again
    # a part larger than a kept part may be is read as any object is, in ranges
    monkeypatch.setattr(store_module, "PART_KEPT_BYTES", min(sizes) - 1)
    gets.clear()
    assert read(parts[1]) == store.fs.cat_file(parts[1]) and len(gets) >= 1


def test_report_of_s3_results(runs_bucket: str, s3_bucket: str, s3_server: str, tmp_path):
    results = f"s3://{s3_bucket}/reported"
    cli = CliRunner()
    first = json.loads(cli.invoke(app, ["grade", runs_bucket, "--out", results,
                                        "--endpoint-url", s3_server, "--json"]).output)
    page = tmp_path / "report.html"
    done = cli.invoke(app, ["report", results, "--endpoint-url", s3_server, "--html", str(page)])
    assert done.exit_code == 0, done.output
    html = page.read_text(encoding="utf-8")
    assert html.count("data:image/png;base64,") == 2  # one grader id: no flip matrix
    grades = re.search(r"<h2>Recent grades</h2>(.*?)</table>", html, re.S).group(1)
    row = re.findall(r"<td[^>]*>([^<]*)</td>", grades.split("<tbody>")[1])
    assert row[1:5] + row[6:8] == ["finished", first["grader_id"], shown(first["elapsed_s"], 1),
                                   str(RUNS), str(first["graded"]), str(first["refused"])]


def test_a_connection_opened_before_a_compaction_on_s3(runs_bucket: str, s3_bucket: str,
                                                       s3_server: str, monkeypatch):
    # Its views name the parts it listed as it opened. Those it keeps still answer once the
    # compaction has removed them; one it must read again, whole or (over PART_KEPT_BYTES)
    # in ranges, says to connect again.
    import duckdb

    from pipeline import store as store_module
    from pipeline.compact import compact

    results = f"s3://{s3_bucket}/outlived"
    graded_in_three_batches(runs_bucket, results, s3_server)
    count = "select count(*) from runs"

    def connected() -> duckdb.DuckDBPyConnection:
        # DuckDB keeps what it read of a file last modified more than a few seconds before
        # and answers from it without asking the file system again: these parts are seconds
        # old on a fast machine and older on a loaded one. What is tested is what a read
        # that reaches the parts says, so DuckDB's own cache is off.
        con = connect(results, s3_server)
        con.execute("set enable_external_file_cache = false")
        return con

    kept = connected()
    monkeypatch.setattr(store_module, "PARTS_KEPT_BYTES", 0)  # one part kept at most
    unkept = connected()
    runs = kept.sql(count).fetchall()
    assert runs == unkept.sql(count).fetchall() == [(RUNS,)]
    kept_at_most = store_module.PART_KEPT_BYTES
    monkeypatch.setattr(store_module, "PART_KEPT_BYTES", 0)  # every part read in ranges
    ranged = connected()
    assert ranged.sql(count).fetchall() == ranged.sql(count).fetchall() == runs
    assert compact(results, s3_server).batches
    gone = (r"removed since this connection was opened \(a compaction merged its batch\): "
            r"connect again")
    with pytest.raises(duckdb.Error, match=gone):
        ranged.sql(count).fetchall()
    monkeypatch.setattr(store_module, "PART_KEPT_BYTES", kept_at_most)
    assert kept.sql(count).fetchall() == runs
    with pytest.raises(duckdb.Error, match=gone):
        unkept.sql(count).fetchall()
    assert connect(results, s3_server).sql(count).fetchall() == runs


def test_a_question_a_compaction_outlived_on_s3_is_asked_again(runs_bucket: str,
                                                               s3_bucket: str,
                                                               s3_server: str, monkeypatch):
    # As `rungrade sql` asks (`catalog.ask`): a compaction between the views being made and
    # the query leaves the query a part that is gone; it is asked again on a new connection.
    from pipeline import store as store_module
    from pipeline.catalog import ask
    from pipeline.compact import compact

    results = f"s3://{s3_bucket}/asked-again"
    graded_in_three_batches(runs_bucket, results, s3_server)
    monkeypatch.setattr(store_module, "PART_KEPT_BYTES", 0)  # every part read again
    asked = []

    def question(con):
        con.execute("set enable_external_file_cache = false")  # (see the test above)
        asked.append(con)
        if len(asked) == 1:
            assert compact(results, s3_server).batches
        return con.sql("select count(*) from runs").fetchall()

    assert ask(results, question, s3_server) == [(RUNS,)]
    assert len(asked) == 2


def test_commands_without_s3_credentials_say_so(runs_bucket: str, s3_bucket: str,
                                                s3_server: str, tmp_path: Path):
    # No credentials where the nightly job runs: `grade` and `compact` said so, but `sql`,
    # `grades`, `trend` and `report` ended in botocore's traceback with exit code 1
    results = f"s3://{s3_bucket}/results-nocreds"
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update(HOME=str(tmp_path), AWS_EC2_METADATA_DISABLED="true")  # no ~/.aws, no role
    rungrade = str(Path(sys.executable).parent / "rungrade")
    # (local runs, results on S3: the results' bucket was said not to exist, exit 2)
    local = tmp_path / "runs"
    write_run(local, "20261112-000001-local")
    for command in (["grade", runs_bucket, "--out", results],
                    ["grade", str(local), "--out", results], ["sql", "select 1", "-r", results],
                    ["grades", results], ["trend", results],
                    ["report", results, "--html", str(tmp_path / "r.html")]):
        done = subprocess.run([rungrade, *command, "--endpoint-url", s3_server], env=env,
                              capture_output=True, text=True, timeout=120)
        said = " ".join(done.stderr.split())
        assert done.returncode == exit_codes.STORAGE, (command, done.stderr)
        assert "Unable to locate credentials" in said and "Traceback" not in done.stderr
        assert "fix the cause (" in said and "credentials" in said.split("fix the cause")[1]


def test_names_xml_and_urls_escape_are_found_read_and_kept_on_s3(tmp_path: Path, s3_bucket: str,
                                                                  s3_server: str, s3fs_client):
    # `&`, `<`, quotes, `+`, `%41` and non-ASCII letters in folder, run and output names: S3
    # lists them escaped for XML, and a read names them in a URL; the runs are graded from the
    # bucket exactly as from the local disk
    root = tmp_path / "runs"
    odd = "a+b %41 c&d 'q' \"dq\" <ü>"
    write_run(root / "team a&b", "20261112-000001-x&y <z>",
              files={f"bindings/writer/{odd}.md": "odd\n"})
    write_run(root / "p+q", "20261112-000002-plus+sign%41")
    # and `*`, `?`, `[`: a file is read by its name, never as a pattern (`x[ab].md` is not
    # `xa.md` nor `xb.md`), though files are read several at once
    write_run(root / "g*", "20261112-000003-glob[ab]?", files={
        "bindings/writer/x[ab].md": "brackets\n", "bindings/writer/xa.md": "a\n",
        "bindings/writer/xb.md": "b\n", "bindings/writer/x*.md": "star\n"})
    s3fs_client.put(str(root) + "/", f"{s3_bucket}/nightly/", recursive=True)
    answers = {}
    for where, options in (("local", [str(root)]),
                           ("s3", [f"s3://{s3_bucket}/nightly", "--endpoint-url", s3_server])):
        result = CliRunner().invoke(app, ["grade", *options, "--out", str(tmp_path / where),
                                          "--json"])
        assert result.exit_code == 0, result.output
        summary = json.loads(result.output)
        bindings = pl.read_parquet(tmp_path / where / "bindings" / "**" / "*.parquet")
        answers[where] = (summary["found"], summary["graded"], sorted(
            bindings.select("run_id", "service", "name", "text").rows()))
    assert answers["s3"] == answers["local"]
    assert answers["s3"][:2] == (3, 3)
    assert ("20261112-000001-x&y <z>", "writer", odd, "odd\n") in answers["s3"][2]
    assert ("20261112-000003-glob[ab]?", "writer", "x[ab]", "brackets\n") in answers["s3"][2]


def test_a_run_refused_after_it_was_graded_loses_its_reports_on_s3(
        tmp_path: Path, s3_bucket: str, s3_server: str, s3fs_client):
    local = tmp_path / "runs"
    write_run(local / "a", "20261112-000001-kept")
    write_run(local / "b", "20261112-000002-refused-later")
    write_run(local / "c", "20261112-000003-refused-first", drop=("program.md",))
    s3fs_client.put(str(local) + "/", f"{s3_bucket}/runs/", recursive=True)
    results = f"{s3_bucket}/results"
    args = ["grade", f"s3://{s3_bucket}/runs", "--out", f"s3://{results}", "--endpoint-url",
            s3_server, "--json", "--workers", "1"]

    def reports() -> list[str]:
        return sorted(p.removeprefix(f"{results}/reports/")
                      for p in s3fs_client.find(f"{results}/reports"))

    first = CliRunner().invoke(app, args)
    assert first.exit_code == 0, first.output
    grader = f"grader={grader_slug(DEFAULT_GRADER_ID)}"
    assert reports() == ["20261112-000001-kept.json", "20261112-000002-refused-later.json",
                         f"{grader}/20261112-000001-kept.json",
                         f"{grader}/20261112-000002-refused-later.json"]
    s3fs_client.rm(f"{s3_bucket}/runs/b/20261112-000002-refused-later/program.md")
    again = CliRunner().invoke(app, args)
    assert again.exit_code == 0, again.output
    assert json.loads(again.output)["refusals"] == {"missing-program": 1}
    assert reports() == ["20261112-000001-kept.json", f"{grader}/20261112-000001-kept.json"]
    assert not s3fs_client.exists(f"{results}/_staging")


def test_removing_a_refused_runs_report_on_s3_reads_its_name_literally(
        tmp_path: Path, s3_bucket: str, s3_server: str, s3fs_client):
    # Run ids hold any character, `*`, `?` and `[` too: the report a refused run held is
    # removed by its very name, never as a pattern that matches other runs' reports.
    local = tmp_path / "runs"
    for run_id in ("20261112-000001-a", "20261112-000001-b", "20261112-000001-?",
                   "20261112-000001-*", "20261112-000001-[ab]"):
        write_run(local / "r", run_id)
    s3fs_client.put(str(local) + "/", f"{s3_bucket}/runs/", recursive=True)
    results = f"{s3_bucket}/results"
    args = ["grade", f"s3://{s3_bucket}/runs", "--out", f"s3://{results}", "--endpoint-url",
            s3_server, "--json", "--workers", "1"]
    assert CliRunner().invoke(app, args).exit_code == 0
    for run_id in ("20261112-000001-?", "20261112-000001-*", "20261112-000001-[ab]"):
        s3fs_client.rm_file(f"{s3_bucket}/runs/r/{run_id}/program.md")
    again = CliRunner().invoke(app, args)
    assert again.exit_code == 0, again.output
    assert json.loads(again.output)["refusals"] == {"missing-program": 3}
    kept = sorted(p.rsplit("/", 1)[1] for p in s3fs_client.find(f"{results}/reports"))
    assert kept == ["20261112-000001-a.json", "20261112-000001-a.json",
                    "20261112-000001-b.json", "20261112-000001-b.json"]


def _take_over(store: ResultStore, s3_server: str, s3fs_client) -> None:
    """What another grade does to a lock whose holder was paused past its expiry: it writes
    the lock object as its own, then rolls the paused grade's batch forward or discards it."""
    s3fs_client.pipe_file(store.path("_lock.json"), json.dumps(
        {"pid": 1, "host": "elsewhere", "since": "later"}).encode())
    ResultStore(store.uri, s3_server).discard_uncommitted()


@pytest.mark.parametrize("paused", ["before the commit", "after the commit marker"])
def test_a_grade_whose_s3_lock_was_taken_over_while_paused_stops_and_says_so(
        paused: str, s3_bucket: str, s3_server: str, s3fs_client, monkeypatch):
    # Paused (a suspended machine) for longer than the lock's expiry, a grade resumes before
    # its heartbeat has noticed. Before the commit, its staged shard was discarded by the
    # grade that took the lock: it wrote a marker naming parts that were gone (its runs
    # counted, their rows lost). After its marker, its reports were rolled forward: it failed
    # on a staged copy gone ("The specified key does not exist", exit 2).
    store = ResultStore(f"s3://{s3_bucket}/paused", s3_server)
    batch, grader_id, attempt = new_batch_id(), DEFAULT_GRADER_ID, "0-abcd"
    with store.lock(), pytest.raises(ResultsLocked, match="taken over by pid 1 on elsewhere"):
        store.stage_part(batch, attempt, grader_id, {}, {"0123abcd.run-1.json": "{}"})
        if paused == "before the commit":
            _take_over(store, s3_server, s3fs_client)
        else:
            put = store._put

            def marker_then_pause(path: str, data: bytes, **kwargs) -> None:
                put(path, data, **kwargs)
                if "/_commits/" in path:
                    _take_over(store, s3_server, s3fs_client)
            monkeypatch.setattr(store, "_put", marker_then_pause)
        store.publish(batch, grader_id, {"runs": 1, "refused": 0}, {attempt})
    committed = s3fs_client.exists(f"{s3_bucket}/paused/_commits/{batch}.json")
    assert committed == (paused != "before the commit")
    assert s3fs_client.exists(f"{s3_bucket}/paused/reports/run-1.json") == committed
    assert not s3fs_client.exists(f"{s3_bucket}/paused/_staging")
