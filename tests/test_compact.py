"""`rungrade compact`: the batches each grader id committed since its last compaction (or
all of them, `--all`) rewritten as one batch.

The results are graded in many small batches, under two grader ids, with a run regraded
after it changed (its earlier rows superseded); compaction must leave every view (tables,
marts, the grade log aside) showing the same rows, in one part per table and grader id, and
a kill at any step must leave the views as they were.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import duckdb
import pytest
from analyst_runs import HEAD_ID, write_strict_grader
from conftest import RUNGRADE
from typer.testing import CliRunner

from pipeline import compact as compact_module
from pipeline import exit_codes
from pipeline.analysis import grader_ids
from pipeline.catalog import VIEW_MODELS, ask, connect, read_grades
from pipeline.checks import DEFAULT_GRADER_ID
from pipeline.cli import app
from pipeline.grade import default_ledger_graders
from pipeline.store import ResultStore
from pipeline.synth import synthesize
from pipeline.tables import TABLES

RUNS = 24
VIEWS = (*TABLES, *(model.rsplit("/", 1)[-1] for model in VIEW_MODELS))


def grade(runs: Path, out: Path, *extra: str) -> dict:
    result = CliRunner().invoke(app, ["grade", str(runs), "--out", str(out), "--json",
                                      "--workers", "1", *extra])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


@pytest.fixture(scope="module")
def graded(tmp_path_factory) -> tuple[Path, Path]:
    """(runs, results): 24 runs graded in batches of 5, one of them changed and regraded,
    then all graded again in batches of 10 under a second (stricter) grader id."""
    tmp = tmp_path_factory.mktemp("compact")
    runs, out = tmp / "runs", tmp / "results"
    synthesize(str(runs), RUNS, seed=11, workers=1)
    grade(runs, out, "--batch-size", "5")
    binding = next(p for p in sorted(runs.rglob("bindings/*/*.md")) if "caller" not in p.parts)
    with open(binding, "a") as handle:
        handle.write("\nA late correction appended by the service.\n")
    assert grade(runs, out, "--batch-size", "5")["changed"] == 1
    grade(runs, out, "--batch-size", "10", "--grader",
          str(write_strict_grader(tmp / "strict.py", HEAD_ID)))
    return runs, out


def views(out: Path | str, endpoint_url: str | None = None, con=None) -> dict[str, object]:
    """Every view's rows, in order, and the grader ids in order (through `con`, default a
    fresh connection). Batch ids are left out (compaction makes new ones), but not their
    order: grader_pairs's first batches are compared, not shown."""
    con = con or connect(str(out), endpoint_url)
    shown = {}
    for view in VIEWS:
        batches = [c for c in con.sql(f"select * from {view} limit 0").columns if "batch" in c]
        order = (", base_first_batch < head_first_batch as base_first"
                 if view == "grader_pairs" else "")
        leave = f" exclude ({', '.join(batches)})" if batches else ""
        shown[view] = con.sql(f"select *{leave}{order} from {view} order by all").pl()
    shown["grader ids"] = grader_ids(con)
    return shown


def assert_same(before: dict, after: dict) -> None:
    assert before.keys() == after.keys()
    for name, frame in before.items():
        if name == "grader ids":
            assert after[name] == frame
        else:
            assert after[name].equals(frame), name


def parts(out: Path) -> dict[str, int]:
    """Part files per table and grader folder."""
    found: dict[str, int] = {}
    for part in out.glob("*/grader=*/batch=*/*.parquet"):
        key = f"{part.parts[-4]}/{part.parts[-3]}"
        found[key] = found.get(key, 0) + 1
    return found


def copy(results: Path, to: Path) -> Path:
    shutil.copytree(results, to)
    return to


def in_batches_of_3(tmp_path: Path, runs: int) -> tuple[Path, Path]:
    """(runs, results): `runs` synthetic runs under tmp_path/runs, graded three a batch into
    tmp_path/results."""
    folder, out = tmp_path / "runs", tmp_path / "results"
    synthesize(str(folder), runs, seed=5, workers=1)
    grade(folder, out, "--batch-size", "3")
    return folder, out


