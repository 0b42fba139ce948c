"""A run that kills the worker process grading it (out of memory, a crash in native code) is
refused as internal-error; the other runs of its shard and batch are graded, and the grade
ends normally. Real `rungrade grade` processes with two workers; the death comes from a
grader file (`--grader`), which every worker imports, that ends its worker process when it
grades a run whose folder name says "poison" (a stand-in for a run that exhausts memory).
A shard staged twice (a worker that died mid-shard, or one presumed dead that finishes late)
is committed once: only the attempts whose results the grade took are published."""

from __future__ import annotations

import contextlib
import json
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import RUNGRADE
from test_faults import refusing_writes

from pipeline import exit_codes
from pipeline.catalog import connect
from pipeline.synth import synthesize

RUNS = 30
POISON_GRADER = '''
import multiprocessing
import os

import pipeline.grade as grade
from pipeline.checks import default_grader

_grade_tables = grade.grade_tables


def _dying(source, *args, **kwargs):
    # only in a worker process: the grading process refuses such a run without grading it
    if multiprocessing.parent_process() is not None and any(
            "poison" in uri for uri in source["runs"]["run_uri"].to_list()):
        os._exit(9)
    return _grade_tables(source, *args, **kwargs)


grade.grade_tables = _dying
grader = default_grader("poison.contract.grader/v1")
'''


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("deathcorpus") / "runs"
    synthesize(str(root), RUNS, seed=5, workers=1)
    return root


