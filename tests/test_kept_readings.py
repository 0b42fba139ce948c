"""Clause readings kept in the results: read once per version of the reading code, then found
by every worker of later grades instead of being read again."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import polars as pl
import pytest
from conftest import RUNGRADE, SAMPLE_RUNS
from polars.testing import assert_frame_equal

from pipeline.catalog import connect
from pipeline.checks import clause_analysis, default_grader
from pipeline.grade import KeptReadings, grade_runs
from pipeline.sources.bucket import Bucket, spread_runs
from pipeline.store import ResultStore
from pipeline.synth import synthesize

RUNS = 16
CLAUSES = pl.DataFrame(
    {"description": ["a JSON object with `score` (0-100) and `reason`", "at most 50 words",
                     "a bulleted list of 3-5 risks"],
     "details": [[], [], ["- `risk`: one sentence"]]},
    schema={"description": pl.String, "details": pl.List(pl.String)})


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("corpus")
    synthesize(str(root), RUNS, seed=3, workers=1)
    return root


@pytest.fixture
def fresh_process_cache():
    """This process's own readings forgotten before and after the test."""
    clause_analysis._READ.clear()
    yield
    clause_analysis._READ.clear()


def _kept(results: Path) -> list[str]:
    folder = results / "_readings" / clause_analysis.readings_version()
    return sorted(p.name for p in folder.glob("*.parquet"))


def test_a_kept_reading_is_used_as_kept_and_never_read_again(tmp_path: Path,
                                                              fresh_process_cache,
                                                              monkeypatch):
    kept = KeptReadings(ResultStore(str(tmp_path / "results")))
    with clause_analysis.shared_readings(kept):
        read = clause_analysis.clause_requirements(CLAUSES)
    assert len(_kept(tmp_path / "results")) == 1

    clause_analysis._READ.clear()  # another process: only the kept readings to go by

    def never(_frame):
        raise AssertionError("a kept clause was read again")

    monkeypatch.setattr(clause_analysis, "_requirements", never)
    with clause_analysis.shared_readings(kept):
        found = clause_analysis.clause_requirements(CLAUSES)
    assert_frame_equal(found, read)
    assert len(_kept(tmp_path / "results")) == 1  # nothing new to keep

    # outside the block nothing is looked up: a clause this process has not read is read
    clause_analysis._READ.clear()
    with pytest.raises(AssertionError, match="read again"):
        clause_analysis.clause_requirements(CLAUSES)


def test_only_the_clauses_not_kept_are_read(tmp_path: Path, fresh_process_cache, monkeypatch):
    kept = KeptReadings(ResultStore(str(tmp_path / "results")))
    with clause_analysis.shared_readings(kept):
        clause_analysis.clause_requirements(CLAUSES.head(2))
    clause_analysis._READ.clear()
    asked: list[list[str]] = []
    real = clause_analysis._requirements

    def counted(frame: pl.DataFrame) -> pl.DataFrame:
        asked.append(frame["description"].to_list())
        return real(frame)

    monkeypatch.setattr(clause_analysis, "_requirements", counted)
    with clause_analysis.shared_readings(kept):
        both = clause_analysis.clause_requirements(CLAUSES)
    assert asked == [[CLAUSES["description"][2]]]
    assert len(_kept(tmp_path / "results")) == 2
    clause_analysis._READ.clear()
    monkeypatch.setattr(clause_analysis, "_requirements", real)
    assert_frame_equal(both, clause_analysis.clause_requirements(CLAUSES))


def test_a_grade_finds_the_readings_an_earlier_grade_kept(corpus: Path, tmp_path: Path):
    first = tmp_path / "first"
    grade_runs(str(corpus), str(first), default_grader(), workers=2)
    kept = _kept(first)
    assert kept

    # fresh results holding only those readings: new worker processes read no clause (a
    # worker saves a file only when it reads one), and grade every run the same way
    second = tmp_path / "second"
    shutil.copytree(first / "_readings", second / "_readings")
    grade_runs(str(corpus), str(second), default_grader(), workers=2)
    assert _kept(second) == kept

    def rows(results: Path, table: str, columns: str) -> pl.DataFrame:
        return connect(str(results)).sql(f"select {columns} from {table} order by all").pl()

    for table, columns in (("clause_verdicts", "run_uri, service, clause_id, verdict, "
                                               "confidence, reason"),
                           ("checks", "run_uri, service, clause_id, \"check\", outcome, "
                                      "detail, evidence, confidence")):
        assert_frame_equal(rows(first, table, columns), rows(second, table, columns))