def test_compact_keeps_every_view_and_leaves_one_part_per_table(graded, tmp_path):
    runs, base = graded
    out = copy(base, tmp_path / "results")
    before = views(out)
    store = ResultStore(str(out))
    commits = store.commits()
    per_grader = {c["grader_id"]: 0 for c in commits}
    for c in commits:
        per_grader[c["grader_id"]] += 1
    assert per_grader[HEAD_ID] == 3 and max(per_grader.values()) == 6  # 5 batches, 1 regrade
    assert max(parts(out).values()) > 1

    done = CliRunner().invoke(app, ["compact", str(out)])
    assert done.exit_code == 0, done.output
    assert f"{HEAD_ID}: 3 batches → 1" in done.stdout and "6 batches → 1" in done.stdout

    assert_same(before, views(out))
    assert set(parts(out).values()) == {1}  # one part per table and grader id
    after = store.commits()
    assert sorted(c["grader_id"] for c in after) == sorted(per_grader)  # one batch each
    assert len(list((out / "_commits").glob("*.json"))) == len(after)  # replaced: gone
    assert not list((out / "_staging").glob("*"))
    con = connect(str(out))
    assert con.sql("select count(*) from runs").fetchall()[0][0] == sum(c["runs"] for c in after)

    # the next grade finds every run graded: nothing to do; a change is graded as before
    assert grade(runs, out)["skipped"] == RUNS
    assert (out / "catalog.duckdb").exists()
    again = CliRunner().invoke(app, ["compact", str(out)])
    assert again.exit_code == 0 and "nothing to compact" in again.stdout


def test_later_compactions_rewrite_only_what_came_since(tmp_path):
    # Runs graded after a compaction supersede its rows; the next compaction merges only the
    # batches graded since (the first compacted batch untouched), --all merges everything.
    runs, out = tmp_path / "runs", tmp_path / "results"
    synthesize(str(runs), 12, seed=5, workers=1)
    graded_in = [grade(runs, out, "--batch-size", "4")["batches"]]  # each grade's batches
    first = compact_module.compact(str(out)).batches
    # the ledger graders the merged batches read their ledgers with, the same in all: kept,
    # so ledgers refused in them are not read again (see store.ledger_graders_changed)
    builtin = sorted(g.grader_id for g in default_ledger_graders())
    assert [c["ledger_graders"] for c in ResultStore(str(out)).commits()] == [builtin]
    kept = {p: p.read_bytes() for p in out.glob(f"*/grader=*/batch={first[0]}/*.parquet")}
    outputs = [p for p in sorted(runs.rglob("bindings/*/*.md")) if "caller" not in p.parts]
    changed = []
    for output in (outputs[0], outputs[-1]):  # two runs change, one grade each
        with open(output, "a") as handle:
            handle.write("\nOne more change.\n")
        regraded = grade(runs, out)
        assert (regraded["changed"], regraded["skipped"]) == (1, 11)
        changed.append((str(output.parents[2]), regraded["batches"][0]))
        graded_in.append(regraded["batches"])
    con = connect(str(out))
    for uri, batch in changed:  # the new rows, once
        assert con.sql(f"select count(*), max(batch_id) from runs where run_uri = '{uri}'"
                       ).fetchall() == [(1, batch)]
    assert con.sql("select count(*), count(distinct run_uri) from runs").fetchall() == [(12, 12)]
    before = views(out)

    told: list[tuple[str, int, int]] = []
    since = compact_module.compact(str(out), progress=lambda *step: told.append(step))
    assert list(since.merged.values()) == [2] and since.batches[0] > first[0]
    assert [(n, total) for _, n, total in told] == [(n, len(TABLES)) for n in
                                                    range(1, len(TABLES) + 1)]
    assert told[-1][0] == f"compacting {DEFAULT_GRADER_ID}: {TABLES[-1]}"
    assert_same(before, views(out))
    assert {p: p.read_bytes() for p in kept} == kept  # the first compacted batch untouched
    assert [c["batch_id"] for c in ResultStore(str(out)).commits()] == [*first, *since.batches]
    assert not compact_module.compact(str(out)).batches  # nothing new since

    # the grade log names the batches each grade committed, and where their rows are now
    assert [len(batches) for batches in graded_in] == [3, 1, 1]
    assert batches_now(out) == [(graded_in[0], first), (graded_in[1], since.batches),
                                (graded_in[2], since.batches)]

    whole = CliRunner().invoke(app, ["compact", str(out), "--all"])
    assert whole.exit_code == 0 and "2 batches → 1" in whole.stdout, whole.output
    assert_same(before, views(out))
    assert len(ResultStore(str(out)).commits()) == 1 and set(parts(out).values()) == {1}
    # the first grade's batches were compacted twice: found in the last compacted batch
    (last,) = (c["batch_id"] for c in ResultStore(str(out)).commits())
    assert batches_now(out) == [(batches, [last]) for batches in graded_in]