def _grade(runs: Path, out: Path | str, grader: Path, *extra: str,
           exit_code: int = 0) -> dict | None:
    done = subprocess.run([RUNGRADE, "grade", str(runs), "--out", str(out), "--json",
                           "--workers", "2", "--batch-size", "10", "--grader", str(grader),
                           *extra],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == exit_code, done.stderr[-3000:]
    return json.loads(done.stdout) if exit_code == 0 else None


def test_a_run_that_kills_its_worker_is_refused_and_the_rest_graded(corpus: Path,
                                                                      tmp_path: Path):
    grader = tmp_path / "poison_grader.py"
    grader.write_text(POISON_GRADER)
    clean = _grade(corpus, tmp_path / "clean", grader)  # no poison: a normal grade

    runs = tmp_path / "runs"
    shutil.copytree(corpus, runs, symlinks=True)
    folders = sorted(p for p in runs.glob("*/.prose/runs/*") if p.is_dir())
    victims = [folders[3], folders[17]]  # in two different batches
    poisoned = [v.rename(v.with_name(v.name + "-poison")) for v in victims]
    out = tmp_path / "results"
    got = _grade(runs, out, grader)

    assert got["found"] == RUNS == got["graded"] + got["refused"]
    assert got["refusals"].get("internal-error") == 2
    originals = [corpus / v.relative_to(runs) for v in victims]
    assert got["graded"] == clean["graded"] - sum(
        1 for v in originals if _was_graded(tmp_path / "clean", v))
    con = connect(str(out))
    refused = dict(con.sql("select run_uri, detail from refusals "
                           "where reason = 'internal-error'").fetchall())
    assert sorted(refused) == sorted(str(p) for p in poisoned)
    assert all("worker process grading this run died" in d for d in refused.values())
    # every run once; the others have the verdicts a normal grade gives them
    assert con.sql("select count(*), count(distinct run_uri) from runs").fetchall() == [
        (RUNS, RUNS)]
    mine = con.sql("select run_id, overall_verdict from run_scores order by run_id").fetchall()
    theirs = connect(str(tmp_path / "clean")).sql(
        "select run_id, overall_verdict from run_scores order by run_id").fetchall()
    assert set(mine) <= set(theirs) and len(theirs) - len(mine) <= len(victims)

    again = _grade(runs, out, grader)  # refused runs are skipped until they change
    assert (again["skipped"], again["graded"], again["refused"]) == (RUNS, 0, 0)


def _was_graded(results: Path, run: Path) -> bool:
    con = connect(str(results))
    return con.sql(f"select status from runs where run_uri = '{run}'").fetchall() == [
        ("graded",)]


def test_on_dask_a_run_that_kills_its_worker_is_refused(tmp_path: Path):
    # a cluster of its own that gives up on a task at its first killed worker, so that each
    # halving step costs one worker restart rather than the scheduler's usual four
    import dask
    from distributed import Client, LocalCluster

    import pipeline.grade as grade
    from pipeline.checks import default_grader
    from pipeline.engines import DaskSpec
    from pipeline.grade import grade_runs
    from pipeline.user_grader import load_grader

    runs = tmp_path / "runs"
    synthesize(str(runs), 8, seed=6, workers=1)
    victim = sorted(p for p in runs.glob("*/.prose/runs/*") if p.is_dir())[5]
    poisoned = victim.rename(victim.with_name(victim.name + "-poison"))
    module = tmp_path / "poison_grader.py"
    module.write_text(POISON_GRADER)
    original = grade.grade_tables
    grader = load_grader(module)  # it wraps grade_tables here too (harmless in this process)
    try:
        with dask.config.set({"distributed.scheduler.allowed-failures": 0}), LocalCluster(
                n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                dashboard_address=":0") as cluster, Client(cluster) as client:
            summary = grade_runs(str(runs), str(tmp_path / "results"), grader, batch_size=8,
                                 engine=DaskSpec(scheduler=client.scheduler.address)).as_dict()
    finally:
        grade.grade_tables = original
    assert summary["found"] == 8 == summary["graded"] + summary["refused"]
    assert summary["refusals"].get("internal-error") == 1
    con = connect(str(tmp_path / "results"))
    assert con.sql("select run_uri from refusals where reason = 'internal-error'").fetchall() == [
        (str(poisoned),)]
    clean = grade_runs(str(runs), str(tmp_path / "local"), default_grader(), workers=1)
    assert clean.graded + clean.refused == 8


DYING_PREREAD = '''
import multiprocessing
import os

import pipeline.grade as grade
from pipeline.checks import default_grader


def _dying(job, refs):
    # the first task of a first grade, in a worker process: it dies there
    if multiprocessing.parent_process() is not None:
        os._exit(9)


grade._preread_task = _dying
grader = default_grader("prereaddeath.contract.grader/v1")
'''


def test_a_worker_that_dies_reading_the_sample_clauses_loses_nothing(corpus: Path,
                                                                      tmp_path: Path):
    # The first task dies at once, while the other worker grades the first shard: the pool
    # it breaks is replaced and every run graded, each once. (The other worker, whose task
    # failed with the pool, must not stage its shard after that shard was dropped to be
    # graded again: its runs would be committed twice.)
    grader = tmp_path / "preread_grader.py"
    grader.write_text(DYING_PREREAD)
    got = _grade(corpus, tmp_path / "results", grader)
    assert got["found"] == RUNS == got["graded"] + got["refused"]
    assert "internal-error" not in got["refusals"]
    con = connect(str(tmp_path / "results"))
    assert con.sql("select count(*), count(distinct run_uri) from runs").fetchall() == [
        (RUNS, RUNS)]


LATE_STAGE = '''
import multiprocessing

from pipeline.checks import default_grader
from pipeline.store import ResultStore

_stage_part = ResultStore.stage_part


def _staged_twice(self, batch_id, attempt, grader_id, tables, reports):
    _stage_part(self, batch_id, attempt, grader_id, tables, reports)
    if multiprocessing.parent_process() is not None:
        # what a worker presumed dead does when it finishes a shard that was given to
        # another worker meanwhile: a second copy of the same part, from another attempt
        _stage_part(self, batch_id, attempt.split("-")[0] + "-late", grader_id, tables, reports)


ResultStore.stage_part = _staged_twice
grader = default_grader("latestage.contract.grader/v1")
'''


@pytest.mark.parametrize("engine, where", [("local", "local"), ("dask", "local"),
                                           ("local", "s3")])
def test_a_part_staged_by_no_accepted_task_is_never_published(corpus: Path, tmp_path: Path,
                                                                engine: str, where: str,
                                                                request):
    grader = tmp_path / "late_grader.py"
    grader.write_text(LATE_STAGE)
    out = tmp_path / "results"
    if where == "s3":  # results in a bucket on the loopback server, then fetched to look at
        bucket = request.getfixturevalue("s3_bucket")
        got = _grade(corpus, f"s3://{bucket}/results", grader, "--engine", engine,
                     "--endpoint-url", request.getfixturevalue("s3_server"))
        request.getfixturevalue("s3fs_client").get(f"{bucket}/results/", str(out),
                                                   recursive=True)
    else:
        got = _grade(corpus, out, grader, "--engine", engine)
    assert got["found"] == RUNS == got["graded"] + got["refused"]
    # straight over the files, not through the catalog's views: no copy was moved into place
    con = connect(str(out))
    raw = f"read_parquet('{out}/runs/**/*.parquet', hive_partitioning = true)"
    assert con.sql(f"select count(*), count(distinct run_uri) from {raw}").fetchall() == [
        (RUNS, RUNS)]
    markers = [json.loads(p.read_text()) for p in (out / "_commits").glob("*.json")]
    taken = [a for m in markers for a in m["attempts"]]
    assert taken and not [a for a in taken if a.endswith("-late")]
    assert sorted(p.parent.name + "/" + p.name for p in out.glob("runs/*/*/*.parquet")) == sorted(
        f"batch={m['batch_id']}/part-{a.split('-')[0]}.parquet" for m in markers
        for a in m["attempts"])
    assert len(list((out / "reports").glob("*.json"))) == got["graded"]
    assert not list((out / "_staging").glob("*"))


def test_reports_staged_by_no_accepted_task_are_not_rolled_forward(corpus: Path,
                                                                     tmp_path: Path):
    # The reports folder refuses writes after the commit markers: the next grade moves the
    # committed batches' staged reports into place, those of their accepted attempts only.
    grader = tmp_path / "late_grader.py"
    grader.write_text(LATE_STAGE)
    out = tmp_path / "results"
    (out / "reports").mkdir(parents=True)
    with refusing_writes(out / "reports"):
        _grade(corpus, out, grader, exit_code=exit_codes.STORAGE)
    assert list((out / "_staging").glob("*/reports/*-late/*.json"))  # the late copies, staged
    got = _grade(corpus, out, grader)
    assert got["skipped"] > 0  # the committed batch was not graded again
    reports = sorted(p.name for p in (out / "reports").glob("*.json"))
    runs = connect(str(out)).sql("select count(*) from runs where status = 'graded'")
    assert len(reports) == runs.fetchall()[0][0]
    assert not [name for name in reports if "~" in name]  # no run's report twice
    assert not list((out / "_staging").glob("*"))


LISTING_GRADER = '''
import multiprocessing
import os
import time

import pipeline.grade as grade
from pipeline.checks import default_grader

_list_task = grade._list_task


def _listing(job, items, *args):
    # only in a listing worker (a fork of the grade): {action} when it lists a "poison" run
    if multiprocessing.parent_process() is not None and any(
            "poison" in ref.uri for ref, *_ in items):
        {action}
    return _list_task(job, items, *args)


grade._list_task = _listing
grader = default_grader("listing.contract.grader/v1")
'''


def _touched_with_a_poisoned_run(corpus: Path, tmp_path: Path, action: str) -> tuple:
    """A copy of `corpus` graded once, then every run touched (so a rerun lists them all),
    one of them renamed back and forth to hold "poison"; and the grader file doing
    `action` in the listing worker that lists it."""
    grader = tmp_path / "listing_grader.py"
    grader.write_text(LISTING_GRADER.format(action=action))
    runs = tmp_path / "runs"
    shutil.copytree(corpus, runs, symlinks=True)
    folders = sorted(p for p in runs.glob("*/.prose/runs/*") if p.is_dir())
    folders[11].rename(folders[11].with_name(folders[11].name + "-poison"))
    out = tmp_path / "results"
    assert _grade(runs, out, grader)["graded"] > 0
    for state in runs.glob("*/.prose/runs/*/state.md"):
        state.touch()
    return runs, out, grader


def test_a_listing_worker_that_dies_leaves_its_runs_listed_by_the_grade(corpus: Path,
                                                                         tmp_path: Path):
    # one listing worker killed (kill -9, out of memory): the pool's clean-up waited for good
    # on the other, which ignores SIGTERM; the grade hung holding the results' lock, deaf to
    # SIGTERM and Ctrl-C, and every later grade exited 3
    runs, out, grader = _touched_with_a_poisoned_run(corpus, tmp_path, "os._exit(9)")
    got = _grade(runs, out, grader)  # (in 300 s, or the test fails)
    assert got["found"] == RUNS == got["skipped"] + got["graded"] + got["refused"]
    assert got["new"] == 0 and got["changed"] + got["unchanged"] == RUNS  # (every run listed)


def test_a_grade_killed_while_listing_leaves_no_lock_behind(corpus: Path, tmp_path: Path):
    # the listing workers, forks of the grade, shared its flock until their watchdog saw it
    # gone: a grade started at once was told the dead one was still writing (exit 3)
    import fcntl
    import os
    import time

    runs, out, grader = _touched_with_a_poisoned_run(corpus, tmp_path, "time.sleep(120)")
    proc = subprocess.Popen([RUNGRADE, "grade", str(runs), "--out", str(out), "--workers",
                             "2", "--grader", str(grader)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and len(_children(proc.pid)) < 2:
            time.sleep(0.05)
        assert len(_children(proc.pid)) >= 2  # the listing workers, forks of the grade
        time.sleep(1)
        proc.kill()
        proc.wait(timeout=60)
        fd = os.open(out / "_lock", os.O_RDWR)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # raises while anyone holds it
        finally:
            os.close(fd)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, 9)


def _children(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as listed:
            return [int(c) for c in listed.read().split()]
    except OSError:
        return []