def test_other_versions_go_broken_files_are_passed_over_and_many_are_merged(
        corpus: Path, tmp_path: Path, fresh_process_cache):
    # one worker grades in this process: readings it kept from an earlier test would leave
    # nothing to read, so nothing to save
    results = tmp_path / "results"
    folder = results / "_readings" / clause_analysis.readings_version()
    stale = results / "_readings" / "0123456789abcdef"
    stale.mkdir(parents=True)
    (stale / "old.parquet").write_bytes(b"readings of other code")
    folder.mkdir(parents=True)
    (folder / "broken.parquet").write_bytes(b"not parquet at all")
    summary = grade_runs(str(corpus), str(results), default_grader(), workers=1)
    assert summary.graded + summary.refused == RUNS
    assert not stale.exists()
    assert "broken.parquet" in _kept(results) and len(_kept(results)) == 2

    # more files than kept apart are merged into one, with every clause once
    store = ResultStore(str(results))
    version = clause_analysis.readings_version()
    good = next(p for p in folder.glob("*.parquet") if p.name != "broken.parquet")
    readings = pl.read_parquet(good)
    for k in range(ResultStore.READING_FILES_KEPT):
        store.save_readings(version, readings.slice(k % readings.height, 1))
    store.tidy_readings(version)
    merged = _kept(results)
    assert len(merged) == 1
    assert_frame_equal(pl.read_parquet(folder / merged[0]).sort("_akey"),
                       readings.sort("_akey"))


@pytest.mark.parametrize("programs", [30, 100])
def test_a_sample_spans_every_folder_before_taking_a_second_run_of_any(tmp_path: Path,
                                                                        programs: int):
    root = tmp_path / "runs"
    for p in range(programs):
        for r in range(4):
            (root / f"program-{p:03d}" / ".prose" / "runs" / f"20261112-01{r:02d}00-p{p}").mkdir(
                parents=True)
    sample = spread_runs(Bucket(str(root)).sample(), limit=64)
    assert len(sample) == 64 and len({r.uri for r in sample}) == 64
    programs_in = [Path(r.path).parts[-4] for r in sample]
    if programs <= 64:  # a run of every program, then a second run of each, in turn, ...
        assert programs_in == [f"program-{i % programs:03d}" for i in range(64)]
    else:  # one run each of 64 programs spread over all of them, the first and last among
        assert len(set(programs_in)) == 64
        assert {"program-000", f"program-{programs - 1:03d}"} <= set(programs_in)
    assert all(Path(r.path).name.endswith(f"p{int(name[-3:])}")
               for r, name in zip(sample, programs_in, strict=True))