def batches_now(out: Path) -> list[tuple[list[str], list[str]]]:
    """(batches, batches_now) of each grade in the `grades` view, oldest first, checked to be
    the same in the grade log as `rungrade grades` reads it and in RESULTS/catalog.duckdb."""
    query = "select batches, batches_now from grades order by grade_id"
    found = connect(str(out)).sql(query).fetchall()
    logged = read_grades(str(out))
    assert list(zip(logged["batches"].to_list(), logged["batches_now"].to_list(),
                    strict=True)) == found
    with contextlib.closing(duckdb.connect(str(out / "catalog.duckdb"), read_only=True)) as con:
        assert con.sql(query).fetchall() == found
    return found


def test_a_connection_opened_before_a_compaction_asks_to_connect_again(tmp_path):
    # Its views keep the batches committed as it opened; the compaction removes them. Its
    # queries must not show an empty or partial table: they fail, saying what to do.
    runs, out = in_batches_of_3(tmp_path, 9)
    old = connect(str(out))
    count = "select count(*) from run_scores"
    graded_runs = old.sql(count).fetchall()
    assert graded_runs[0][0] > 0
    # a grade adds batches (and markers): the connection keeps showing what it showed
    binding = next(p for p in sorted(runs.rglob("bindings/*/*.md")) if "caller" not in p.parts)
    with open(binding, "a") as handle:
        handle.write("\nAnother late correction.\n")
    assert grade(runs, out)["changed"] == 1
    assert old.sql(count).fetchall() == graded_runs
    before = views(out)
    cli = duckdb.connect(str(out / "catalog.duckdb"), read_only=True)  # as the duckdb CLI
    assert cli.sql(count).fetchall() == graded_runs

    assert compact_module.compact(str(out)).batches
    for stale in (old, cli):
        for query in (count, "select * from version_summary", "select count(*) from clauses"):
            with pytest.raises(duckdb.InvalidInputException, match=r"compacted since this "
                               r"connection was opened.*connect again"):
                stale.sql(query).fetchall()
    # duckdb.connect again in this process, while `cli` is open, returns its database as it
    # was (DuckDB shares one a file): what the message and the README say to do is to close
    # it first, and then the catalog is that of the compacted results
    again = duckdb.connect(str(out / "catalog.duckdb"), read_only=True)
    with pytest.raises(duckdb.InvalidInputException, match=r"con\.close\(\)"):
        again.sql(count).fetchall()
    again.close()
    cli.close()
    assert duckdb.connect(str(out / "catalog.duckdb"), read_only=True).sql(
        count).fetchall() == graded_runs
    assert_same(before, views(out))
    assert connect(str(out)).sql(count).fetchall() == graded_runs


def test_a_question_a_compaction_outlived_is_asked_again_on_a_new_connection(tmp_path):
    # `rungrade sql`, `trend`, `diff` and `report` ask through `catalog.ask`: nobody locks
    # the results to read them, and a compaction may end between the views being made and
    # the query. The answer is then that of the compacted results, not "connect again".
    _, out = in_batches_of_3(tmp_path, 9)
    scores = "select run_uri, overall_score from run_scores order by run_uri"
    before = connect(str(out)).sql(scores).fetchall()
    cons = []

    def question(con):
        cons.append(con)
        if len(cons) == 1:
            assert compact_module.compact(str(out)).batches
        return con.sql(scores).fetchall()

    assert ask(str(out), question) == before
    assert len(cons) == 2 and len(before) > 0


