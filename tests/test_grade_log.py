"""The grade log: one record per `grade` in RESULTS/_grades/, read by the `grades` view.

A morning reader asks whether last night's grade ran, finished and saw everything; the
record answers without the scheduler's log. Kills, SIGTERM and store failures are covered in
test_crash_batch.py and test_faults.py, S3 in test_s3_batch.py.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import signal
import socket
import subprocess
import time
from datetime import datetime
from importlib import metadata
from pathlib import Path

import duckdb
import polars as pl
import pyarrow
import pytest
from conftest import RUNGRADE
from test_faults import QUERY_INTERRUPTED

from pipeline import grade
from pipeline.catalog import GRADE_COLUMNS, connect, read_grades
from pipeline.checks import DEFAULT_GRADER_ID, default_grader
from pipeline.compact import compact
from pipeline.grade import InterruptedAfterCommits, grade_runs
from pipeline.store import ResultStore, new_batch_id
from pipeline.synth import synthesize

RUNS = 24


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("logcorpus")
    synthesize(str(root), RUNS, seed=11, workers=1)
    return root


def records(out: Path) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted((out / "_grades").glob("*.json"))]


def grades(out: Path) -> list[dict]:
    return connect(str(out)).sql("select * from grades").pl().to_dicts()


def test_each_grade_leaves_a_record_the_grades_view_reads(corpus: Path, tmp_path: Path,
                                                          monkeypatch):
    monkeypatch.setattr(grade, "GRADE_LOG_EVERY_S", 0.0)  # the record after every batch
    out = tmp_path / "results"
    seen: list[dict] = []

    def should_stop() -> bool:  # asked before each batch starts and before it is published
        seen.extend(r for r in records(out) if r["status"] == "running")
        return False

    first = grade_runs(str(corpus), str(out), default_grader(), batch_size=10, workers=2,
                       should_stop=should_stop)
    second = grade_runs(str(corpus), str(out), default_grader(), batch_size=10, workers=2)

    rows = grades(out)
    assert [r["grade_id"] for r in rows] == [first.grade_id, second.grade_id]
    for row, summary in zip(rows, (first, second), strict=True):
        assert row["status"] == "finished" and row["error"] is None
        assert row["runs_uri"] == str(corpus) and row["results_uri"] == str(out)
        assert row["grader_id"] == default_grader().grader_id and row["full"] is False
        counts = {k: row[k] for k in ("found", "new", "changed", "unchanged", "skipped",
                                      "graded", "refused")}
        assert counts == {k: getattr(summary, k) for k in counts}
        assert row["found"] == row["graded"] + row["refused"] + row["skipped"] == RUNS
        assert row["batches"] == summary.batches
        assert row["refusals"] == dict(summary.refusals)  # (a DuckDB map: a dict in polars)
        assert row["started_at"] < row["finished_at"]
        assert row["elapsed_s"] == round(summary.elapsed_s, 2)
        assert 0 < (row["finished_at"] - row["started_at"]).total_seconds() < 120
        # what the verdicts rest on besides the grader id: this interpreter and these libraries
        assert row["versions"] == {
            "python": platform.python_version(), "polars": pl.__version__,
            "duckdb": duckdb.__version__, "pyarrow": pyarrow.__version__,
            "rungrade": metadata.version("rungrade")}
    assert (rows[0]["new"], rows[0]["graded"] + rows[0]["refused"], len(rows[0]["batches"])) == (
        RUNS, RUNS, 3)
    assert (rows[1]["skipped"], rows[1]["batches"]) == (RUNS, [])  # nothing to grade: a record
    assert rows[0]["mean_overall_score"] == pytest.approx(first.mean_score, abs=0.01)

    # while it ran, the record said so, and grew with each committed batch
    assert seen and all(r["grade_id"] == first.grade_id and r["finished_at"] is None
                        for r in seen)
    assert sorted({len(r["batches"]) for r in seen}) == [0, 1, 2]
    assert seen[-1]["batches"] == first.batches[:2]
    # the file is the --json summary, status and times added
    record, summary = records(out)[0], first.as_dict()
    summary.update(runs_uri=summary.pop("runs"), results_uri=summary.pop("results"))
    assert {k: record[k] for k in summary} == summary
    assert set(record) - set(summary) == {"status", "started_at", "finished_at", "error"}
    assert datetime.fromisoformat(record["started_at"]).tzinfo is not None

    # a record written before grades noted their versions reads as null, the others as before
    del record["versions"]
    ResultStore(str(out)).log_grade(record)
    assert [r["versions"] is None for r in grades(out)] == [True, False]


def test_a_grade_interrupted_in_this_process_says_so(corpus: Path, tmp_path: Path):
    out = tmp_path / "results"

    def ctrl_c() -> bool:  # Ctrl-C lands in the main thread between two batches
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        grade_runs(str(corpus), str(out), default_grader(), batch_size=10, workers=1,
                   should_stop=ctrl_c)
    (record,) = records(out)
    assert record["status"] == "interrupted" and record["finished_at"] is not None
    assert record["found"] > 0 and record["batches"] == []


def test_a_grade_whose_catalog_query_ctrl_c_stopped_says_interrupted(corpus: Path,
                                                                      tmp_path: Path,
                                                                      monkeypatch):
    # Ctrl-C while DuckDB writes the catalog: DuckDB raises its own error in place of
    # KeyboardInterrupt, and the record said the grade failed
    out = tmp_path / "results"

    def ctrl_c_midway(store):
        raise QUERY_INTERRUPTED

    monkeypatch.setattr(grade, "write_catalog", ctrl_c_midway)
    with pytest.raises(InterruptedAfterCommits) as stopped:  # (every batch is committed)
        grade_runs(str(corpus), str(out), default_grader(), workers=1)
    assert stopped.value.__cause__ is QUERY_INTERRUPTED
    (record,) = records(out)
    assert (record["status"], record["error"]) == ("interrupted", None)
    assert record["batches"]  # (committed before the catalog is written)


def test_results_from_before_the_log_have_an_empty_grades_view(corpus: Path, tmp_path: Path):
    out = tmp_path / "results"
    grade_runs(str(corpus), str(out), default_grader(), batch_size=50, workers=1)
    shutil.rmtree(out / "_grades")
    con = connect(str(out))
    empty = con.sql("select * from grades").pl()
    assert empty.is_empty() and empty.columns == list(GRADE_COLUMNS)
    assert con.sql("select count(*) from runs").fetchall() == [(RUNS,)]
    # the next grade starts the log; the earlier grades are simply not in it
    again = grade_runs(str(corpus), str(out), default_grader(), batch_size=50, workers=1)
    assert [r["grade_id"] for r in grades(out)] == [again.grade_id]


def test_a_record_left_running_by_a_dead_grade_is_closed_by_the_next(corpus: Path,
                                                                     tmp_path: Path):
    # The record of a grade killed outright stays `running` (a kill -9 leaves no time to
    # write; test_crash_batch kills a real grade). Here such a record is written by hand.
    out = tmp_path / "results"
    first = grade_runs(str(corpus), str(out), default_grader(), batch_size=50, workers=1)
    store = ResultStore(str(out))
    dead = {**records(out)[0], "grade_id": new_batch_id(), "status": "running",
            "finished_at": None}
    store.log_grade(dead)
    second = grade_runs(str(corpus), str(out), default_grader(), batch_size=50, workers=1)
    rows = {r["grade_id"]: r for r in grades(out)}
    assert [rows[g]["status"] for g in (first.grade_id, dead["grade_id"], second.grade_id)] == [
        "finished", "interrupted", "finished"]
    assert rows[dead["grade_id"]]["found"] == first.found  # the rest kept as it was
    assert rows[dead["grade_id"]]["finished_at"] is None  # (when it ended is not known)


def test_rungrade_grades_tells_of_a_grade_that_ran_with_other_versions(corpus: Path,
                                                                       tmp_path: Path):
    from typer.testing import CliRunner

    from pipeline.cli import app

    out = tmp_path / "results"
    grade_runs(str(corpus), str(out), default_grader(), batch_size=50, workers=1)
    store, (first,) = ResultStore(str(out)), records(out)
    # later grades, written by hand: one with the same versions, one with another polars, one
    # from before grades noted their versions, then one with the first's versions again
    same = {**first, "grade_id": new_batch_id()}
    other = {**first, "grade_id": new_batch_id(),
             "versions": {**first["versions"], "polars": "0.0.1"}}
    unnoted = {k: v for k, v in first.items() if k != "versions"} | {"grade_id": new_batch_id()}
    back = {**first, "grade_id": new_batch_id()}
    for record in (same, other, unnoted, back):
        store.log_grade(record)

    shown = CliRunner().invoke(app, ["grades", str(out)])
    assert shown.exit_code == 0, shown.output
    told = [line for line in shown.stderr.splitlines() if "other versions" in line]
    polars_now = first["versions"]["polars"]
    assert [line.split()[0] for line in told] == [other["grade_id"], back["grade_id"]]
    assert f"polars {polars_now} → 0.0.1;" in told[0] and f"polars 0.0.1 → {polars_now};" in told[1]
    # only the grades shown are told of
    shown = CliRunner().invoke(app, ["grades", str(out), "--last", "1"])
    assert [line.split()[0] for line in shown.stderr.splitlines()
            if "other versions" in line] == [back["grade_id"]]


def shown_statuses(out: Path) -> list[str]:
    """The status column of `rungrade grades OUT` (each interrupted grade told of on stderr)."""
    from typer.testing import CliRunner

    from pipeline.cli import app

    shown = CliRunner().invoke(app, ["grades", str(out)])
    assert shown.exit_code == 0, shown.output
    statuses = [line.split()[2] for line in shown.stdout.splitlines() if line.startswith(" 20")]
    told = [line.split()[0] for line in shown.stderr.splitlines() if "was interrupted" in line]
    assert len(told) == statuses.count("interrupted"), shown.stderr
    return statuses


def _grading(corpus: Path, out: Path, workers: int) -> subprocess.Popen:
    """A grade of `corpus` into `out`, in batches of 2, running in the background."""
    return subprocess.Popen([RUNGRADE, "grade", str(corpus), "--out", str(out),
                             "--batch-size", "2", "--workers", str(workers)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _wait_for(proc: subprocess.Popen, ready) -> None:
    """Until `ready()`, while `proc` runs (a minute at most)."""
    end = time.monotonic() + 60
    while not ready():
        assert proc.poll() is None and time.monotonic() < end
        time.sleep(0.002)


def test_a_killed_grade_reads_interrupted_once_nobody_holds_the_lock(corpus: Path,
                                                                      tmp_path: Path):
    # A grade frozen (SIGSTOP) mid-run still holds the lock: `running`. Killed, nobody does:
    # `rungrade grades` says `interrupted` at once, while its record says `running` until
    # the next grade (or a compaction) closes it.
    out = tmp_path / "results"
    proc = _grading(corpus, out, workers=2)
    try:
        _wait_for(proc, lambda: (out / "_grades").is_dir() and records(out))
        os.kill(proc.pid, signal.SIGSTOP)  # (the record is written once it holds the lock)
        store = ResultStore(str(out))
        assert records(out)[0]["status"] == "running" and store.lock_held() is True
        assert read_grades(str(out))["status"].to_list() == ["running"]
        assert shown_statuses(out) == ["running"]
    finally:
        proc.kill()
        proc.wait()
    assert records(out)[0]["status"] == "running"  # as the kill left it
    assert store.lock_held() is False
    assert read_grades(str(out))["status"].to_list() == ["interrupted"]
    assert shown_statuses(out) == ["interrupted"]
    # a grade that finished between the look at the lock and the second reading of its
    # record reads as it ended
    record = records(out)[0]
    store.log_grade({**record, "status": "finished"})
    assert read_grades(str(out))["status"].to_list() == ["finished"]


def test_a_killed_grades_record_is_closed_with_every_batch_it_committed(corpus: Path,
                                                                        tmp_path: Path):
    # Its record is rewritten at most once a second: killed, it lagged behind its commits,
    # and the next grade closed it as it was ("0 batches" where some were committed).
    out = tmp_path / "results"
    proc = _grading(corpus, out, workers=1)
    try:
        _wait_for(proc, lambda: len(list((out / "_commits").glob("*.json"))) >= 3)
    finally:
        proc.kill()
        proc.wait()
    killed = records(out)[0]["grade_id"]
    mine = [c for c in ResultStore(str(out)).commits() if c["grade_id"] == killed]
    assert len(mine) >= 3
    # before then, the log (`rungrade grades`, the view's reader) tells what it committed,
    # as the record will say once closed (it told what the lagging record said)
    (shown,) = read_grades(str(out)).to_dicts()
    assert shown["status"] == "interrupted"
    assert shown["batches"] == shown["batches_now"] == sorted(c["batch_id"] for c in mine)
    assert (shown["graded"], shown["refused"]) == (
        sum(c["runs"] - c["refused"] for c in mine), sum(c["refused"] for c in mine))
    # it found at least the runs it graded (the record's count lagged as the rest did)
    assert shown["found"] >= shown["skipped"] + shown["graded"] + shown["refused"]
    from typer.testing import CliRunner

    from pipeline.cli import app

    # as CSV (`rungrade grades --out log.csv`): the lists as JSON text, as for any record
    # (it ended in a polars error building a list into a text column)
    (flat,) = read_grades(str(out), flat=True).to_dicts()
    assert json.loads(flat["batches"]) == shown["batches"]
    assert CliRunner().invoke(app, ["grades", str(out), "--out",
                                    str(tmp_path / "log.csv")]).exit_code == 0
    assert pl.read_csv(tmp_path / "log.csv")["status"].to_list() == ["interrupted"]
    grade_runs(str(corpus), str(out), default_grader(), workers=1)  # closes the record
    closed = {r["grade_id"]: r for r in records(out)}[killed]
    assert closed["status"] == "interrupted"
    assert closed["batches"] == sorted(c["batch_id"] for c in mine)
    assert closed["graded"] + closed["refused"] == sum(c["runs"] for c in mine)
    assert closed["refused"] == sum(c["refused"] for c in mine)


def test_a_running_record_stays_running_where_the_lock_cannot_tell(corpus: Path,
                                                                    tmp_path: Path):
    # Results shared with another machine, whose grade holds the lock: this machine cannot
    # see that process, so the record is shown as written; so for a lock it cannot read.
    out = tmp_path / "results"
    grade_runs(str(corpus), str(out), default_grader(), batch_size=50, workers=1)
    store = ResultStore(str(out))
    store.log_grade({**records(out)[0], "grade_id": new_batch_id(), "status": "running",
                     "finished_at": None})
    lock = out / "_lock"
    lock.write_text(json.dumps({"pid": os.getpid(), "host": "another-machine"}))
    assert store.lock_held() is None
    assert read_grades(str(out))["status"].to_list() == ["finished", "running"]
    lock.write_text(json.dumps({"pid": os.getpid(), "host": socket.gethostname()}))
    assert store.lock_held() is True  # (this process: alive)
    lock.unlink()
    lock.mkdir()  # (a folder where the lock file goes: it cannot be read)
    assert store.lock_held() is None
    assert read_grades(str(out))["status"].to_list() == ["finished", "running"]
    lock.rmdir()
    assert store.lock_held() is False
    assert read_grades(str(out))["status"].to_list() == ["finished", "interrupted"]


def test_compaction_closes_a_record_left_running(corpus: Path, tmp_path: Path):
    out = tmp_path / "results"
    for _ in range(2):  # (two batches of one grader id: something to compact)
        grade_runs(str(corpus), str(out), default_grader(), batch_size=50, workers=1,
                   full=True)
    store = ResultStore(str(out))
    dead = {**records(out)[-1], "grade_id": new_batch_id(), "status": "running",
            "finished_at": None}
    store.log_grade(dead)
    compact(str(out))
    assert [r["status"] for r in records(out)] == ["finished", "finished", "interrupted"]


def test_the_grades_command_shows_the_log(corpus: Path, tmp_path: Path):
    from typer.testing import CliRunner

    from pipeline.cli import app

    out = tmp_path / "results"
    cli = CliRunner()
    missing = cli.invoke(app, ["grades", str(out)])
    assert missing.exit_code == 2 and "holds no grade log" in missing.output
    first = grade_runs(str(corpus), str(out), default_grader(), batch_size=50, workers=1)
    second = grade_runs(str(corpus), str(out), default_grader(), batch_size=50, workers=1)
    # a grade that failed and one that could not list a folder, as their records say
    store = ResultStore(str(out))
    base = records(out)[1]
    store.log_grade({**base, "grade_id": new_batch_id(), "status": "failed",
                     "error": "OSError: [Errno 28] No space left on device"})
    denied = [{"path": "/runs/team-b", "error": "[Errno 13] Permission denied"}]
    store.log_grade({**base, "grade_id": new_batch_id(), "unlisted": denied})
    store.log_grade({**base, "grade_id": new_batch_id(), "status": "stopped",
                     "grader_id": "acme.nightly.grader/v2"})

    shown = cli.invoke(app, ["grades", str(out), "--out", str(tmp_path / "log.csv")])
    assert shown.exit_code == 0, shown.output
    rows = [line.split() for line in shown.stdout.splitlines() if line.startswith(" 20")]
    started = first.grade_id[:4]  # (the table shows the start, not the id)
    ours = DEFAULT_GRADER_ID
    assert [row[2:] for row in rows] == [
        ["finished", ours, f"{first.elapsed_s:.2f}", str(RUNS), "0", str(first.graded),
         str(first.refused), "0"],
        ["finished", ours, f"{second.elapsed_s:.2f}", str(RUNS), str(RUNS), "0", "0", "0"],
        ["failed", ours, f"{second.elapsed_s:.2f}", str(RUNS), str(RUNS), "0", "0", "0"],
        ["finished", ours, f"{second.elapsed_s:.2f}", str(RUNS), str(RUNS), "0", "0", "1"],
        ["stopped", "acme.nightly.grader/v2", f"{second.elapsed_s:.2f}", str(RUNS),
         str(RUNS), "0", "0", "0"]]
    assert all(row[0].startswith(started) for row in rows)
    assert "failed: OSError: [Errno 28] No space left on device" in shown.stderr
    assert "could not list: /runs/team-b ([Errno 13] Permission denied)" in shown.stderr
    assert "was stopped by SIGTERM at a batch boundary" in shown.stderr
    csv = pl.read_csv(tmp_path / "log.csv")
    assert csv["grade_id"].to_list()[:2] == [first.grade_id, second.grade_id]
    assert json.loads(csv["refusals"][0]) == dict(first.refusals)
    assert json.loads(csv["unlisted"][3]) == denied

    said = " ".join(shown.stderr.split())
    assert "at a batch boundary: the batches it committed stand; the next grade of the same " \
           "runs grades the rest" in said

    last = cli.invoke(app, ["grades", str(out), "--last", "1"])
    assert [line.split()[2] for line in last.stdout.splitlines() if line.startswith(" 20")] == [
        "stopped"] and "the last 1 of 5 grades" in last.stdout
    # once a later grade has run, the stopped one's rest was that grade's to do: "the next
    # grade grades the rest" was said for good
    store.log_grade({**base, "grade_id": new_batch_id()})
    again = " ".join(cli.invoke(app, ["grades", str(out)]).stderr.split())
    assert "the batches it committed stand; a later grade has run since" in again
    assert "grades the rest" not in again
