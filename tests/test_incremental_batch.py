"""Incremental nightly grading on a local runs root: skip, regrade, new grader id, --full."""

from __future__ import annotations

import errno
import json
import os
import random
import re
import shutil
from pathlib import Path

import polars as pl
import pytest
from nightly_changes import change_night, graded_state

from pipeline.catalog import connect
from pipeline.checks import DEFAULT_GRADER_ID, default_grader
from pipeline.compact import compact
from pipeline.grade import ROW_BYTES, grade_runs
from pipeline.sources.bucket import Bucket, RunRef
from pipeline.store import ResultStore
from pipeline.synth import synthesize

RUNS = 24


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("corpus")
    synthesize(str(root), RUNS, seed=11, workers=1)
    return root


def _copy(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst, symlinks=True)
    return dst


def _graded_binding(runs: Path, results: Path) -> Path:
    """A binding of a run that the last grade graded (not refused)."""
    con = connect(str(results))
    uri = con.sql("select run_uri from runs where status = 'graded' order by run_uri "
                  "limit 1").fetchall()[0][0]
    return next(p for p in sorted(Path(uri).glob("bindings/*/*"))
                if "caller" not in p.parts)


def _views(results: Path) -> dict:
    con = connect(str(results))
    runs = con.sql("select grader_id, run_uri, fingerprint, batch_id from runs").pl()
    dupes = con.sql("select grader_id, run_uri, service, clause_id, count(*) n "
                    "from clause_verdicts group by all having n > 1").pl()
    return {"runs": runs, "clause_dupes": dupes.height}


def test_rerun_skips_unchanged_and_regrades_changed(corpus: Path, tmp_path: Path):
    runs = _copy(corpus, tmp_path / "runs")
    out = tmp_path / "results"
    first = grade_runs(str(runs), str(out), default_grader(), batch_size=10, workers=2)
    assert (first.found, first.new, first.changed, first.skipped) == (RUNS, RUNS, 0, 0)
    assert first.graded + first.refused == RUNS and len(first.batches) == 3

    second = grade_runs(str(runs), str(out), default_grader(), batch_size=10, workers=2)
    assert (second.found, second.unchanged, second.skipped) == (RUNS, RUNS, RUNS)
    assert second.graded + second.refused == 0 and second.batches == []
    assert len(ResultStore(str(out)).commits()) == 3  # nothing new committed

    # one run changes: a binding grows (size and mtime differ)
    binding = _graded_binding(runs, out)
    run_uri = str(binding.parents[2])
    before = _views(out)["runs"].filter(run_uri=run_uri)
    with open(binding, "a") as handle:
        handle.write("\nA late correction appended by the service.\n")
    third = grade_runs(str(runs), str(out), default_grader(), batch_size=10, workers=2)
    assert (third.found, third.changed, third.skipped, third.new) == (RUNS, 1, RUNS - 1, 0)
    assert third.graded + third.refused == 1 and len(third.batches) == 1

    views = _views(out)
    assert views["runs"].height == RUNS  # superseded, not duplicated
    assert views["runs"]["run_uri"].n_unique() == RUNS
    assert views["clause_dupes"] == 0
    after = views["runs"].filter(run_uri=run_uri)
    assert after["batch_id"][0] == third.batches[0] != before["batch_id"][0]
    assert after["fingerprint"][0] != before["fingerprint"][0]
    # the raw parts still hold the old rows: the catalog's latest-batch rule hides them
    con = connect(str(out))
    raw = con.sql(f"select count(*) from read_parquet('{out}/runs/*/*/*.parquet') "
                  f"where run_uri = '{run_uri}'").fetchall()[0][0]
    assert raw == 2


def test_an_empty_run_folder_starts_no_grading_on_a_night_with_nothing_new(
        corpus: Path, tmp_path: Path, monkeypatch):
    # Never committed, an empty folder named like a run is new every night, and only a worker
    # found it empty: each no-change night started the grading workers for it (1 s here)
    from pipeline import grade as grade_module

    runs = _copy(corpus, tmp_path / "runs")
    out = tmp_path / "results"
    first = grade_runs(str(runs), str(out), default_grader(), workers=2)
    empty = next(runs.rglob("20*-*")).parent / "20261130-000000-empty"
    empty.mkdir()
    submitted = []
    submit = grade_module._Engine.submit_grade

    def recorded(self, fn, *args):
        submitted.append(fn.__name__)
        return submit(self, fn, *args)

    monkeypatch.setattr(grade_module._Engine, "submit_grade", recorded)
    night = grade_runs(str(runs), str(out), default_grader(), workers=2)
    assert (night.found, night.skipped, night.graded + night.refused) == (first.found,
                                                                         first.found, 0)
    assert submitted == []
    # beside a new run that holds files, it is graded with it, and still not counted
    shutil.copytree(next(p for p in sorted(runs.rglob("20*-*")) if p.is_dir()
                         and p != empty), empty.parent / "20261130-000001-late")
    later = grade_runs(str(runs), str(out), default_grader(), workers=2)
    assert (later.found, later.new, later.graded + later.refused) == (first.found + 1, 1, 1)
    assert submitted