def test_a_part_gone_mid_question_is_asked_again_unless_its_batch_is_committed(tmp_path):
    # A grade removes the parts a crash left of a batch it never committed; a query that
    # listed them just before fails on the first it then opens (DuckDB: "Cannot open file").
    # Here the question reads such a part itself, after it is gone, to meet that error
    # where a race would: its batch is not committed, so a new connection is asked again.
    # The same error on a part of a committed batch is the results' fault, not a race: it
    # goes through at once, and the CLI says a store failed (exit 4), not a traceback.
    _, out = in_batches_of_3(tmp_path, 6)
    committed = sorted(out.glob("runs/grader=*/batch=*/*.parquet"))[0]
    left = Path(str(committed.parent).replace("batch=", "batch=20000101T000000000000Z-")
                ) / committed.name
    shutil.copytree(committed.parent, left.parent)  # a crashed grade's uncommitted parts
    count = "select count(*) from runs"
    fresh = connect(str(out)).sql(count).fetchall()
    asked = []

    def question(part: Path):
        def ask_it(con):
            asked.append(part)
            if len(asked) == 1:
                if part == left:
                    assert ResultStore(str(out)).discard_uncommitted() == [
                        left.parent.name.removeprefix("batch=")]
                else:
                    part.unlink()
                con.sql(f"select count(*) from read_parquet('{part}')").fetchall()
            return con.sql(count).fetchall()
        return ask_it

    assert ask(str(out), question(left)) == fresh
    assert len(asked) == 2
    asked.clear()
    with pytest.raises(duckdb.IOException, match=re.escape(committed.parent.name)):
        ask(str(out), question(committed))
    assert len(asked) == 1
    # in the part's place, a file that is not Parquet fails the making of the views
    committed.write_bytes(b"not a Parquet file")
    for command in (["trend", str(out)], ["sql", "-r", str(out), count]):
        result = CliRunner().invoke(app, command)
        assert result.exit_code == exit_codes.STORAGE, result.output
        assert "Traceback" not in result.output and committed.name in result.output
        assert "could not be made" in result.output, result.output


def test_a_question_reads_no_part_of_a_batch_no_longer_committed(tmp_path):
    # A compaction deletes the parts of the batches it merged, for seconds on many batches;
    # the views bound every part a glob found, so each connection `ask` made meanwhile failed
    # on one of them, three times in a row, and `rungrade sql` exited 4 ("a store failed").
    # Here a part of a batch no marker names is no Parquet any more, as a part half gone.
    _, out = in_batches_of_3(tmp_path, 6)
    count = "select count(*) from runs"
    fresh = connect(str(out)).sql(count).fetchall()
    for table in TABLES:
        committed = sorted((out / table).glob("grader=*/batch=*"))[0]
        merged = committed.with_name("batch=20000101T000000000000Z-merged")
        shutil.copytree(committed, merged)
        for part in merged.iterdir():
            part.write_bytes(b"PAR1 being deleted")
    assert ask(str(out), lambda con: con.sql(count).fetchall()) == fresh
    result = CliRunner().invoke(app, ["sql", str(out), count, "--csv", "-"])
    assert result.exit_code == 0 and result.stdout.split() == ["count_star()", str(fresh[0][0])]


def test_batches_a_compaction_merges_as_a_reader_checks_them_are_not_damage(tmp_path,
                                                                           monkeypatch):
    # A reader checks that each batch it read as committed holds its parts; a compaction
    # ending between its reading the markers and its looking at the parts removed those of
    # the batches it merged. They are not missing, they are merged: the reader connects
    # again and shows the compacted batch.
    from pipeline import catalog

    _, out = in_batches_of_3(tmp_path, 9)
    scores = "select run_uri, overall_score from run_scores order by run_uri"
    before = connect(str(out)).sql(scores).fetchall()
    views, made, compacted = catalog.create_views, [], []

    def compacted_meanwhile(con, store, **kwargs):
        made.append(views(con, store, **kwargs))
        if not compacted:
            compacted.append(True)  # (the compaction writes its catalog: views made again)
            assert compact_module.compact(str(out)).batches
        return made[-1]

    monkeypatch.setattr(catalog, "create_views", compacted_meanwhile)
    assert connect(str(out)).sql(scores).fetchall() == before
    assert len(made) == 3  # the reader's, the compaction's catalog's, the reader's again


