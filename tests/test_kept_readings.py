"""Clause readings kept in the results: read once per version of the reading code, then found
by every worker of later grades instead of being read again."""

from __future__ import annotations

import shutil
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from pipeline.catalog import connect
from pipeline.checks import clause_analysis, default_grader
from pipeline.grade import KeptReadings, grade_runs
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
        corpus: Path, tmp_path: Path):
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