def _dated(results: Path, batch_id: str, year: int) -> str:
    """Give the committed batch `batch_id` the id a machine whose clock said `year` would
    have stamped it with (its marker and its folders renamed, as that machine wrote them)."""
    moved = f"{year}{batch_id[4:]}"
    marker = json.loads((results / "_commits" / f"{batch_id}.json").read_text())
    (results / "_commits" / f"{moved}.json").write_text(json.dumps({**marker,
                                                                    "batch_id": moved}))
    (results / "_commits" / f"{batch_id}.json").unlink()
    for folder in results.glob(f"*/grader=*/batch={batch_id}"):
        folder.rename(folder.with_name(f"batch={moved}"))
    return moved


def test_a_regrade_is_shown_after_a_batch_stamped_by_a_clock_that_ran_ahead(corpus: Path,
                                                                            tmp_path: Path):
    # The catalog shows each run's latest batch. A batch committed by a machine whose clock
    # ran a year ahead hid every later regrade of its runs, and the rerun saw their old
    # fingerprint, so they were regraded every night: a grade's batches come after the
    # latest committed one, whatever this machine's clock says.
    runs = _copy(corpus, tmp_path / "runs")
    out = tmp_path / "results"
    first = grade_runs(str(runs), str(out), default_grader(), workers=2)
    ahead = _dated(out, first.batches[0], int(first.batches[0][:4]) + 1)
    binding = _graded_binding(runs, out)
    run_uri = str(binding.parents[2])
    with open(binding, "a") as handle:
        handle.write("\nA late correction appended by the service.\n")
    second = grade_runs(str(runs), str(out), default_grader(), workers=2)
    assert (second.changed, second.skipped) == (1, RUNS - 1)
    assert second.batches[0] > ahead
    after = _views(out)["runs"].filter(run_uri=run_uri)
    assert after["batch_id"].to_list() == second.batches
    third = grade_runs(str(runs), str(out), default_grader(), workers=2)
    assert (third.changed, third.skipped, third.batches) == (0, RUNS, [])


def test_a_grade_after_a_compaction_comes_after_the_batches_it_merged(corpus: Path,
                                                                       tmp_path: Path):
    # A compacted batch is named after its first and sorts before the batches it merged: a
    # grade took the latest committed id for the last one, and on a machine whose clock ran
    # behind a batch it merged, stamped its batch (a ledger's `graded_in`) before it
    runs = _copy(corpus, tmp_path / "runs")
    out = tmp_path / "results"
    grade_runs(str(runs), str(out), default_grader(), workers=1)
    binding = _graded_binding(runs, out)
    with open(binding, "a") as handle:
        handle.write("\nA first correction.\n")
    second = grade_runs(str(runs), str(out), default_grader(), workers=1)
    ahead = _dated(out, second.batches[0], int(second.batches[0][:4]) + 1)
    assert compact(str(out)).merged == {DEFAULT_GRADER_ID: 2}
    with open(binding, "a") as handle:
        handle.write("\nA second correction.\n")
    third = grade_runs(str(runs), str(out), default_grader(), workers=1)
    assert third.changed == 1 and third.batches[0] > ahead


def test_a_run_refused_for_a_file_it_could_not_read_is_tried_again_until_read(
        tmp_path: Path, monkeypatch):
    # A file that could not be read (a permission, a disk error, an archived object) may be
    # read tomorrow with nothing about it changed: the run was committed refused, with the
    # fingerprint of its unchanged files, and skipped on every grade after.
    from run_folders import write_run

    from pipeline.sources import bucket as bucket_module
    from pipeline.sources.prose import RETRIED

    runs, out = tmp_path / "runs", tmp_path / "results"
    write_run(runs, "20261112-000001-flaky")
    write_run(runs, "20261112-000002-fine")
    write_run(runs, "20261112-000003-looped")
    opened = bucket_module._open_beneath

    def denying(dir_fd: int, path: str, folder: bool = False) -> int:
        run = os.readlink(f"/proc/self/fd/{dir_fd}")
        if path == "bindings/writer/summary.md" and run.endswith("flaky"):  # (run as root)
            raise PermissionError(errno.EACCES, "Permission denied", path)
        if path == "bindings/writer/summary.md" and run.endswith("looped"):
            raise OSError(errno.ELOOP, "Too many levels of symbolic links", path)
        return opened(dir_fd, path, folder)

    with monkeypatch.context() as patched:
        patched.setattr(bucket_module, "_open_beneath", denying)
        first = grade_runs(str(runs), str(out), default_grader(), workers=1)
        again = grade_runs(str(runs), str(out), default_grader(), workers=1)
    assert (first.graded, dict(first.refusals)) == (1, {"unreadable-file": 2})
    # the file denied is tried again; the path that cannot be opened as it stands is not
    assert (again.changed, again.skipped, again.refused) == (1, 2, 1)
    flaky = _views(out)["runs"].filter(pl.col("run_uri").str.ends_with("flaky"))
    assert flaky["fingerprint"][0].endswith(RETRIED)

    read = grade_runs(str(runs), str(out), default_grader(), workers=1)  # readable now
    # (the other stays refused while unchanged: a path cannot loop until something moved)
    assert (read.changed, read.skipped, read.graded, read.refused) == (1, 2, 1, 0)
    after = grade_runs(str(runs), str(out), default_grader(), workers=1)
    assert (after.skipped, after.batches) == (3, [])
    assert _views(out)["runs"]["run_uri"].n_unique() == _views(out)["runs"].height == 3