def test_commit_markers_removed_while_a_reader_reads_them_are_listed_again(tmp_path,
                                                                          monkeypatch):
    # A reader lists `_commits/`, then reads the markers; a compaction may remove the
    # markers of the batches it merged in between. The reader lists them again, and sees
    # the compacted batch, rather than failing on a marker gone (or reading without it).
    _, out = in_batches_of_3(tmp_path, 9)
    store = ResultStore(str(out))
    listed = [c["batch_id"] for c in store.commits()]
    assert len(listed) == 3
    cat, compacted = type(store.fs).cat, []

    def compacting_cat(fs, paths, *args, **kwargs):
        if not compacted and isinstance(paths, list) and "_commits" in str(paths[0]):
            compacted.append(None)  # (the compaction reads the markers too)
            compacted[0] = compact_module.compact(str(out)).batches  # after the listing
        return cat(fs, paths, *args, **kwargs)

    monkeypatch.setattr(type(store.fs), "cat", compacting_cat)
    commits = store.commits()
    assert len(compacted) == 1 and len(compacted[0]) == 1  # (one batch made, read meanwhile)
    assert len(commits) == 1 and commits[0]["replaces"] == listed


def assert_catalog_reads(out: Path) -> None:
    """RESULTS/catalog.duckdb (what the duckdb CLI opens) names only batches whose parts are
    there: views over a batch whose files were removed would lose its rows. (Its rows are
    not compared here: DuckDB keeps what it read of a file within a process.)"""
    import duckdb

    con = duckdb.connect(str(out / "catalog.duckdb"), read_only=True)
    try:
        named = {batch for batch, in con.sql("select batch_id from _commits").fetchall()}
    finally:
        con.close()
    there = {d.name.removeprefix("batch=") for d in out.glob("runs/grader=*/batch=*")}
    assert named and named <= there, named - there