def test_a_first_grade_reads_a_sample_of_each_folder_first_in_one_reading(
        tmp_path: Path, fresh_process_cache, monkeypatch):
    import pipeline.grade as grade

    runs = tmp_path / "runs"
    synthesize(str(runs), 40, seed=3, workers=1)  # four programs, each in a folder of its own
    assert len({p.parent for p in runs.glob("*/.prose/runs/*")}) == 4
    found = [r.uri for r in Bucket(str(runs)).discover()]
    sample = [r.uri for r in Bucket(str(runs)).sample()]
    for folder in {Path(u).parent for u in found}:  # first, last and one between, in order
        mine = [u for u in found if Path(u).parent == folder]
        assert [u for u in sample if Path(u).parent == folder] == (
            [mine[0], mine[(len(mine) - 1) // 2], mine[-1]] if len(mine) >= 3 else mine)

    # one process, small batches: each batch that meets a program's clauses first reads them
    monkeypatch.setattr(grade, "PREREAD_RUNS", 0)
    apart = tmp_path / "apart"
    grade_runs(str(runs), str(apart), default_grader(), workers=1, batch_size=8)
    assert len(_kept(apart)) > 1

    # with the sample read first, in one reading, no batch reads any clause
    clause_analysis._READ.clear()
    monkeypatch.setattr(grade, "PREREAD_RUNS", 64)
    first = tmp_path / "first"
    grade_runs(str(runs), str(first), default_grader(), workers=1, batch_size=8)
    assert len(_kept(first)) == 1

    def rows(results: Path) -> pl.DataFrame:
        return connect(str(results)).sql(
            "select run_uri, service, clause_id, \"check\", outcome, detail, evidence, "
            "confidence from checks order by all").pl()

    assert_frame_equal(rows(first), rows(apart))


def test_a_small_first_grade_on_several_workers_reads_its_clauses_once(
        tmp_path: Path, fresh_process_cache):
    # A corpus within the sample: its shards wait for the sample's reading and find every
    # clause read. Before, the sample was three runs a folder and the shards, starting beside
    # it, each read what they held again: two or three readings, each about a second of CPU.
    runs = tmp_path / "runs"
    synthesize(str(runs), 40, seed=3, workers=1)  # four programs, each in a folder of its own
    assert len(spread_runs(Bucket(str(runs)).sample(64), 64, 64)) == 40
    summary = grade_runs(str(runs), str(tmp_path / "results"), default_grader(), workers=2)
    assert summary.graded + summary.refused == 40
    assert len(_kept(tmp_path / "results")) == 1


SLOW_SAMPLE = '''
import os
import time

import pipeline.grade as grade
from pipeline.checks import default_grader

_preread, _read_run, _wait = grade._preread_task, grade.read_run, grade._after_preread


def _note(what, on=""):
    with open({log!r}, "a") as log:
        log.write(f"{{what}} {{os.getpid()}} {{time.monotonic()}} {{on}}\\n")


def _slow_preread(job, refs):
    _note("sample-started")
    _preread(job, refs)
    time.sleep(1.5)  # a sample that takes its time to read
    _note("sample-read")


def _reading(*args, **kwargs):
    _note("run-read")
    return _read_run(*args, **kwargs)


def _waiting(mark, *args, **kwargs):
    _note("wait", mark)
    return _wait(mark, *args, **kwargs)


grade._preread_task = _slow_preread
grade.read_run = _reading
grade._after_preread = _waiting
grader = default_grader("overlap.contract.grader/v1")
'''


def test_a_first_grades_shards_read_their_runs_while_the_sample_is_read(
        corpus: Path, tmp_path: Path):
    # The first batch's shards no longer wait in the grading process for the sample's
    # reading: the other worker reads its shard's runs meanwhile (a core idled for about a
    # second of every first grade), then waits for the sample's clauses before reading any.
    log, grader = tmp_path / "events.log", tmp_path / "slow_sample.py"
    grader.write_text(SLOW_SAMPLE.format(log=str(log)))
    done = subprocess.run([RUNGRADE, "grade", str(corpus), "--out", str(tmp_path / "results"),
                           "--json", "--workers", "2", "--grader", str(grader)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["found"] == RUNS == summary["graded"] + summary["refused"]
    events = [line.split(" ", 3) for line in log.read_text().splitlines()]
    [(_, sampler, _, _)] = [e for e in events if e[0] == "sample-started"]
    [(_, _, read, _)] = [e for e in events if e[0] == "sample-read"]
    shard_reads = [float(at) for what, pid, at, _ in events
                   if what == "run-read" and pid != sampler]
    marks = {on for what, _, _, on in events if what == "wait"}
    assert shard_reads and min(shard_reads) < float(read)  # read beside the sample
    assert len(_kept(tmp_path / "results")) == 1  # and its clauses read once, by the sample
    # the shards waited on one file, which is gone with the sample's reading
    assert len(marks) == 1 and not os.path.exists(marks.pop())


def test_a_first_grade_reads_the_ledger_graders_clauses_with_the_sample(
        tmp_path: Path, fresh_process_cache):
    # A ledger's clauses are its grader's checks. The sample leaves ledgers unread (a large
    # one would be read there and in its shard at once), so each shard holding a ledger read
    # its grader's clauses again: the sample runs' first grade made three readings. The
    # sample's reading now takes every ledger grader's clauses when it meets a ledger.
    runs = tmp_path / "runs"
    shutil.copytree(SAMPLE_RUNS, runs)
    bucket = Bucket(str(runs))
    assert any(bucket.list_run(r).source == "ledger" for r in bucket.discover())
    summary = grade_runs(str(runs), str(tmp_path / "results"), default_grader(), workers=2)
    assert summary.found == summary.graded + summary.refused
    assert len(_kept(tmp_path / "results")) == 1
    ledger_checks = connect(str(tmp_path / "results")).sql(
        "select count(*) as n from checks where grader_id like 'moltzap.%'").pl()
    assert ledger_checks["n"][0] > 0