def test_new_runs_new_grader_id_and_full(corpus: Path, tmp_path: Path):
    runs = _copy(corpus, tmp_path / "runs")
    out = tmp_path / "results"
    grade_runs(str(runs), str(out), default_grader(), batch_size=50, workers=1)

    synthesize(str(runs), 6, seed=11, start=RUNS, workers=1)  # the bucket grows
    grown = grade_runs(str(runs), str(out), default_grader(), batch_size=50, workers=1)
    assert (grown.found, grown.new, grown.skipped) == (RUNS + 6, 6, RUNS)
    assert grown.graded + grown.refused == 6

    v2 = default_grader().with_id("prose.contract.rival.grader/v1")
    other = grade_runs(str(runs), str(out), v2, batch_size=50, workers=1)
    assert (other.new, other.skipped) == (RUNS + 6, 0)  # a new grader id grades everything

    full = grade_runs(str(runs), str(out), default_grader(), batch_size=50, workers=1,
                      full=True)
    assert (full.unchanged, full.skipped, full.graded + full.refused) == (RUNS + 6, 0, RUNS + 6)

    views = _views(out)["runs"]
    per_grader = dict(views.group_by("grader_id").len().iter_rows())
    assert per_grader == {default_grader().grader_id: RUNS + 6, v2.grader_id: RUNS + 6}
    assert _views(out)["clause_dupes"] == 0


def test_cli_summary_counts_and_json(corpus: Path, tmp_path: Path):
    from typer.testing import CliRunner

    from pipeline.cli import app

    runs = _copy(corpus, tmp_path / "runs")
    out = tmp_path / "results"
    cli = CliRunner()
    first = cli.invoke(app, ["grade", str(runs), "--out", str(out), "--workers", "1"])
    assert first.exit_code == 0, first.output
    assert f"runs found          {RUNS}  (new {RUNS}, changed 0, unchanged 0)" in first.output
    assert re.search(r"\ntime +\d+\.\d s  \([\d,]+ runs a second, graded or refused\)",
                     first.output), first.output
    again = cli.invoke(app, ["grade", str(runs), "--out", str(out), "--json"])
    assert again.exit_code == 0, again.output
    data = json.loads(again.output)
    assert {k: data[k] for k in ("found", "new", "changed", "unchanged", "skipped", "graded",
                                 "refused")} == {
        "found": RUNS, "new": 0, "changed": 0, "unchanged": RUNS, "skipped": RUNS,
        "graded": 0, "refused": 0}
    # how long the grade took, for a scheduler's log
    assert 0 < data["elapsed_s"] < 60