# The steps: staging the parts, committing the new batch (then the catalog is written),
# removing the batches it replaced (their parts, then their markers). Each is cut short by
# a failure; the views must show the same rows throughout, and catalog.duckdb read.
@pytest.mark.parametrize("step", ["staging", "committed", "half removed"])
def test_a_compaction_stopped_at_any_step_changes_no_view(graded, tmp_path, monkeypatch, step):
    runs, base = graded
    before = views(base)
    out = copy(base, tmp_path / "results")
    real_stage, real_tidy = compact_module._stage, ResultStore.tidy_replaced
    calls = {"stage": 0}

    def stage(*args, **kwargs):
        calls["stage"] += 1
        if step == "staging" and calls["stage"] == 3:
            raise OSError("the disk is full")
        return real_stage(*args, **kwargs)

    def catalog(store):
        raise OSError("killed right after the commit")

    def tidy(store):  # half the replaced batches' parts go, then it dies
        replaced = {b for m in store._markers().values() for b in m.get("replaces", ())}
        dirs = sorted(d for d in out.glob("*/grader=*/batch=*")
                      if d.name.removeprefix("batch=") in replaced)
        assert dirs
        for folder in dirs[: len(dirs) // 2]:
            shutil.rmtree(folder)
        raise OSError("killed while removing")

    with monkeypatch.context() as patched:
        patched.setattr(compact_module, "_stage", stage)
        if step == "committed":
            patched.setattr(compact_module, "tidy_compacted", catalog)
        patched.setattr(ResultStore, "tidy_replaced", tidy)
        with pytest.raises(OSError):
            compact_module.compact(str(out))
    assert real_tidy is ResultStore.tidy_replaced
    assert_same(before, views(out))  # readers see the same rows
    assert_catalog_reads(out)
    # another compaction starts from what this one left (tidying it first), and stops too
    # if it has batches to stage (after a commit, it has none left: it tidies, and is done)
    with monkeypatch.context() as patched, contextlib.suppress(OSError):
        patched.setattr(compact_module, "_stage", lambda *a, **k: (_ for _ in ()).throw(
            OSError("stopped again")))
        compact_module.compact(str(out))
    assert_same(before, views(out))
    assert_catalog_reads(out)
    assert grade(runs, out)["skipped"] == RUNS  # the next grade tidies up, grades nothing
    assert_same(before, views(out))
    assert_catalog_reads(out)  # (rewritten if it named what was tidied)
    markers = list((out / "_commits").glob("*.json"))
    assert len(markers) == len(ResultStore(str(out)).commits())  # none replaced left
    assert not list((out / "_staging").glob("*"))
    compact_module.compact(str(out))
    assert_same(before, views(out))
    assert_catalog_reads(out)
    assert set(parts(out).values()) == {1}


def test_compaction_killed_at_random_moments(graded, tmp_path):
    base = graded[1]
    before = views(base)
    out = copy(base, tmp_path / "results")
    for delay in (0.3, 0.45, 0.6, 0.75, 0.9, 1.05, 1.2):  # each from what the last left
        proc = subprocess.Popen([RUNGRADE, "compact", str(out)], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, start_new_session=True)
        time.sleep(delay)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        assert_same(before, views(out))
        assert_catalog_reads(out)
    done = subprocess.run([RUNGRADE, "compact", str(out)], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert_same(before, views(out))
    assert_catalog_reads(out)


def test_compact_waits_for_no_grade(graded, tmp_path):
    out = copy(graded[1], tmp_path / "results")
    with ResultStore(str(out)).lock():
        locked = CliRunner().invoke(app, ["compact", str(out)])
    assert locked.exit_code == exit_codes.LOCKED, locked.output
    assert "being written by another" in locked.output
    with ResultStore(str(out)).lock("rungrade compact"):  # and a grade waits for compact
        waiting = CliRunner().invoke(app, ["grade", str(graded[0]), "--out", str(out)])
    assert waiting.exit_code == exit_codes.LOCKED, waiting.output
    assert "being written by another `rungrade compact`" in " ".join(waiting.output.split())
    missing = CliRunner().invoke(app, ["compact", str(tmp_path / "none")])
    assert missing.exit_code == exit_codes.USAGE and "no committed results" in missing.output
    assert not (tmp_path / "none").exists()


@pytest.mark.parametrize(("table", "damage"), [("checks", "deleted"), ("checks", "not Parquet"),
                                               ("runs", "not Parquet")])
def test_compact_refuses_results_a_part_of_which_is_damaged(graded, tmp_path, table, damage):
    # a part deleted was merged away (exit 0), and the views answered short from then on
    # without a word; one that is not Parquet ended the compaction with a traceback (exit 1)
    # and left its staging behind
    out = copy(graded[1], tmp_path / "results")
    part = sorted(out.glob(f"{table}/grader=*/batch=*/part-*.parquet"))[0]
    if damage == "deleted":
        part.unlink()
    else:
        part.write_text("junk")
    before = sorted(p.relative_to(out) for p in out.rglob("*") if p.is_file()
                    and "_grades" not in p.parts)
    result = CliRunner().invoke(app, ["compact", str(out)])
    assert result.exit_code == exit_codes.STORAGE, result.output
    said = " ".join(result.output.split())
    assert ("lack parts of committed batches" if damage == "deleted"
            else f"hold a committed part of {table} that cannot be read") in said
    assert "Restore what is damaged from a whole copy" in said
    after = sorted(p.relative_to(out) for p in out.rglob("*") if p.is_file()
                   and "_grades" not in p.parts)
    assert after == before  # nothing merged, nothing staged
    asked = CliRunner().invoke(app, ["sql", str(out), "select count(*) from checks"])
    assert asked.exit_code == exit_codes.STORAGE, asked.output


def test_a_grade_says_when_results_want_compacting(tmp_path, monkeypatch):
    monkeypatch.setattr(compact_module, "COMPACT_AFTER", 4)
    runs, out = tmp_path / "runs", tmp_path / "results"
    synthesize(str(runs), 6, seed=5, workers=1)
    cli = CliRunner()

    def summary(*extra: str) -> tuple[dict, str]:
        shown = cli.invoke(app, ["grade", str(runs), "--out", str(out), "--workers", "1",
                                 *extra])
        assert shown.exit_code == 0, shown.output
        data = cli.invoke(app, ["grade", str(runs), "--out", str(out), "--json"])
        return json.loads(data.stdout), "".join(shown.stdout.split())  # (folded lines)

    data, text = summary("--batch-size", "2")  # 3 batches: below the mark
    assert data["uncompacted"] == 3 and "rungrade compact" not in text
    for name in sorted(p.name for p in runs.iterdir())[:2]:  # two runs change: 2 batches more
        with open(next((runs / name).rglob("state.md")), "a") as handle:
            handle.write("\n")
        data, text = summary()
    assert data["uncompacted"] == 5
    assert f"5batchessincethelast:`rungradecompact{out}`wouldmakequeries" in text
    compact_module.compact(str(out))
    data, text = summary()
    assert data["uncompacted"] == 0 and "rungrade compact" not in text


def test_a_grade_compacts_the_results_itself_once_told_how_many_batches_are_too_many(tmp_path):
    # `--compact-after N`: a nightly job's one command; below N batches since the last
    # compaction nothing is compacted, from N on the grade compacts them as `compact` does
    runs, out = tmp_path / "runs", tmp_path / "results"
    synthesize(str(runs), 6, seed=5, workers=1)
    cli = CliRunner()
    first = grade(runs, out, "--batch-size", "2", "--compact-after", "4")  # 3 batches
    assert first["uncompacted"] == 3 and "compacted" not in first
    before = views(out)
    state = next(sorted(runs.iterdir())[0].rglob("state.md"))  # a run changes: a batch more
    with open(state, "a") as handle:
        handle.write("\n")
    changed = state.parent.name
    shown = cli.invoke(app, ["grade", str(runs), "--out", str(out), "--workers", "1",
                             "--compact-after", "4"])
    assert shown.exit_code == 0, shown.output
    assert "compacted" in shown.stdout and "4 batches → 1" in shown.stdout
    assert len(ResultStore(str(out)).commits()) == 1
    # the grade's record says what its summary said (it kept the count before compacting)
    record = ResultStore(str(out)).grade_record(read_grades(str(out))["grade_id"][-1])
    assert (record["uncompacted"], record["compacted"]) == (0, {DEFAULT_GRADER_ID: 4})
    assert record["error"] is None  # (said while it compacted: see the killed one below)
    assert parts(out) == {key: 1 for key in parts(out)}  # one part per table
    after = views(out)
    # the same rows, but for the run graded again
    for name in ("runs", "run_scores", "clause_verdicts"):
        assert after[name].height == before[name].height
        assert after[name].filter(after[name]["run_id"] != changed).equals(
            before[name].filter(before[name]["run_id"] != changed)), name
    again = grade(runs, out, "--compact-after", "4")
    assert (again["skipped"], again["uncompacted"]) == (6, 0) and "compacted" not in again
    too_few = cli.invoke(app, ["grade", str(runs), "--out", str(out), "--compact-after", "1"])
    assert too_few.exit_code == exit_codes.USAGE


def test_sigterm_during_a_compaction_stops_it_with_its_exit_code_and_a_message(
        graded, tmp_path, monkeypatch):
    # the process died by the signal itself: no message, no summary, return code -15
    out = copy(graded[1], tmp_path / "results")
    before = views(out)
    merge = compact_module._compact

    def terminated_midway(*args, **kwargs):
        os.kill(os.getpid(), signal.SIGTERM)  # (as a scheduler stops a job)
        return merge(*args, **kwargs)

    monkeypatch.setattr(compact_module, "_compact", terminated_midway)
    result = CliRunner().invoke(app, ["compact", str(out)])
    assert result.exit_code == exit_codes.STOPPED, result.output
    assert "stopped by SIGTERM while compacting" in " ".join(result.output.split())
    monkeypatch.setattr(compact_module, "_compact", merge)
    assert_same(before, views(out))  # every view as it was; the next compaction finishes
    assert CliRunner().invoke(app, ["compact", str(out)]).exit_code == 0
    assert_same(before, views(out))


def test_a_grade_stopped_while_it_compacts_still_prints_its_summary(tmp_path, monkeypatch):
    # the grade's batches were committed, but neither its summary nor its --json came out:
    # a scheduler reading the JSON got nothing for a night that graded every run
    runs, out = tmp_path / "runs", tmp_path / "results"
    synthesize(str(runs), 6, seed=5, workers=1)
    merge = compact_module._compact

    def terminated_midway(*args, **kwargs):
        os.kill(os.getpid(), signal.SIGTERM)
        return merge(*args, **kwargs)

    monkeypatch.setattr(compact_module, "_compact", terminated_midway)
    result = CliRunner().invoke(app, ["grade", str(runs), "--out", str(out), "--workers", "1",
                                      "--batch-size", "2", "--compact-after", "2", "--json"])
    assert result.exit_code == exit_codes.STOPPED, result.output
    summary = json.loads(result.stdout)
    assert (summary["found"], summary["graded"] + summary["refused"]) == (6, 6)
    assert len(summary["batches"]) == 3 and "compacted" not in summary
    assert "stopped by SIGTERM while compacting after the grade" in " ".join(
        result.stderr.split())
    # its record: the grade finished, the compaction after it did not (v19 said nothing)
    record = ResultStore(str(out)).grade_record(summary["grade_id"])
    assert record["status"] == "finished"
    assert record["error"].startswith("the compaction after the grade (--compact-after) did "
                                      "not finish, exit 143")
    listed = CliRunner().invoke(app, ["grades", str(out)])
    assert f"{summary['grade_id']} finished, but: the compaction" in " ".join(
        listed.output.split())


def test_a_grade_killed_while_it_compacts_says_so_in_its_record(tmp_path):
    # killed outright after its batches committed, while compacting: its record said
    # `finished` and nothing more (v20 as first written amended it only on a clean exit)
    runs, out = tmp_path / "runs", tmp_path / "results"
    synthesize(str(runs), 6, seed=5, workers=1)
    grade(runs, out, "--batch-size", "2")
    hook = tmp_path / "hook.py"  # the grade's compaction kills the grade as it starts
    hook.write_text(textwrap.dedent("""
        import os, signal, sys
        import pipeline.compact as compact
        from pipeline.cli import main
        compact._compact = lambda *a, **k: os.kill(os.getpid(), signal.SIGKILL)
        sys.argv = ["rungrade", *sys.argv[1:]]
        main()
    """))
    with next(runs.rglob("state.md")).open("a") as state:  # a run changes: a batch more
        state.write("\n")
    killed = subprocess.run([sys.executable, str(hook), "grade", str(runs), "--out", str(out),
                             "--workers", "1", "--compact-after", "2"], capture_output=True)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    record = read_grades(str(out)).row(-1, named=True)
    assert record["status"] == "finished" and record["graded"] == 1
    assert record["error"] == ("the compaction after the grade (--compact-after) did not "
                               "finish; the grade's batches are committed")


def test_a_ledger_mended_after_a_compaction_is_graded_again_and_shown_graded(tmp_path):
    # A ledger refused (under the contract grader's id), graded once whole (under its ledger
    # grader's), refused again: compacting the contract grader's two batches names them after
    # the first, which sorts before the grading. The rerun took the grading's fingerprint for
    # the latest: the refused ledger was refused anew every night, and once mended to the
    # files it was graded from, skipped, its refusal shown for good.
    runs, out = tmp_path / "runs", tmp_path / "results"
    shutil.copytree(Path(__file__).resolve().parent.parent / "data" / "runs" / "moltzap-evals",
                    runs)
    run_id = "20261112-091500-pwguard"
    completion = runs / "ledgers" / run_id / "completion.json"
    whole = completion.read_bytes()

    def shown() -> list[tuple[str, str]]:
        with connect(str(out)) as con:
            return con.sql(f"select grader_id, status from runs where run_id = '{run_id}' "
                           "order by 1").fetchall()

    completion.unlink()
    assert grade(runs, out)["refusals"] == {"ledger-incomplete": 1}
    completion.write_bytes(whole)
    assert grade(runs, out)["graded"] == 1
    completion.unlink()
    assert grade(runs, out)["refused"] == 1
    assert compact_module.compact(str(out)).merged.get(DEFAULT_GRADER_ID) == 2
    again = grade(runs, out)  # nothing changed since the refusal
    assert (again["skipped"], again["batches"]) == (again["found"], [])
    completion.write_bytes(whole)
    mended = grade(runs, out)
    assert (mended["changed"], mended["graded"]) == (1, 1)
    assert shown() == [("moltzap.password-guard.grader/v1", "graded")]
