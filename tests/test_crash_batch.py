"""Crash safety and the results lock, with real `rungrade grade` processes.

A grade killed with SIGKILL at any moment must leave every committed batch readable and
byte-for-byte unchanged; the next grade finishes the work and every run appears exactly once.
A second grade on the same results stops at once with exit code 3.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import polars as pl
import pytest
from conftest import RUNGRADE
from nightly_changes import change_night, graded_state

from pipeline import exit_codes
from pipeline import store as store_module
from pipeline.catalog import connect
from pipeline.checks import default_grader
from pipeline.grade import grade_runs
from pipeline.store import ResultsLocked, ResultStore
from pipeline.synth import synthesize

RUNS = 120


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("crashcorpus")
    synthesize(str(root), RUNS, seed=3, workers=1)
    return root


def _start(runs: Path, out: Path, *extra: str) -> subprocess.Popen:
    return subprocess.Popen([RUNGRADE, "grade", str(runs), "--out", str(out), "--json",
                             "--workers", "2", *extra],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _wait_for(predicate, timeout: float = 60.0) -> None:
    end = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > end:
            raise AssertionError("timed out")
        time.sleep(0.02)


def _committed(out: Path) -> dict[Path, bytes]:
    """Every file of every committed batch (parts and markers), with its bytes."""
    store = ResultStore(str(out))
    batches = store.committed_batches()
    files = {out / "_commits" / f"{b}.json" for b in batches}
    for part in out.glob("*/grader=*/batch=*/*.parquet"):
        if part.parent.name.removeprefix("batch=") in batches:
            files.add(part)
    return {path: path.read_bytes() for path in files}


def _check_views(out: Path, expected_runs: int | None = None) -> int:
    """The catalog reads; no run and no clause appears twice. Returns the number of runs."""
    con = connect(str(out))
    total, distinct = con.sql("select count(*), count(distinct run_uri) from runs").fetchall()[0]
    assert total == distinct
    for table, key in (("clause_verdicts", "run_uri, service, clause_id"),
                       ("service_scores", "run_uri, service"), ("run_scores", "run_uri"),
                       ("refusals", "run_uri")):
        dupes = con.sql(f"select {key}, count(*) n from {table} group by all having n > 1").pl()
        assert dupes.is_empty(), (table, dupes)
    marker_runs = sum(c["runs"] for c in ResultStore(str(out)).commits())
    assert total == marker_runs
    if expected_runs is not None:
        assert total == expected_runs
    return total


def test_sigkill_mid_batch_keeps_committed_batches_and_rerun_completes(corpus, tmp_path):
    out = tmp_path / "results"
    proc = _start(corpus, out, "--batch-size", "8")
    _wait_for(lambda: len(list((out / "_commits").glob("*.json"))) >= 3
              if (out / "_commits").exists() else False)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert proc.returncode == -signal.SIGKILL
    before = _committed(out)
    graded_before = _check_views(out)  # readable right after the kill
    assert 0 < graded_before < RUNS

    # the killed grade's record still says it runs, with the batches it committed so far
    (killed,) = [json.loads(p.read_text()) for p in (out / "_grades").glob("*.json")]
    assert killed["status"] == "running" and killed["finished_at"] is None
    committed = ResultStore(str(out)).committed_batches()
    assert set(killed["batches"]) <= committed  # (rewritten after a commit, at most every
    # second: the last ones may not be in it yet)

    rerun = subprocess.run([RUNGRADE, "grade", str(corpus), "--out", str(out), "--json",
                            "--batch-size", "40", "--workers", "2"],
                           capture_output=True, text=True, timeout=300)
    assert rerun.returncode == 0, rerun.stderr
    summary = json.loads(rerun.stdout)
    assert summary["found"] == RUNS
    assert summary["skipped"] == graded_before  # committed work is not redone
    assert summary["graded"] + summary["refused"] == RUNS - graded_before
    assert {path: path.read_bytes() for path in before} == before  # unchanged, byte for byte
    _check_views(out, expected_runs=RUNS)
    assert not any((out / "_staging").glob("*")) if (out / "_staging").exists() else True
    # the rerun closed the killed grade's record: the log tells what happened that night
    log = connect(str(out)).sql("select grade_id, status, found, skipped from grades").fetchall()
    # (it found at least the runs it committed: its record's count lagged as the rest did)
    assert log == [(killed["grade_id"], "interrupted", max(killed["found"], graded_before), 0),
                   (summary["grade_id"], "finished", RUNS, graded_before)]


def test_a_grade_killed_alone_leaves_no_worker_holding_its_output(corpus, tmp_path):
    # Killed by itself (`kill -9 PID`, the OOM killer), the grading process is a zombie until
    # its starter reaps it; a starter that reads the output to its end first waited on the
    # workers, which held that output and waited on the zombie (they asked only whether the
    # pid existed): a scheduler's task hung, with half a GB of workers, until killed by hand
    out = tmp_path / "results"
    proc = subprocess.Popen([RUNGRADE, "grade", str(corpus), "--out", str(out), "--json",
                             "--workers", "2", "--batch-size", "8"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        _wait_for(lambda: (out / "_commits").exists() and any((out / "_commits").glob("*.json")))
        os.kill(proc.pid, signal.SIGKILL)  # the grading process only, not its group
        started = time.monotonic()
        _, err = proc.communicate(timeout=30)  # reads to the end, then reaps
        assert time.monotonic() - started < 10
        assert proc.returncode == -signal.SIGKILL
        # multiprocessing's resource tracker removes what the kill left of the pools'
        # semaphores without a warning of it after the grade's end ("There appear to be 5
        # leaked semaphore objects to clean up at shutdown", and the line that warned)
        assert "leaked" not in err and "Warning" not in err, err
        _wait_for(lambda: not _group_alive(proc.pid), timeout=10)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)


def test_sigkill_at_any_moment(corpus, tmp_path):
    # kills land during discovery, grading and publishing; each leaves a consistent store
    out = tmp_path / "results"
    for delay in (0.2, 0.9, 1.6, 2.4, 3.5):
        proc = _start(corpus, out, "--batch-size", "16")
        time.sleep(delay)
        before = _committed(out) if (out / "_commits").exists() else {}
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        if (out / "_commits").exists() and ResultStore(str(out)).commits():
            _check_views(out)
        assert {path: path.read_bytes() for path in before} == before
    final = subprocess.run([RUNGRADE, "grade", str(corpus), "--out", str(out), "--json",
                            "--workers", "2"], capture_output=True, text=True, timeout=300)
    assert final.returncode == 0, final.stderr
    _check_views(out, expected_runs=RUNS)


def test_second_grade_on_same_results_stops_at_once(corpus, tmp_path):
    out = tmp_path / "results"
    first = _start(corpus, out, "--batch-size", "12")  # (ten batches: seconds of work left)
    lock = out / "_lock"
    _wait_for(lambda: lock.exists() and lock.read_text().strip() != "")
    started = time.monotonic()
    second = subprocess.run([RUNGRADE, "grade", str(corpus), "--out", str(out)],
                            capture_output=True, text=True, timeout=60)
    elapsed = time.monotonic() - started
    still_running = first.poll() is None
    assert second.returncode == exit_codes.LOCKED, second.stderr
    assert "being written by another `rungrade grade`" in second.stderr
    assert f"pid {first.pid}" in " ".join(second.stderr.split())
    assert elapsed < 20
    assert still_running  # the first grade was really holding the lock
    stdout, stderr = first.communicate(timeout=300)
    assert first.returncode == 0, stderr
    assert json.loads(stdout)["found"] == RUNS
    _check_views(out, expected_runs=RUNS)
    # once the first is done the lock is free again
    with ResultStore(str(out)).lock():
        pass


def test_local_lock_is_released_when_its_holder_dies(tmp_path):
    out = tmp_path / "results"
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time\nfrom pipeline.store import ResultStore\n"
         f"with ResultStore({str(out)!r}).lock():\n    print('held', flush=True)\n"
         "    time.sleep(60)\n"], stdout=subprocess.PIPE, text=True, cwd=os.getcwd())
    assert holder.stdout.readline().strip() == "held"
    with pytest.raises(ResultsLocked, match=f"pid {holder.pid}"), ResultStore(str(out)).lock():
        pass
    holder.send_signal(signal.SIGKILL)
    holder.wait()
    with ResultStore(str(out)).lock():  # the kernel dropped the dead holder's lock
        pass


def _on_disk(out: Path) -> dict[str, set[str]]:
    """What the results folder holds at a moment: markers and staging folders (by batch),
    committed-place parts and top-level reports (relative paths)."""
    return {
        "markers": {p.stem for p in out.glob("_commits/*.json")},
        "staged": {p.name for p in out.glob("_staging/*")},
        "parts": {str(p.relative_to(out)) for p in out.glob("*/grader=*/batch=*/*.parquet")},
        "reports": {p.name for p in out.glob("reports/*.json")},
    }


def test_a_batch_is_flushed_to_disk_before_its_marker_and_its_reports_before_staging_goes(
        corpus, tmp_path, monkeypatch):
    # A killed process loses nothing the kernel holds; a machine that loses power loses what
    # was not yet on disk. Each flush (the real one runs) is the moment the folder's state is
    # on disk: every batch must have been flushed with all its parts in place and no marker
    # yet, and again with its marker and all its reports in place and its staged copies not
    # yet removed; the marker's own bytes are flushed before it is renamed into place.
    out = tmp_path / "results"
    flushed: list[dict[str, set[str]]] = []
    real = store_module.flush_to_disk

    def flush(path: str) -> None:
        real(path)
        assert Path(path).resolve() == out.resolve()
        flushed.append(_on_disk(out))

    synced: list[tuple[str, bytes]] = []  # (path, bytes) of each file flushed on its own
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        real_fsync(fd)
        path = os.readlink(f"/proc/self/fd/{fd}")
        synced.append((path, Path(path).read_bytes()))

    monkeypatch.setattr(store_module, "flush_to_disk", flush)
    monkeypatch.setattr(os, "fsync", fsync)
    summary = grade_runs(str(corpus), str(out), default_grader(), batch_size=40, workers=1)
    assert summary.graded > 0 and len(summary.batches) >= 3
    final = _on_disk(out)
    assert not final["staged"]
    for batch in summary.batches:
        parts = {p for p in final["parts"] if f"/batch={batch}/" in p}
        runs = pl.read_parquet([out / p for p in parts if p.startswith("runs/")])
        reports = {f"{run_id}.json" for run_id in runs.filter(
            pl.col("status") == "graded")["run_id"]}
        assert parts and reports
        assert any(parts <= s["parts"] and batch not in s["markers"] for s in flushed), batch
        assert any(batch in s["markers"] and reports <= s["reports"] and batch in s["staged"]
                   for s in flushed), batch
        # the marker's bytes reached the disk before its name did: never an empty marker
        marker = out / "_commits" / f"{batch}.json"
        assert any(path.startswith(f"{marker}.tmp-") and data == marker.read_bytes()
                   for path, data in synced), batch


def test_grades_killed_at_random_over_nights_of_changes_equal_one_fresh_grade(tmp_path):
    # Nights of changes, each night's grade killed outright at a random moment (the whole
    # process group, or the main process alone, whose workers are then left to die), and one
    # grade run to its end after the last: the results equal one fresh grade of the last
    # night's runs, rows and reports alike. The property holds wherever a kill lands.
    runs, spare_root, out = tmp_path / "runs", tmp_path / "spare", tmp_path / "nightly"
    synthesize(str(runs), 60, seed=31, workers=1)
    synthesize(str(spare_root), 6, seed=32, workers=1)
    spare = sorted(p for p in spare_root.rglob("2026*") if p.is_dir())
    rnd = random.Random(7)
    for night in range(5):
        if night:
            change_night(runs, spare, rnd)
        grade = subprocess.Popen(
            [RUNGRADE, "grade", str(runs), "--out", str(out), "--json", "--batch-size", "12"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        time.sleep(rnd.uniform(0.2, 2.5))
        if rnd.random() < 0.5:
            os.killpg(grade.pid, signal.SIGKILL)
        else:
            grade.send_signal(signal.SIGKILL)
        grade.wait()
        _wait_for(lambda pid=grade.pid: not _group_alive(pid), timeout=30)  # (its workers: 0.5 s)
    last = subprocess.run([RUNGRADE, "grade", str(runs), "--out", str(out), "--json"],
                          capture_output=True, text=True, timeout=300)
    assert last.returncode == 0, last.stderr
    fresh = tmp_path / "fresh"
    grade_runs(str(runs), str(fresh), default_grader(), workers=1)
    assert graded_state(out) == graded_state(fresh)
    assert not any((out / "_staging").iterdir())  # nothing left staged by a killed grade


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True