def test_shard_runs_caps_the_runs_a_worker_grades_at_once(corpus: Path, tmp_path: Path):
    # A shard is published as one part of each table: no `runs` part holds more runs than
    # --shard-runs (without it, a 24-run batch on two workers is cut into two shards of 12),
    # and the results are the same whatever the shards.
    import polars as pl
    from typer.testing import CliRunner

    from pipeline.cli import app

    runs = _copy(corpus, tmp_path / "runs")
    cli = CliRunner()

    def graded(out: Path, *extra: str) -> tuple[list[int], object]:
        done = cli.invoke(app, ["grade", str(runs), "--out", str(out), "--json", "--workers",
                                "2", "--batch-size", str(RUNS), *extra])
        assert done.exit_code == 0, done.output
        assert json.loads(done.output)["found"] == RUNS
        parts = sorted(len(pl.read_parquet(p)) for p in out.glob("runs/*/*/*.parquet"))
        verdicts = connect(str(out)).sql(
            "select run_uri, service, clause_id, verdict, evidence from clause_verdicts "
            "order by all").fetchall()
        return parts, verdicts

    whole, whole_verdicts = graded(tmp_path / "default")
    assert whole == [RUNS // 2, RUNS // 2]
    capped, capped_verdicts = graded(tmp_path / "capped", "--shard-runs", "5")
    assert sum(capped) == RUNS and max(capped) <= 5 and len(capped) >= -(-RUNS // 5), capped
    assert capped_verdicts == whole_verdicts and whole_verdicts
    # shards of even sizes: a 20-run batch at most 6 a shard is four of 5 (not 6, 6, 6 and 2),
    # then the last 4 runs two of 2, one a worker
    even, even_verdicts = graded(tmp_path / "even", "--shard-runs", "6", "--batch-size", "20")
    assert even == [2, 2, 5, 5, 5, 5] and even_verdicts == whole_verdicts

    refused = cli.invoke(app, ["grade", str(runs), "--out", str(tmp_path / "none"),
                               "--shard-runs", "0"])
    assert refused.exit_code == 2 and "--shard-runs" in refused.output
    with pytest.raises(ValueError, match="shard_runs"):
        grade_runs(str(runs), str(tmp_path / "none"), default_grader(), shard_runs=0)


def test_a_worker_grades_its_shard_a_few_megabytes_of_outputs_at_a_time(corpus: Path,
                                                                          tmp_path: Path):
    # A worker grades the runs it has read once their outputs' text and rows reach `shard_bytes`,
    # and publishes each such group as a part of its own: it holds one group, not its whole
    # shard (600 runs of large outputs held gigabytes). The results are the same, each run
    # once, and a rerun skips them all.
    runs = _copy(corpus, tmp_path / "runs")

    def graded(out: Path, **kw) -> tuple[list[list[str]], list]:
        summary = grade_runs(str(runs), str(out), default_grader(), workers=2,
                             batch_size=RUNS, **kw)
        assert summary.found == RUNS == summary.graded + summary.refused
        parts = [pl.read_parquet(p)["run_uri"].to_list()
                 for p in sorted(out.glob("runs/*/*/*.parquet"))]
        verdicts = connect(str(out)).sql(
            "select run_uri, service, clause_id, verdict, evidence from clause_verdicts "
            "order by all").fetchall()
        return parts, verdicts

    whole, whole_verdicts = graded(tmp_path / "whole")
    assert len(whole) == 2  # one part a shard: no shard holds anywhere near SHARD_BYTES
    # what a run holds: its outputs' text, and ROW_BYTES for each row of its source tables
    held = dict(connect(str(tmp_path / "whole")).sql(f"""
        select run_uri, sum(n) from (
            select run_uri, sum(length(text)) + {ROW_BYTES} * count(*) as n from bindings
            group by all
            union all select run_uri, {ROW_BYTES} * count(*) from clauses group by all
            union all select run_uri, {ROW_BYTES} * count(*) from services group by all)
        group by all""").fetchall())
    most = sorted(held.values())[len(held) // 2] * 3  # about three runs a group
    grouped, grouped_verdicts = graded(tmp_path / "grouped", shard_bytes=most)
    assert len(grouped) > 2 + 2, [len(p) for p in grouped]
    # a group ends with the run that brings it to `most`: without that run, each held less
    assert all(sum(held.get(uri, 0) for uri in part[:-1]) < most for part in grouped)
    assert sorted(u for part in grouped for u in part) == sorted(whole[0] + whole[1])
    assert grouped_verdicts == whole_verdicts and whole_verdicts
    again = grade_runs(str(runs), str(tmp_path / "grouped"), default_grader(), workers=2,
                       batch_size=RUNS, shard_bytes=most)
    assert again.skipped == RUNS and again.graded == 0
    assert _views(tmp_path / "grouped")["clause_dupes"] == 0
    with pytest.raises(ValueError, match="shard_bytes"):
        grade_runs(str(runs), str(tmp_path / "none"), default_grader(), shard_bytes=0)


def test_refused_runs_are_skipped_until_they_change(tmp_path: Path, make_run, run_root):
    # an unfinished run is refused; once its log ends it is regraded, not skipped
    run = make_run("20261112-031502-late", files={
        "state.md": "# run:20261112-031502-late brief\n1→ researcher ✓\n2→ writer\n"})
    out = tmp_path / "results"
    first = grade_runs(str(run_root), str(out), default_grader(), workers=1)
    assert (first.refused, dict(first.refusals)) == (1, {"incomplete-run": 1})
    assert grade_runs(str(run_root), str(out), default_grader(), workers=1).skipped == 1
    state = run / "state.md"
    state.write_text(state.read_text() + "2→ writer ✓\n---end 2026-11-12T03:20:00Z\n")
    os.utime(state, (1, 1_900_000_000))
    last = grade_runs(str(run_root), str(out), default_grader(), workers=1)
    assert (last.changed, last.graded, last.refused) == (1, 1, 0)
    con = connect(str(out))
    assert con.sql("select status from runs").fetchall() == [("graded",)]
    assert con.sql("select count(*) from refusals").fetchall()[0][0] == 0


def test_a_refused_ledger_is_read_again_when_the_ledger_graders_change(tmp_path: Path):
    # refused ledgers are committed under the contract grader's id, whose fingerprints every
    # grade skips by: a ledger refused for want of a grader was skipped as unchanged once its
    # grader came, and so was one refused by a grader version a newer one would grade
    from pipeline.checks.ledger import LedgerGrader, valid_messages
    from pipeline.sources.ledger_builder import evaluation

    runs, out = tmp_path / "runs", tmp_path / "results"
    evaluation("ledger-1", "evals.nightly/v1", ["hello"]).write(runs / "ledger-1")

    def nightly(*graders: LedgerGrader):
        return grade_runs(str(runs), str(out), default_grader(), workers=1,
                          ledger_graders=graders)

    def grader(version: int, expected: int) -> LedgerGrader:
        return LedgerGrader(f"nightly.grader/v{version}", "evals.nightly/v1", "eval-sender",
                            "target-agent", expected, [valid_messages()])

    first = nightly()
    assert dict(first.refusals) == {"ledger-no-grader": 1}
    assert nightly().skipped == 1  # the same graders: nothing to read again
    wrong = nightly(grader(1, expected=2))
    assert (wrong.new, wrong.skipped, dict(wrong.refusals)) == (
        1, 0, {"ledger-response-count-mismatch": 1})
    assert nightly(grader(1, expected=2)).skipped == 1
    fixed = nightly(grader(2, expected=1))
    assert (fixed.new, fixed.graded, fixed.refused) == (1, 1, 0)
    assert nightly(grader(2, expected=1)).skipped == 1
    # as a grade from scratch shows it: its refusals under the contract grader's id went
    # once it was graded (they stayed in runs, refusals and trends for good), and stay gone
    # once compacted
    for compacted in (False, True):
        if compacted:
            compact(str(out), everything=True)
            assert any("!" in c["batch_id"] and c["grader_id"] == DEFAULT_GRADER_ID
                       for c in ResultStore(str(out)).commits())  # (its refusals merged)
        con = connect(str(out))
        assert con.sql("select grader_id, status from runs").fetchall() == [
            ("nightly.grader/v2", "graded")]
        assert con.sql("select count(*) from refusals").fetchall() == [(0,)]
        assert con.sql("select grader_id, graded, refused from trends").fetchall() == [
            ("nightly.grader/v2", 1, 0)]
    # broken again: its refusal shows, and its last verdicts go (v19 showed both)
    (runs / "ledger-1" / "completion.json").unlink()
    assert dict(nightly(grader(2, expected=1)).refusals) == {"ledger-incomplete": 1}
    assert connect(str(out)).sql("select grader_id, status from runs order by 1").fetchall() == [
        (DEFAULT_GRADER_ID, "refused")]


def test_grading_holds_a_bounded_number_of_runs_not_the_listing(tmp_path: Path):
    # Memory stays flat as the bucket grows: at no point does the grading process hold more
    # than the runs discovery found ahead, one discovery chunk and two batches of runs,
    # whatever the number of runs found.
    import gc

    from pipeline.grade import LIST_CHUNK
    from pipeline.sources.bucket import RUNS_QUEUED, RunRef

    runs = tmp_path / "runs"
    synthesize(str(runs), 600, seed=9, workers=1)
    alive: list[int] = []

    def refs() -> int:
        return sum(isinstance(o, RunRef) for o in gc.get_objects())

    before = refs()  # run references other tests left behind are not this grade's

    def count(stage: str, done: int, total: int | None) -> None:
        alive.append(refs() - before)

    summary = grade_runs(str(runs), str(tmp_path / "out"), default_grader(), batch_size=50,
                         workers=1, progress=count)
    assert summary.graded + summary.refused == 600 and len(alive) >= 12
    # the runs queued ahead (and one in the hand of the thread finding them), one discovery
    # chunk, two batches, and the run found after a full batch that starts it
    bound = RUNS_QUEUED + 1 + LIST_CHUNK + 2 * 50 + 1
    assert max(alive) <= bound < 600, (max(alive), bound)


def test_the_progress_bar_counts_runs_found_then_has_its_total(tmp_path: Path, monkeypatch):
    # While runs are being found the bar has no total and says how many were found; once all
    # are, it has one (graded + refused to come), so it can show the time left.
    from pipeline import grade as grade_module

    monkeypatch.setattr(grade_module, "PROGRESS_EVERY", 20)
    runs = tmp_path / "runs"
    synthesize(str(runs), 90, seed=4, workers=1)
    for full in (False, True):  # a first grade, then all of them again
        seen: list[tuple[str, int, int | None]] = []
        summary = grade_runs(str(runs), str(tmp_path / "out"), default_grader(), batch_size=30,
                             workers=1, full=full, progress=lambda *told, seen=seen: seen.append(
                                 told))
        assert summary.found == summary.graded + summary.refused == 90
        finding = [re.fullmatch(r"finding and grading runs \((\d+) found\)", what)
                   for what, _, total in seen if total is None]
        counts = [int(found[1]) for found in finding]  # (also told after each commit)
        assert counts == sorted(counts) and {20, 40, 60, 80} <= set(counts)
        first_total = next(i for i, (_, _, total) in enumerate(seen) if total is not None)
        assert all(total == 90 for _, _, total in seen[first_total:])  # never taken back
        assert [done for _, done, _ in seen] == sorted(done for _, done, _ in seen)
        assert seen[-1] == ("grading", 90, 90)
    rerun: list[tuple[str, int, int | None]] = []
    grade_runs(str(runs), str(tmp_path / "out"), default_grader(), workers=1,
               progress=lambda what, done, total: rerun.append((what, done, total)))
    assert rerun[-1] == ("grading", 0, 0)  # nothing to grade: the bar ends full


def _folders_listed_during(fn) -> tuple[object, list[str]]:
    """(fn(), every folder os.scandir listed in this process while fn ran): audit events."""
    import sys

    seen: list[str] = []
    active = [True]

    def hook(event: str, args: tuple) -> None:
        if active[0] and event == "os.scandir":
            if isinstance(args[0], int):  # a folder listed by its descriptor
                seen.append(os.readlink(f"/proc/self/fd/{args[0]}"))
            else:
                seen.append(os.fsdecode(args[0]) if isinstance(args[0], (str, bytes)) else "")

    sys.addaudithook(hook)  # a hook cannot be removed: it is switched off instead
    try:
        return fn(), seen
    finally:
        active[0] = False


def _run_folders(runs: Path) -> list[Path]:
    return sorted(p for p in runs.glob("*/.prose/runs/*") if p.is_dir())


def test_rerun_checks_saved_listings_without_listing_run_folders(corpus: Path, tmp_path: Path):
    runs = _copy(corpus, tmp_path / "runs")
    out = tmp_path / "results"
    grade_runs(str(runs), str(out), default_grader(), workers=1)
    assert list((out / "_listings").glob("*.parquet"))
    inside = [str(p) for p in _run_folders(runs)]

    again, listed = _folders_listed_during(
        lambda: grade_runs(str(runs), str(out), default_grader(), workers=1))
    assert again.skipped == RUNS
    assert not [p for p in listed if any(p.startswith(run) for run in inside)]

    # without the saved listings every run is listed again, and still found unchanged; that
    # grade saves their listings (results from before listings were kept get them this way)
    import shutil

    shutil.rmtree(out / "_listings")
    again, listed = _folders_listed_during(
        lambda: grade_runs(str(runs), str(out), default_grader(), workers=1))
    assert again.skipped == RUNS
    assert {run for run in inside if any(p.startswith(run) for p in listed)} == set(inside)
    saved = [p.name for p in (out / "_listings").glob("*.parquet")]
    assert len(saved) == 1 and saved[0].endswith("-listed.parquet"), saved
    again, listed = _folders_listed_during(
        lambda: grade_runs(str(runs), str(out), default_grader(), workers=1))
    assert again.skipped == RUNS
    assert not [p for p in listed if any(p.startswith(run) for run in inside)]


def test_listing_workers_check_runs_by_the_saved_listings_they_inherit(corpus: Path,
                                                                      tmp_path: Path):
    # Forked listing workers find the saved listings in what they inherit. A run they had to
    # list again would come back with its listing, which the grade saves as a "-listed" file.
    import shutil

    runs = _copy(corpus, tmp_path / "runs")
    out = tmp_path / "results"

    def saved() -> list[str]:
        return sorted(p.name for p in (out / "_listings").glob("*.parquet"))

    grade_runs(str(runs), str(out), default_grader(), workers=2)
    first = saved()
    assert first and not [name for name in first if name.endswith("-listed.parquet")]
    again = grade_runs(str(runs), str(out), default_grader(), workers=2)
    assert (again.skipped, saved()) == (RUNS, first)

    shutil.rmtree(out / "_listings")
    again = grade_runs(str(runs), str(out), default_grader(), workers=2)
    assert again.skipped == RUNS
    assert len(saved()) == 1 and saved()[0].endswith("-listed.parquet")


def test_changes_a_saved_listing_cannot_vouch_for_are_regraded(corpus: Path, tmp_path: Path):
    runs = _copy(corpus, tmp_path / "runs")
    out = tmp_path / "results"
    grade_runs(str(runs), str(out), default_grader(), workers=2)
    folders = _run_folders(runs)
    added, removed, renamed, rewritten, emptied = folders[:5]
    binding = next(p for p in sorted(added.glob("bindings/*/*")) if "caller" not in p.parts)
    (binding.parent / "late-note.md").write_text("written after the grade\n")
    next(p for p in sorted(removed.rglob("*")) if p.is_file() and p.name != "state.md").unlink()
    victim = next(p for p in sorted(renamed.glob("bindings/*/*")) if "caller" not in p.parts)
    victim.rename(victim.with_name("renamed-" + victim.name))
    same = next(p for p in sorted(rewritten.glob("bindings/*/*")) if "caller" not in p.parts)
    text = same.read_bytes()
    same.write_bytes(text[::-1])  # same size, new content
    os.utime(same, ns=(1, same.stat().st_mtime_ns + 1_000_000_000))
    (emptied / "workspace" / "scratch").mkdir(parents=True)  # an empty folder: no file moved

    again = grade_runs(str(runs), str(out), default_grader(), workers=2)
    assert (again.changed, again.unchanged, again.new) == (4, RUNS - 4, 0)
    con = connect(str(out))
    assert con.sql("select count(*), count(distinct run_uri) from runs").fetchall() == [
        (RUNS, RUNS)]


def test_a_run_or_folder_swapped_for_a_symlink_to_its_copy_is_not_vouched_for(
        corpus: Path, tmp_path: Path):
    """A saved listing is checked without following a symlink: a run folder, or a folder in
    one, replaced by a symlink to an identical copy outside the root (same names, sizes and
    mtimes) is changed, and the run is refused as an unsafe path instead of kept as graded."""
    runs = _copy(corpus, tmp_path / "runs")
    out, outside = tmp_path / "results", tmp_path / "outside"
    grade_runs(str(runs), str(out), default_grader(), workers=2)
    graded = connect(str(out)).sql("select run_uri from runs where status = 'graded' "
                                   "order by run_uri").fetchall()
    whole, inner = Path(graded[0][0]), Path(graded[1][0])
    for run, swapped in ((whole, whole), (inner, inner / "bindings")):
        copy = outside / run.name / swapped.relative_to(run)
        shutil.copytree(swapped, copy)  # copy2 and copystat: the same sizes and mtimes
        parent_mtime = swapped.parent.stat().st_mtime_ns
        shutil.rmtree(swapped)
        swapped.symlink_to(copy, target_is_directory=True)
        os.utime(swapped.parent, ns=(parent_mtime, parent_mtime))  # its folder looks unmoved

    again = grade_runs(str(runs), str(out), default_grader(), workers=2)
    assert (again.changed, again.unchanged) == (2, RUNS - 2)
    rows = connect(str(out)).sql(
        "select r.run_uri, r.status, f.reason from runs r left join refusals f using (run_uri)"
        f" where r.run_uri in ('{whole}', '{inner}') order by r.run_uri").fetchall()
    assert [(status, reason) for _, status, reason in rows] == [("refused", "unsafe-path")] * 2


def test_a_folder_swapped_for_a_symlink_during_the_check_is_not_looked_through(
        corpus: Path, tmp_path: Path, monkeypatch):
    """A folder of a run swapped for a symlink while `Bucket.unchanged` checks the run, after
    the folders were checked and before the files below it: the files are looked up in the
    folder that was checked, never through the link (its copy outside the root, whose sizes
    differ, would say changed). The swap moved the run folder's mtime: the next check fails,
    and the run is listed anew (and refused: test above)."""
    runs = _copy(corpus, tmp_path / "runs")
    out, outside = tmp_path / "results", tmp_path / "outside"
    grade_runs(str(runs), str(out), default_grader(), workers=1)
    uri = connect(str(out)).sql("select run_uri from runs where status = 'graded' "
                                "order by run_uri limit 1").fetchall()[0][0]
    run = Path(uri)
    store = ResultStore(str(out))
    listing = store.listings(store.fingerprints({default_grader().grader_id})).take(uri)
    assert listing is not None and "bindings" in listing.folders
    shutil.copytree(run / "bindings", outside / "bindings")
    for path in (outside / "bindings").rglob("*"):
        if path.is_file():
            path.write_bytes(path.read_bytes() + b"\nnot the run's own\n")

    real_stat, swapped = os.stat, []

    def stat_then_swap(path, *args, **kwargs):  # at the first file's lookup, swap `bindings`
        if not swapped and str(path) not in listing.folders and kwargs.get("dir_fd"):
            (run / "bindings").rename(run / ".bindings-before")
            (run / "bindings").symlink_to(outside / "bindings", target_is_directory=True)
            swapped.append(path)
        return real_stat(path, *args, **kwargs)

    bucket, ref = Bucket(str(runs)), RunRef(run.name, uri, str(run))
    with monkeypatch.context() as patched:
        patched.setattr(os, "stat", stat_then_swap)
        assert bucket.unchanged(ref, listing)  # the checked folders' own files: as listed
    assert swapped
    assert not bucket.unchanged(ref, listing)  # a check begun now sees the run folder moved


def test_saved_listings_are_merged_and_a_broken_one_is_ignored(corpus: Path, tmp_path: Path):
    runs = _copy(corpus, tmp_path / "runs")
    out = tmp_path / "results"
    grade_runs(str(runs), str(out), default_grader(), batch_size=1, workers=1)
    assert len(list((out / "_listings").glob("*.parquet"))) == RUNS > ResultStore.LISTING_FILES_KEPT
    (out / "_listings" / "zz-broken.parquet").write_bytes(b"not parquet at all")
    again = grade_runs(str(runs), str(out), default_grader(), workers=1)
    assert again.skipped == RUNS
    left = sorted(p.name for p in (out / "_listings").glob("*.parquet"))
    assert len(left) == 1 and left[0].startswith("merged-"), left
    assert grade_runs(str(runs), str(out), default_grader(), workers=1).skipped == RUNS


def test_listing_workers_never_collect_what_they_inherit():
    # They are forked from the grading process: garbage it held at the fork (a socket, a
    # thread pool) must not be finalized in them, so what they inherit starts frozen.
    import gc

    from pipeline.checks import default_grader as grader
    from pipeline.grade import _Engine, default_ledger_graders

    engine = _Engine(2, grader(), default_ledger_graders(), None)
    try:
        inherited = [engine.submit_list(gc.get_freeze_count).result() for _ in range(4)]
    finally:
        engine.close()
    assert min(inherited) > 1000, inherited  # every worker, the later-forked ones too
    assert gc.get_freeze_count() == 0  # this process collects as before


def test_runs_parts_written_with_other_columns_still_vouch_for_their_runs(corpus: Path,
                                                                          tmp_path: Path):
    # Results outlive versions of rungrade: a committed `runs` part with a column this version
    # never wrote, and without one it writes, still gives its runs' fingerprints, and the runs
    # are skipped, not graded again.
    import polars as pl

    runs = _copy(corpus, tmp_path / "runs")
    out = tmp_path / "results"
    grade_runs(str(runs), str(out), default_grader(), batch_size=10, workers=1)
    part = sorted(out.glob("runs/grader=*/batch=*/*.parquet"))[0]
    older = pl.read_parquet(part)
    assert "layout" in older.columns
    older = older.drop("layout").with_columns(pl.lit("v0").alias("written_by"))
    older.write_parquet(part)
    again = grade_runs(str(runs), str(out), default_grader(), batch_size=10, workers=1)
    assert (again.found, again.skipped, again.graded + again.refused) == (RUNS, RUNS, 0)


def test_results_kept_inside_the_runs_root_are_not_runs(corpus: Path, tmp_path: Path):
    # `rungrade grade . --out results` from a runs folder puts the results under the runs:
    # their reports are named after runs, and a later grade must not take them for runs (nor
    # those of an older results folder beside them). Results given as RUNS say so.
    from typer.testing import CliRunner

    from pipeline.cli import app

    runs = _copy(corpus, tmp_path / "runs")
    cli = CliRunner()
    # an older results folder, then results in a folder of their own, then in the runs root
    # itself (its run folders beside the results' tables), each graded twice
    for out in (runs / "results-old", runs / "results", runs):
        for turn in range(2):
            done = cli.invoke(app, ["grade", str(runs), "--out", str(out), "--json",
                                    "--workers", "1"])
            assert done.exit_code == 0, done.output
            summary = json.loads(done.stdout)
            assert (summary["found"], summary["skipped"]) == (RUNS, RUNS if turn else 0)
        assert len(list((out / "reports").glob("*.json"))) > 0
    given = cli.invoke(app, ["grade", str(runs / "results"), "--out", str(tmp_path / "r")])
    assert given.exit_code == 2
    assert "holds rungrade results (_commits/) and no run folder" in " ".join(
        given.stderr.split())
    # but runs kept beside their results may all be gone one night: nothing to grade
    from pipeline.sources.bucket import Bucket

    for ref in list(Bucket(str(runs)).discover()):
        shutil.rmtree(ref.path)
    none = cli.invoke(app, ["grade", str(runs), "--out", str(runs), "--json"])
    assert none.exit_code == 0, none.output
    assert json.loads(none.stdout)["found"] == 0


def test_nights_of_changes_graded_incrementally_equal_one_fresh_grade(tmp_path):
    # Whatever changes from one night to the next, grading only what changed must leave the
    # results a fresh grade of the last night's runs gives: the same rows in every view, and
    # the same report for every run, none for a refused one.
    runs, spare_root = tmp_path / "runs", tmp_path / "spare"
    synthesize(str(runs), 40, seed=21, workers=1)
    synthesize(str(spare_root), 8, seed=22, workers=1)
    spare = sorted(p for p in spare_root.rglob("2026*") if p.is_dir())
    rnd = random.Random(5)
    nightly = tmp_path / "nightly"
    for night in range(4):
        if night:
            change_night(runs, spare, rnd)
        summary = grade_runs(str(runs), str(nightly), default_grader(), batch_size=16,
                             workers=1)
        assert summary.found == summary.skipped + summary.graded + summary.refused
        assert night == 0 or 0 < summary.graded + summary.refused < summary.found
    fresh = tmp_path / "fresh"
    grade_runs(str(runs), str(fresh), default_grader(), workers=1)
    assert graded_state(nightly) == graded_state(fresh)
