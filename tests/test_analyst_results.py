"""The results as analysts meet them: the dataset, trends, grader-version diffs, the CLI.

The sample runs are graded under two grader ids, the second with one rule changed
(`output_published` becomes "published and at least MIN_WORDS words"). Expectations are
computed here from the stored Parquet with polars and plain Python, never by the SQL under test.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
import shutil
import statistics
from pathlib import Path

import duckdb
import polars as pl
import pytest
from analyst_runs import (
    BASE_ID,
    HEAD_ID,
    MIN_WORDS,
    grade,
    grade_two_versions,
    write_sample_runs,
    write_strict_grader,
)
from check_runs import run_id, write_service_run
from conftest import SAMPLE_RUNS
from nightly_changes import change_night
from test_faults import CATALOG
from typer.testing import CliRunner

from pipeline import analysis
from pipeline.catalog import ResultsDamaged
from pipeline.checks import DEFAULT_GRADER_ID
from pipeline.cli import app
from pipeline.exit_codes import LOCKED, STORAGE, USAGE
from pipeline.numbers import shown
from pipeline.store import ResultStore, grader_slug
from pipeline.synth import synthesize
from pipeline.tables import COLUMNS, TABLES

KEY = ["run_uri", "service", "clause_id"]


@pytest.fixture(scope="module")
def graded(tmp_path_factory) -> dict[str, Path]:
    return grade_two_versions(tmp_path_factory.mktemp("analyst"))


def stored(results: Path, table: str) -> pl.DataFrame:
    """A table straight from the Parquet dataset (hive columns grader and batch included)."""
    return pl.scan_parquet(str(results / table / "**" / "*.parquet"),
                           hive_partitioning=True).collect()


def cli(*args: str):
    return CliRunner().invoke(app, list(args))


def test_the_default_base_is_the_previous_version_of_the_heads_grader(tmp_path):
    # after acme v1 graded every run and a side grader a few since, acme v2's diff compared
    # it with the side grader (the newest id sharing runs), not with acme v1
    runs, results = tmp_path / "runs", tmp_path / "results"
    for folder, n in (("x", 1), ("x", 2), ("y", 3)):
        write_service_run(runs / folder, run_id(n), ensures="- `out`: one sentence",
                          outputs={"out.md": "Done."})
    for root, grader_id in ((runs, "acme.contract.grader/v1"),
                            (runs / "x", "side.contract.grader/v1"),
                            (runs, "acme.contract.grader/v2")):
        assert cli("grade", str(root), "--out", str(results), "--grader-id",
                   grader_id).exit_code == 0
    result = cli("diff", str(results))
    assert result.exit_code == 0, result.output
    assert "acme.contract.grader/v1 → acme.contract.grader/v2" in result.output
    assert "runs compared 3 " in " ".join(result.output.split())


def test_sql_prints_what_the_results_hold_never_as_markup(graded):
    # the table printer read cells as rich markup: "[1]", "[x]" and "[bold]" vanished from
    # evidence, and a "[/b]" with nothing open failed the command
    text = "[red]cited[/red] [1] [x] done [/b]"
    shown = cli("sql", f"select '{text}' as \"[i]note[/i]\", count(*) as n from runs",
                "--results", str(graded["results"]))
    assert shown.exit_code == 0, shown.output
    assert text in shown.output and "[i]note[/i]" in shown.output


def test_sql_names_a_query_file_it_cannot_find(graded):
    # a mistyped file name was run as SQL: "Parser Error: syntax error at or near ..."
    missing = cli("sql", "sql/marts/no_such_model.sql", "--results", str(graded["results"]))
    assert missing.exit_code == 2
    assert "sql/marts/no_such_model.sql: no such file" in " ".join(missing.output.split())
    model = Path(__file__).resolve().parent.parent / "sql" / "marts" / "trends.sql"
    found = cli("sql", str(model), "--results", str(graded["results"]))
    assert found.exit_code == 0, found.output


def test_sql_takes_the_results_beside_the_query_as_the_other_commands_do(graded):
    # `rungrade sql RESULTS "…"` (as `rungrade trend RESULTS`) said only "Got unexpected extra
    # argument(s)"; an unquoted query said the same
    results = str(graded["results"])
    query = "select count(*) as n from runs"
    answers = [cli("sql", *args) for args in (
        (results, query), (query, results), (query, "--results", results),
        (query, "-r", results))]
    assert all(answer.exit_code == 0 for answer in answers), [a.output for a in answers]
    assert len({answer.output for answer in answers}) == 1
    n = stored(graded["results"], "runs").height
    assert str(n) in answers[0].output.split()
    unquoted = cli("sql", results, "select", "count(*)", "from", "runs")
    assert unquoted.exit_code == 2
    assert "got 5 arguments where one query was expected: put the query in quotes" in " ".join(
        unquoted.output.split())
    twice = cli("sql", results, query, "--results", results)
    assert twice.exit_code == 2
    assert "the results are given twice" in twice.output
    # the query forgotten: the folder was run as the query against ./results ("holds no
    # committed results; run 'rungrade grade …' first")
    alone = cli("sql", results)
    assert alone.exit_code == 2
    assert f"{results} is a folder, not a query: give the query beside it" in " ".join(
        alone.output.split())


def test_sql_writes_every_row_as_csv_to_stdout_for_scripts(graded, tmp_path):
    # the table shows 50 rows, folded to the terminal; `--csv -` gives a script every row
    results = str(graded["results"])
    query = "select run_uri, service, clause_id, verdict from clause_verdicts order by all"
    piped = cli("sql", results, query, "--csv", "-")
    assert piped.exit_code == 0, piped.output
    expected = stored(graded["results"], "clause_verdicts").select(
        "run_uri", "service", "clause_id", "verdict").sort(pl.all())
    assert expected.height > 50
    assert pl.read_csv(piped.output.encode()).equals(expected)
    into = tmp_path / "rows.csv"
    shown = cli("sql", results, query, "--csv", str(into))
    assert shown.exit_code == 0 and "more rows" in shown.output  # the table, and the file
    assert pl.read_csv(into).equals(expected)


# -- 1. the dataset ----------------------------------------------------------------------------

def test_duckdb_and_polars_read_every_table_directly(graded):
    results = graded["results"]
    con = duckdb.connect()
    for table in TABLES:
        glob = f"{results}/{table}/**/*.parquet"
        rel = con.sql(f"select * from read_parquet('{glob}', hive_partitioning = true)")
        # every stored table carries grader_id, plus the partition columns grader and batch
        assert {*COLUMNS[table], "grader_id", "grader", "batch"} == set(rel.columns), table
        by_grader = dict(con.sql(f"""
            select grader, count(*) from read_parquet('{glob}', hive_partitioning = true)
            group by grader""").fetchall())
        lazy = pl.scan_parquet(glob, hive_partitioning=True)
        polars_counts = dict(lazy.group_by("grader").len().collect().iter_rows())
        assert by_grader == polars_counts, table
        # same runs under both ids, so every table holds as many rows under each
        assert set(by_grader) == {grader_slug(BASE_ID), grader_slug(HEAD_ID)}, table
        if table not in ("checks", "clause_verdicts"):
            assert len(set(by_grader.values())) == 1, (table, by_grader)
    runs = stored(results, "runs")
    assert runs.filter(pl.col("grader") == grader_slug(BASE_ID)).height == 11
    assert (results / "catalog.duckdb").is_file()


def test_catalog_file_exposes_every_table_and_mart(graded):
    con = duckdb.connect(str(graded["results"] / "catalog.duckdb"), read_only=True)
    names = {row[0] for row in con.sql("select view_name from duckdb_views()").fetchall()}
    marts = {"run_days", "grader_pairs", "trends", "version_diffs", "verdict_flips",
             "run_score_deltas", "service_score_deltas", "version_summary"}
    assert set(TABLES) | marts <= names
    for table in TABLES:
        cols = {c[0] for c in con.sql(f"describe {table}").fetchall()}
        assert cols == {*COLUMNS[table], "grader_id", "batch_id"}, table


def _catalog_counts(results: Path, attach: bool = False) -> dict[str, int]:
    """Rows of a few views (a table's, a mart's, the grade log's) through RESULTS/catalog.duckdb,
    opened as the duckdb CLI opens it, or attached under another name."""
    con = duckdb.connect(*(() if attach else (str(results / "catalog.duckdb"),)),
                         read_only=not attach)
    try:
        if attach:
            con.execute(f"attach '{results / 'catalog.duckdb'}' as r (read_only)")
            con.execute("use r")
        return {view: con.sql(f"select count(*) from {view}").fetchall()[0][0]
                for view in ("run_scores", "trends", "grades")}
    finally:
        con.close()


def test_a_copied_or_moved_catalog_stops_until_written_for_its_folder(graded, tmp_path):
    # The catalog names the parts by the absolute path of the folder it was written in: a
    # copy's would show the first folder's rows (and their later changes) without a word.
    first = tmp_path / "first"
    shutil.copytree(graded["results"], first)
    assert cli("catalog", str(first)).exit_code == 0  # (the copy's: written for it now)
    expected = _catalog_counts(first)
    assert expected["run_scores"] == stored(first, "run_scores").height > 0
    (tmp_path / "link").symlink_to(first)  # the same folder by another path reads as itself
    assert _catalog_counts(tmp_path / "link") == _catalog_counts(first, attach=True) == expected

    copied = tmp_path / "copied"
    shutil.copytree(first, copied)
    for attach in (False, True):
        with pytest.raises(duckdb.InvalidInputException) as refused:
            _catalog_counts(copied, attach)
        assert f"written for the results in {first.resolve()}" in str(refused.value)
        assert "`rungrade catalog FOLDER`" in str(refused.value)
    wrote = cli("catalog", str(copied))
    assert wrote.exit_code == 0 and "catalog.duckdb" in wrote.output
    shutil.rmtree(first)  # the copy's catalog reads its own parts now
    assert _catalog_counts(copied) == expected

    moved = tmp_path / "moved"
    copied.rename(moved)
    with pytest.raises(duckdb.Error, match="No files found"):  # (DuckDB's own words)
        _catalog_counts(moved)
    assert cli("catalog", str(moved)).exit_code == 0
    assert _catalog_counts(moved) == expected

    with ResultStore(str(moved)).lock():  # a grade writing to them
        locked = cli("catalog", str(moved))
    assert locked.exit_code == LOCKED and "being written by another" in locked.output
    for nothing in (str(tmp_path / "none"), "s3://bucket/results"):
        refused = cli("catalog", nothing)
        assert refused.exit_code == USAGE and "no catalog written" in refused.output, nothing
    assert not (tmp_path / "none").exists()


def test_results_missing_a_committed_part_are_refused_not_shown_short(graded, tmp_path):
    # A part deleted, or a folder copied in part: the views, reading what the globs find,
    # would show fewer rows than were committed and say nothing. Every committed batch holds
    # a part of each table for each of its `runs` parts, and as many `runs` rows as its
    # marker says; readers refuse results that do not (exit 4), naming what is missing.
    count = "select count(*) from run_scores"
    whole = analysis.open_results(str(graded["results"])).sql(count).fetchall()
    short = tmp_path / "short"
    shutil.copytree(graded["results"], short)
    gone = sorted(short.glob("run_scores/grader=*/batch=*/part-*.parquet"))[-1]
    gone.unlink()
    cut, cut_scores = tmp_path / "cut", tmp_path / "cut-scores"
    shutil.copytree(graded["results"], cut)
    shutil.copytree(graded["results"], cut_scores)
    short_by = []
    for results, table in ((cut, "runs"), (cut_scores, "run_scores")):
        # a valid part, one row short: of `runs`, whose rows the marker always counted; of
        # another table, which v20's markers count too (v19's views answered short)
        part = sorted(results.glob(f"{table}/grader=*/batch=*/part-*.parquet"))[0]
        rows = pl.read_parquet(part)
        rows.head(rows.height - 1).write_parquet(part)
        left = sum(pl.read_parquet(p).height for p in part.parent.glob("*.parquet"))
        short_by.append(f"{table}/…/{part.parent.name}: {left} rows where its marker says "
                        f"{left + 1}")
    for results, said in ((short, f"run_scores/…/{gone.parent.name}/{gone.name}"),
                          (cut, short_by[0]), (cut_scores, short_by[1])):
        with pytest.raises(ResultsDamaged, match=re.escape(said)):
            analysis.open_results(str(results))
        for command in (["sql", "-r", str(results), count], ["trend", str(results)],
                        ["diff", str(results)], ["report", str(results), "-o",
                                                 str(tmp_path / "r.html")]):
            result = cli(*command)
            assert result.exit_code == STORAGE, (command, result.output)
            assert said in result.output and "Traceback" not in result.output, result.output
            assert "credentials" not in result.output  # (what to do is said, not guessed)
    assert analysis.open_results(str(graded["results"])).sql(count).fetchall() == whole


@pytest.mark.parametrize("edit", ["batch id", "replaces"])
def test_an_edited_commit_marker_is_refused_and_its_batch_kept(graded, tmp_path, edit):
    # a marker naming another batch than its file, or an ordinary one replacing batches: a
    # grade took its own batch for uncommitted and deleted it, exit 0 (v19)
    results = tmp_path / "edited"
    shutil.copytree(graded["results"], results)
    marker = sorted((results / "_commits").glob("*.json"))[0]
    batch = marker.stem
    record = json.loads(marker.read_text())
    if edit == "batch id":
        record["batch_id"] = batch + "x"
    else:
        record["replaces"] = [sorted((results / "_commits").glob("*.json"))[1].stem]
    marker.write_text(json.dumps(record))
    before = sorted(results.glob(f"*/grader=*/batch={batch}"))
    assert before
    for command in (["sql", str(results), "select count(*) from runs"],
                    ["grade", str(graded["runs"]), "--out", str(results), "--grader",
                     str(graded["grader"])]):
        result = cli(*command)
        assert result.exit_code == STORAGE, (command, result.output)
        said = " ".join(result.output.split())
        assert f"commit markers that are not a batch's JSON record (_commits/{marker.name})" \
            in said, said
    assert sorted(results.glob(f"*/grader=*/batch={batch}")) == before


def test_a_grade_that_commits_nothing_mends_a_copied_folders_catalog(graded, tmp_path):
    # A nightly grade into a copy of the results finds nothing new: it still writes the
    # copy's catalog, which named the first folder's parts.
    first = tmp_path / "first"
    shutil.copytree(graded["results"], first)
    assert cli("catalog", str(first)).exit_code == 0
    expected = _catalog_counts(first)
    copied = tmp_path / "copied"
    shutil.copytree(first, copied)
    with pytest.raises(duckdb.InvalidInputException, match="written for the results in"):
        _catalog_counts(copied)
    catalog = copied / "catalog.duckdb"

    nothing = grade(graded["runs"], copied, "--grader", str(graded["grader"]))
    assert '"graded": 0' in nothing.output and '"batches": []' in nothing.output
    shutil.rmtree(first)  # the copy's catalog reads its own parts now
    assert _catalog_counts(copied)["run_scores"] == expected["run_scores"]
    assert _catalog_counts(copied)["grades"] == expected["grades"] + 1  # (this grade's record)

    written = catalog.stat().st_mtime_ns  # where it was written for its folder, left alone
    grade(graded["runs"], copied, "--grader", str(graded["grader"]))
    assert catalog.stat().st_mtime_ns == written


# -- 3. a second grader id lives beside the first ----------------------------------------------

def _snapshot(root: Path) -> dict[str, str]:
    # reports/{run_id}.json is the latest copy; _listings/ a cache of run listings that any
    # grade may add to or merge (it holds no results); the catalog, and what it was written
    # for, are rewritten by every grade that commits
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in root.rglob("*") if p.is_file()
            and p.name not in CATALOG
            and p.parent not in (root / "reports", root / "_listings")}


def test_second_grader_id_overwrites_nothing(tmp_path):
    runs = write_sample_runs(tmp_path / "runs")
    results = tmp_path / "results"
    grade(runs, results, "--grader-id", BASE_ID)
    before = _snapshot(results)
    grade(runs, results, "--grader", str(write_strict_grader(tmp_path / "g.py", HEAD_ID)))
    after = _snapshot(results)
    assert {k: after.get(k) for k in before} == before, "a file of the first grader id changed"
    added = set(after) - set(before)
    head = grader_slug(HEAD_ID)
    # (and the second grade's own record in the grade log)
    assert added and all(f"grader={head}" in k or k.startswith(("_commits/", "_grades/"))
                         for k in added)
    for slug in (grader_slug(BASE_ID), head):
        reports = list((results / "reports" / f"grader={slug}").glob("*.json"))
        assert len(reports) == 9  # one per graded run, for each grader id
    con = analysis.open_results(str(results))
    per_id = dict(con.sql("select grader_id, count(*) from runs group by 1").fetchall())
    assert per_id == {BASE_ID: 11, HEAD_ID: 11}
    assert analysis.grader_ids(con) == [BASE_ID, HEAD_ID]


# -- 2 and 4. the diff of two grader versions ----------------------------------------------------

def _verdicts(results: Path, grader_id: str) -> pl.DataFrame:
    return stored(results, "clause_verdicts").filter(pl.col("grader_id") == grader_id)


def _independent_flips(results: Path) -> pl.DataFrame:
    base = _verdicts(results, BASE_ID).select(*KEY, pl.col("verdict").alias("base_verdict"))
    head = _verdicts(results, HEAD_ID).select(*KEY, pl.col("verdict").alias("head_verdict"))
    paired = base.join(head, on=KEY, how="inner")
    assert paired.height == base.height == head.height  # clause ids are stable across graders
    return paired.filter(pl.col("base_verdict") != pl.col("head_verdict"))


def _word_counts(results: Path) -> dict[tuple[str, str], int]:
    """Words of each published output, by (run_uri, output name), counted in plain Python."""
    bindings = stored(results, "bindings").filter(pl.col("grader_id") == BASE_ID)
    names = bindings.select("run_uri", "name")
    assert names.height == names.unique().height  # the sample runs never repeat an output name
    return {(r["run_uri"], r["name"]): len((r["text"] or "").split())
            for r in bindings.iter_rows(named=True)}


def test_diff_reports_exactly_the_flips_the_changed_rule_implies(graded):
    results = graded["results"]
    flips = _independent_flips(results)
    diff = analysis.version_diff(analysis.open_results(str(results)), BASE_ID, HEAD_ID)

    # the diff agrees with the clause verdicts of both versions, row for row
    reported = diff.flipped.select(*KEY, "base_verdict", "head_verdict")
    assert reported.sort(KEY).equals(flips.sort(KEY))
    expected_counts = flips.group_by("base_verdict", "head_verdict").len()
    reported_counts = diff.flips.filter(pl.col("flipped")).select(
        pl.col("from_verdict").alias("base_verdict"), pl.col("to_verdict").alias("head_verdict"),
        pl.col("clauses").cast(pl.UInt32).alias("len"))
    assert reported_counts.sort("base_verdict", "head_verdict").equals(
        expected_counts.sort("base_verdict", "head_verdict"))
    assert diff.summary["clauses_flipped"] == flips.height
    assert diff.summary["clauses_paired"] == _verdicts(results, BASE_ID).height

    # one rule changed: every other check gave the same outcome under both versions
    checks = stored(results, "checks").select("grader_id", *KEY, "check", "outcome")
    base_checks = checks.filter(pl.col("grader_id") == BASE_ID).drop("grader_id")
    head_checks = checks.filter(pl.col("grader_id") == HEAD_ID).drop("grader_id")
    assert base_checks.filter(pl.col("check") != "output_published").sort([*KEY, "check"]).equals(
        head_checks.filter(pl.col("check") != "output_substantial").sort([*KEY, "check"]))

    # the rule now fails exactly the published outputs shorter than MIN_WORDS words
    words = _word_counts(results)
    clauses = stored(results, "clauses").filter(pl.col("grader_id") == BASE_ID)
    published = base_checks.filter(pl.col("check") == "output_published").join(
        clauses.select(*KEY, "output_name"), on=KEY)
    short = {
        (r["run_uri"], r["service"], r["clause_id"])
        for r in published.iter_rows(named=True)
        if r["outcome"] == "passed" and words[(r["run_uri"], r["output_name"])] < MIN_WORDS
    }
    moved = {tuple(r) for r in base_checks.filter(pl.col("check") == "output_published")
             .join(head_checks.filter(pl.col("check") == "output_substantial"), on=KEY)
             .filter(pl.col("outcome") != pl.col("outcome_right")).select(KEY).iter_rows()}
    assert moved == short and len(short) >= 10

    # so: nothing outside those clauses flipped, and each of them that was satisfied no longer is
    flipped = {tuple(r) for r in flips.select(KEY).iter_rows()}
    satisfied_before = {tuple(r) for r in _verdicts(results, BASE_ID)
                        .filter(pl.col("verdict") == "satisfied").select(KEY).iter_rows()}
    assert short & satisfied_before <= flipped <= short
    # the base had the output published, so it could meet some requirements or leave them
    # open; a failed precondition violates the clause whatever else passed
    assert set(flips["base_verdict"]) <= {"satisfied", "partially_satisfied", "not_evaluable"}
    assert set(flips["head_verdict"]) == {"violated"}

    # the run whose outputs are all long enough did not move at all
    steady = diff.runs.filter(pl.col("run_id") == "20261102-093000-Bb_2")
    assert steady["score_delta"].to_list() == [0.0]
    assert not steady["verdict_changed"].item()


def test_sample_runs_diff_holds_only_flips_of_the_changed_rule(tmp_path):
    """The same comparison on the project's own sample runs (data/runs)."""
    results = tmp_path / "results"
    grade(SAMPLE_RUNS, results, "--grader-id", BASE_ID)
    grade(SAMPLE_RUNS, results, "--grader", str(write_strict_grader(tmp_path / "g.py", HEAD_ID)))
    flips = _independent_flips(results)
    diff = analysis.version_diff(analysis.open_results(str(results)))
    assert (diff.base, diff.head) == (BASE_ID, HEAD_ID)
    assert diff.flipped.select(*KEY, "base_verdict", "head_verdict").sort(KEY).equals(
        flips.sort(KEY))

    checks = stored(results, "checks").select("grader_id", *KEY, "check", "outcome")
    base = checks.filter(pl.col("grader_id") == BASE_ID).drop("grader_id")
    head = checks.filter(pl.col("grader_id") == HEAD_ID).drop("grader_id")
    moved = {tuple(r) for r in base.filter(pl.col("check") == "output_published")
             .join(head.filter(pl.col("check") == "output_substantial"), on=KEY)
             .filter(pl.col("outcome") != pl.col("outcome_right")).select(KEY).iter_rows()}
    flipped = {tuple(r) for r in flips.select(KEY).iter_rows()}
    assert flipped and flipped <= moved


def _t975(df: int) -> float:
    # two-sided 95% Student t quantiles (t(0.975, df)), rounded up at the third decimal so
    # that an interval is never narrower than the exact one (a printed table rounds some down)
    return {1: 12.707, 2: 4.303, 3: 3.183, 4: 2.777, 5: 2.571, 6: 2.447, 7: 2.365,
            8: 2.307, 9: 2.263, 10: 2.229}[df]


def test_paired_mean_delta_and_its_confidence_interval(graded):
    results = graded["results"]
    scores = stored(results, "run_scores")
    base = scores.filter(pl.col("grader_id") == BASE_ID).select("run_uri", "overall_score")
    head = scores.filter(pl.col("grader_id") == HEAD_ID).select("run_uri", "overall_score")
    deltas = [h - b for b, h in base.join(head, on="run_uri")
              .select("overall_score", "overall_score_right").iter_rows()
              if b is not None and h is not None]
    n = len(deltas)
    mean, sd = statistics.mean(deltas), statistics.stdev(deltas)
    half = _t975(n - 1) * sd / n ** 0.5

    summary = analysis.version_diff(analysis.open_results(str(results))).summary
    assert summary["runs_paired"] == n == 9
    assert summary["mean_score_delta"] == pytest.approx(mean)
    assert summary["sd_score_delta"] == pytest.approx(sd)
    assert summary["ci95_low"] == pytest.approx(mean - half)
    assert summary["ci95_high"] == pytest.approx(mean + half)
    assert summary["ci95_high"] < 0  # the stricter rule lowers scores beyond doubt

    # per-service deltas add up: each service score moved by what its clauses say
    services = analysis.version_diff(analysis.open_results(str(results))).services
    moved = services.filter(pl.col("score_delta").fill_null(0) != 0)
    # the program's reply is too short in one run only, and the built-in grader already
    # violates it there ("at least 40 words"), so the stricter rule does not move the program
    assert set(moved["service"]) == {"classifier", "responder", "researcher", "writer"}


def test_identical_checks_under_two_ids_show_no_change(tmp_path):
    runs = write_sample_runs(tmp_path / "runs")
    results = tmp_path / "results"
    grade(runs, results, "--grader-id", BASE_ID)
    grade(runs, results, "--grader-id", "analyst.contract-copy.grader/v1")
    diff = analysis.version_diff(analysis.open_results(str(results)))
    s = diff.summary
    assert (s["clauses_flipped"], s["runs_verdict_changed"], s["mean_score_delta"]) == (0, 0, 0)
    assert (s["ci95_low"], s["ci95_high"]) == (0, 0)
    assert diff.flipped.is_empty() and s["clauses_paired"] > 40
    # the CLI says so in words
    result = cli("diff", str(results))
    assert result.exit_code == 0 and "no clause changed its verdict" in result.output


def test_an_ids_first_batch_stays_first_once_its_runs_are_graded_again(tmp_path):
    # grader_pairs took an id's first batch from the runs' latest rows: graded again with
    # --full, the older id looked the newer, and `base_first_batch < head_first_batch`
    # kept the pair new → old while `rungrade diff` compared old → new
    runs = write_sample_runs(tmp_path / "runs")
    results = tmp_path / "results"
    grade(runs, results, "--grader-id", BASE_ID)
    grade(runs, results, "--grader-id", HEAD_ID)
    grade(runs, results, "--grader-id", BASE_ID, "--full")
    con = analysis.open_results(str(results))
    old_to_new = con.sql("""
        select base_grader_id, head_grader_id
        from grader_pairs
        where base_first_batch < head_first_batch
    """).fetchall()
    assert old_to_new == [(BASE_ID, HEAD_ID)]
    assert analysis.grader_ids(con) == [BASE_ID, HEAD_ID]


def test_runs_whose_files_changed_between_the_two_grades_are_not_compared(tmp_path):
    # The same checks under a second id, given runs whose outputs were emptied after the
    # first grade: a diff of every shared run would show the emptied outputs as flips of the
    # second id. Runs are compared on the same files only, and the others are counted.
    runs = write_sample_runs(tmp_path / "runs")
    results = tmp_path / "results"
    copy_id = "analyst.contract-copy.grader/v1"
    grade(runs, results, "--grader-id", BASE_ID)
    con = analysis.open_results(str(results))
    graded_uris = {u for u, in con.sql("select run_uri from runs where status = 'graded' "
                                       "and source = 'prose'").fetchall()}
    emptied = set()
    for path in sorted(runs.rglob("bindings/*/*.md")):
        run = path.parents[2]
        if "caller" not in path.parts and len(emptied) < 3 and any(
                uri.endswith(run.name) for uri in graded_uris):
            path.write_text("\n")
            emptied.add(run.name)
    assert len(emptied) == 3
    grade(runs, results, "--grader-id", copy_id)
    diff = analysis.version_diff(analysis.open_results(str(results)), BASE_ID, copy_id)
    s = diff.summary
    assert s["changed_runs"] == 3 and s["shared_runs"] == len(graded_uris) - 3
    assert (s["clauses_flipped"], s["runs_verdict_changed"], s["mean_score_delta"]) == (0, 0, 0)
    assert not {u.rsplit("/", 1)[-1] for u in diff.clauses["run_uri"]} & emptied
    assert s["runs_paired"] == diff.runs.height == s["shared_runs"]
    result = cli("diff", str(results), BASE_ID, copy_id)
    assert result.exit_code == 0, result.output
    assert re.search(r"runs not compared\s+3 \(graded by both, their files changed", result.output)
    # graded again under the first id (the changed runs only), they are compared again
    assert grade(runs, results, "--grader-id", BASE_ID).stdout.count('"changed": 3') == 1
    s = analysis.version_diff(analysis.open_results(str(results)), BASE_ID, copy_id).summary
    assert (s["changed_runs"], s["shared_runs"]) == (0, len(graded_uris))
    assert (s["clauses_flipped"], s["mean_score_delta"]) == (0, 0)


def test_the_same_checks_under_two_ids_never_differ_over_nights_of_changes(tmp_path):
    # Two ids with the same checks, graded on nights of their own, the runs changing in
    # between: the diff compares exactly the runs both ids graded from the same files (found
    # here from the stored `runs` rows), and on those nothing may differ.
    runs, spare_root, results = tmp_path / "runs", tmp_path / "spare", tmp_path / "results"
    synthesize(str(runs), 40, seed=31, workers=1)
    synthesize(str(spare_root), 8, seed=32, workers=1)
    spare = sorted(p for p in spare_root.rglob("2026*") if p.is_dir())
    copy_id = "analyst.contract-copy.grader/v1"
    rnd = random.Random(7)
    changed_seen = 0
    for ids in ([BASE_ID, copy_id], [BASE_ID], [copy_id], [BASE_ID, copy_id]):
        for grader_id in ids:
            grade(runs, results, "--grader-id", grader_id, "--batch-size", "16")
        # each run's latest row under each id, kept where it is graded (not refused)
        latest = (stored(results, "runs").sort("batch").group_by("grader_id", "run_uri")
                  .last().filter(pl.col("status") == "graded"))
        both = (latest.filter(pl.col("grader_id") == BASE_ID)
                .join(latest.filter(pl.col("grader_id") == copy_id), on="run_uri"))
        same = both.filter(pl.col("fingerprint") == pl.col("fingerprint_right")).height
        s = analysis.version_diff(analysis.open_results(str(results)), BASE_ID, copy_id).summary
        assert (s["shared_runs"], s["changed_runs"]) == (same, both.height - same)
        assert (s["clauses_flipped"], s["runs_verdict_changed"], s["mean_score_delta"]) == (
            0, 0, 0)
        assert s["runs_paired"] == same and s["clauses_paired"] > 0
        changed_seen += both.height - same
        change_night(runs, spare, rnd)
    assert changed_seen > 0  # (the nights graded by one id left runs to leave out)


def test_diff_cli_prints_and_writes_the_paired_clauses(graded, tmp_path):
    results = str(graded["results"])
    result = cli("diff", results, "--base", BASE_ID, "--head", HEAD_ID, "--out",
                 str(tmp_path / "diff.parquet"))
    assert result.exit_code == 0, result.output
    flips = _independent_flips(graded["results"])
    assert f"{flips.height} of" in result.output and "satisfied" in result.output
    # the mean and its bounds to 2 decimals, rounded half up, as the summary holds them (the
    # mean was shown to 1: 0.01 as 0.0, off the middle of its interval)
    s = analysis.version_diff(analysis.open_results(results), BASE_ID, HEAD_ID).summary
    assert (f"{shown(s['mean_score_delta'], 2, True)} (95% CI {shown(s['ci95_low'], 2, True)} "
            f"to {shown(s['ci95_high'], 2, True)})" in " ".join(result.output.split()))
    written = pl.read_parquet(tmp_path / "diff.parquet")
    assert written.filter(pl.col("flipped")).select(KEY).sort(KEY).equals(
        flips.select(KEY).sort(KEY))
    # default pair = the two latest grader ids; CSV works the same way
    result = cli("diff", results, "--out", str(tmp_path / "diff.csv"))
    assert result.exit_code == 0 and f"{BASE_ID} → {HEAD_ID}" in result.output
    assert pl.read_csv(tmp_path / "diff.csv").height == written.height
    # the reverse direction flips every flip back
    back = analysis.version_diff(analysis.open_results(results), HEAD_ID, BASE_ID)
    assert set(back.flipped["base_verdict"]) == set(flips["head_verdict"])


def _sample_ledgers_graded_again(tmp_path: Path, ledger_grader_file: str) -> str:
    """The results of the sample ledgers graded by the built-in ledger graders, then by the
    grader file whose source is `ledger_grader_file`."""
    grader_file = tmp_path / "ledger_graders.py"
    grader_file.write_text(ledger_grader_file)
    runs, results = tmp_path / "runs", str(tmp_path / "results")
    shutil.copytree(SAMPLE_RUNS / "moltzap-evals", runs / "moltzap-evals")
    assert cli("grade", str(runs), "--out", results).exit_code == 0
    assert cli("grade", str(runs), "--out", results, "--ledger-grader",
               str(grader_file)).exit_code == 0
    return results


def test_a_check_added_to_a_ledger_grader_leaves_the_others_paired(tmp_path):
    # A ledger check's clause id hashes its place among the grader's checks: a check added
    # second moved every later one, and the diff showed them under one id only where they
    # had not changed. Checks pair by name (unique within a grader).
    results = _sample_ledgers_graded_again(tmp_path, (
        "from pipeline.checks.ledger import LedgerGrader, at_most_words\n"
        "from pipeline.grade import default_ledger_graders\n"
        "v1 = next(g for g in default_ledger_graders()\n"
        "          if g.grader_id == 'moltzap.password-guard.grader/v1')\n"
        "ledger_graders = [LedgerGrader('moltzap.password-guard.grader/v2', v1.scenario_id,\n"
        "    v1.endpoint_name, v1.target_name, v1.expected_responses,\n"
        "    [v1.checks[0], at_most_words(40), *v1.checks[1:]])]\n"))
    base, head = "moltzap.password-guard.grader/v1", "moltzap.password-guard.grader/v2"
    diff = analysis.version_diff(analysis.open_results(results), base, head)
    checks = stored(Path(results), "clauses").filter(pl.col("grader_id") == base)
    assert checks.height >= 2  # the first check and at least one after the new one
    assert sorted(diff.clauses["text"]) == sorted(checks["text"])
    assert not diff.clauses["flipped"].any()
    summary = diff.summary
    assert (summary["clauses_paired"], summary["clauses_only_base"],
            summary["clauses_only_head"]) == (checks.height, 0, 1)


def test_ids_whose_shared_runs_all_changed_are_named_with_the_way_to_compare_them(tmp_path):
    # Two ids that graded the same runs, each run's files changed between the two grades: the
    # default diff, the report and the notebook said no two ids had graded the same run, and
    # to grade them with another grader, where grading them again under both ids is the fix.
    runs, results = tmp_path / "runs", str(tmp_path / "results")
    synthesize(str(runs), 6, seed=5, workers=1)
    assert cli("grade", str(runs), "--out", results, "--workers", "1").exit_code == 0
    for binding in runs.rglob("bindings/*/*.md"):
        with open(binding, "a") as handle:
            handle.write("\nA later line.\n")
    assert cli("grade", str(runs), "--out", results, "--workers", "1",
               "--grader-id", "second.grader/v1").exit_code == 0
    graded_runs = stored(Path(results), "runs").filter(
        (pl.col("grader_id") == DEFAULT_GRADER_ID) & (pl.col("status") == "graded")).height
    said = (f"{DEFAULT_GRADER_ID} and second.grader/v1 graded {graded_runs} run(s) in common, "
            "but their files changed between the two grades; grade those runs again under "
            "both ids")
    result = cli("diff", results)
    assert result.exit_code == USAGE and said in " ".join(result.output.split())
    assert cli("report", results, "-o", str(tmp_path / "r.html")).exit_code == 0
    assert said in " ".join((tmp_path / "r.html").read_text().split())
    # the ids given, as for ids it does not hold: it printed an empty comparison, exit 0, and
    # the page a table of zeros
    ids = [DEFAULT_GRADER_ID, "second.grader/v1"]
    page = str(tmp_path / "given.html")
    for command in (["diff", results, *ids], ["report", results, *ids, "-o", page]):
        result = cli(*command)
        assert result.exit_code == USAGE and said in " ".join(result.output.split()), command
    # what it says to do brings them into the comparison
    assert cli("grade", str(runs), "--out", results, "--workers", "1").exit_code == 0
    result = cli("diff", results)
    assert result.exit_code == 0 and "second.grader/v1" in result.output


def test_a_ledgers_outcome_verdict_is_in_the_trends_and_the_diff(tmp_path):
    # A ledger whose detectors settled nothing scores 100, satisfied, and its own verdict
    # (SPEC 4: failed > undecided > passed) is undecided: trends counted it satisfied only,
    # and a grader that then decided it (undecided → passed) moved nothing in the diff.
    results = _sample_ledgers_graded_again(tmp_path, (
        "from pipeline.checks.ledger import LedgerGrader, at_most_words, valid_messages\n"
        "ledger_graders = [LedgerGrader('moltzap.brief-advice.grader/v2',\n"
        "    'evals.brief-advice/v1', 'eval-sender', 'target-agent', 1,\n"
        "    [valid_messages(), at_most_words(60)])]\n"))
    base, head = "moltzap.brief-advice.grader/v1", "moltzap.brief-advice.grader/v2"
    scores = stored(Path(results), "run_scores").filter(pl.col("grader_id").is_in([base, head]))
    assert sorted(scores.select("grader_id", "overall_verdict", "outcome_verdict").rows()) == [
        (base, "satisfied", "undecided"), (head, "satisfied", "passed")]
    con = analysis.open_results(results)
    trend = analysis.trends(con, program="evals.brief-advice/v1")
    assert trend.select("grader_id", "satisfied", "passed", "failed", "undecided").rows() == [
        (base, 1, 0, 0, 1), (head, 1, 1, 0, 0)]
    diff = analysis.version_diff(con, base, head)
    assert (diff.summary["runs_verdict_changed"], diff.summary["runs_outcome_changed"]) == (0, 1)
    assert diff.moved.select("base_outcome", "head_outcome", "outcome_changed").rows() == [
        ("undecided", "passed", True)]
    shown = cli("diff", results, base, head)
    assert shown.exit_code == 0 and "undecided→passed" in shown.output
    assert "1 undecided" in cli("trend", results, "--grader-id", base).output


def test_diff_takes_the_grader_ids_after_the_results(graded):
    # `rungrade diff RESULTS BASE HEAD`, as one would compare two revisions, said only "Got
    # unexpected extra argument(s)"
    results = str(graded["results"])
    given = cli("diff", results, HEAD_ID, BASE_ID)
    assert given.exit_code == 0, given.output
    assert given.output == cli("diff", results, "--base", HEAD_ID, "--head", BASE_ID).output
    assert f"{HEAD_ID} → {BASE_ID}" in given.output
    for words in ((results, HEAD_ID), (results, "v12", "v13")):
        one = cli("diff", *words)
        assert one.exit_code == USAGE and "two grader ids, base then head" in one.output
    twice = cli("diff", results, BASE_ID, HEAD_ID, "--base", BASE_ID)
    assert twice.exit_code == USAGE and "given twice" in twice.output


def test_diff_cli_refuses_what_it_cannot_answer(graded, tmp_path):
    results = str(graded["results"])
    unknown = cli("diff", results, "--base", "nope.grader/v1", "--head", HEAD_ID)
    assert unknown.exit_code == USAGE and BASE_ID in unknown.output
    same = cli("diff", results, "--base", HEAD_ID, "--head", HEAD_ID)
    assert same.exit_code == USAGE
    bad_out = cli("diff", results, "--out", str(tmp_path / "x.xlsx"))
    assert bad_out.exit_code == USAGE and ".parquet" in bad_out.output
    empty = cli("diff", str(tmp_path / "nothing"))
    assert empty.exit_code == USAGE and "rungrade grade" in empty.output

    runs = write_sample_runs(tmp_path / "runs")
    grade(runs, tmp_path / "one", "--grader-id", BASE_ID)
    single = cli("diff", str(tmp_path / "one"))
    assert single.exit_code == USAGE and "two grader ids" in single.output


# -- 2 and 4. trends -----------------------------------------------------------------------------

def _independent_trends(results: Path) -> pl.DataFrame:
    runs = stored(results, "runs").select("grader_id", "run_uri", "run_id", "program", "status")
    scores = stored(results, "run_scores").select("grader_id", "run_uri", "overall_score",
                                                  "overall_verdict")
    day = pl.col("run_id").str.slice(0, 8).str.strptime(pl.Date, "%Y%m%d")
    return (
        runs.join(scores, on=["grader_id", "run_uri"], how="left")
        .group_by("grader_id", "program", day.alias("day"))
        .agg(pl.len().alias("runs"), (pl.col("status") == "refused").sum().alias("refused"),
             pl.col("overall_score").mean().alias("mean_overall_score"),
             pl.col("overall_score").median().alias("median_overall_score"),
             (pl.col("overall_verdict") == "violated").sum().alias("violated"))
    )


def test_trends_count_every_run_by_grader_program_and_day(graded):
    results = graded["results"]
    got = analysis.trends(analysis.open_results(str(results)))
    cols = ["grader_id", "program", "day", "runs", "refused", "mean_overall_score",
            "median_overall_score", "violated"]
    expected = _independent_trends(results).select(cols).sort("grader_id", "program", "day")
    mine = got.select(cols).with_columns(pl.col("runs", "refused", "violated").cast(pl.UInt32))
    assert mine.sort("grader_id", "program", "day").equals(expected.with_columns(
        pl.col("runs", "refused", "violated").cast(pl.UInt32)))
    assert got["runs"].sum() == 22  # 11 runs found, under each of two grader ids
    assert (got["graded"] + got["refused"] == got["runs"]).all()
    assert (got["satisfied"] + got["partial"] + got["violated"] + got["not_evaluable"]
            == got["graded"]).all()


def test_trend_cli_filters_and_writes(graded, tmp_path):
    results = str(graded["results"])
    result = cli("trend", results, "--program", "brief-writer", "--since", "2026-11-04",
                 "--out", str(tmp_path / "t.csv"))
    assert result.exit_code == 0, result.output
    assert BASE_ID in result.output and HEAD_ID in result.output
    written = pl.read_csv(tmp_path / "t.csv", try_parse_dates=True)
    assert set(written["program"]) == {"brief-writer"} and written.height == 2
    assert (written["day"].cast(pl.String) >= "2026-11-04").all()
    everything = analysis.trends(analysis.open_results(results))
    assert cli("trend", results, "--out", str(tmp_path / "t.parquet")).exit_code == 0
    assert pl.read_parquet(tmp_path / "t.parquet").equals(everything)

    assert cli("trend", results, "--since", "04/11/2026").exit_code == USAGE
    assert cli("trend", results, "--grader-id", "nope.grader/v9").exit_code == USAGE
    nothing = cli("trend", results, "--program", "no-such-program")
    assert nothing.exit_code == 0 and "no runs match" in nothing.output
