"""Grade the sample runs through the CLI and check the results as an analyst would read them."""

from __future__ import annotations

import json
import os
import re
import shutil

import duckdb
import polars as pl
import pytest
from conftest import SAMPLE_RUNS
from typer.testing import CliRunner

from pipeline.catalog import connect
from pipeline.cli import app
from pipeline.grade import default_ledger_graders
from pipeline.sources.contract import parse_contract
from pipeline.store import grader_slug
from pipeline.tables import TABLES, validate

RUN_DIR = re.compile(r"^\d{8}-\d{6}-.+$")
LEDGER_REPORT_FIELDS = ["run_id", "grader_id", "definition_id", "verdict", "checks"]
REPORT_FIELDS = ["run_id", "program", "overall_score", "overall_verdict", "services",
                 "conditional_ensures", "unevaluable_clauses", "recommendations"]


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    out = tmp_path_factory.mktemp("results")
    result = CliRunner().invoke(app, ["grade", str(SAMPLE_RUNS), "--out", str(out), "--json",
                                      "--validate", "--workers", "2"])
    assert result.exit_code == 0, result.output
    return out, json.loads(result.output)


def load(out, table: str) -> pl.DataFrame:
    return pl.read_parquet(out / table / "**" / "*.parquet", hive_partitioning=True)


def run_dirs_on_disk() -> list[str]:
    found = []
    for dirpath, dirnames, _ in os.walk(SAMPLE_RUNS):
        for d in list(dirnames):
            if RUN_DIR.match(d):
                found.append(os.path.join(dirpath, d))
                dirnames.remove(d)  # a run's own subfolders are not runs
    return found


def test_found_equals_graded_plus_refused(results):
    out, summary = results
    assert summary["found"] == len(run_dirs_on_disk())
    assert summary["found"] == summary["graded"] + summary["refused"]
    runs = load(out, "runs")
    assert runs.height == summary["found"]
    assert load(out, "refusals").height == summary["refused"]
    assert summary["graded"] > 0 and summary["refused"] > 0


def test_tables_are_readable_without_our_code(results):
    out, _ = results
    con = duckdb.connect()
    for table in TABLES:
        n = con.sql(f"select count(*) from read_parquet('{out}/{table}/**/*.parquet', "
                    "hive_partitioning = true)").fetchall()[0][0]
        scanned = pl.scan_parquet(out / table / "**" / "*.parquet").select(pl.len())
        assert n == scanned.collect().item()
    cols = con.sql(f"select * from read_parquet('{out}/run_scores/**/*.parquet', "
                   "hive_partitioning = true) limit 0").columns
    assert {"grader_id", "grader", "batch", "overall_score", "overall_verdict"} <= set(cols)


def test_tables_match_their_schemas(results):
    out, _ = results
    validate({t: load(out, t).drop("grader", "batch") for t in TABLES})


def expected_grader_ids(out, summary) -> pl.DataFrame:
    """run_uri -> grader id: a graded ledger's rows carry its ledger grader's id (the one its
    target service names), every other run's the summary's."""
    ledger = load(out, "services").filter(pl.col("kind") == "target").select(
        "run_uri", pl.col("contract_source").alias("expected"))
    return load(out, "runs").select("run_uri").join(ledger, on="run_uri", how="left").select(
        "run_uri", pl.col("expected").fill_null(summary["grader_id"]))


def test_every_row_is_stamped_with_the_grader_id(results):
    out, summary = results
    expected = expected_grader_ids(out, summary)
    assert set(expected["expected"]) > {summary["grader_id"]}  # the samples hold ledgers
    for table in TABLES:
        rows = load(out, table).join(expected, on="run_uri", how="left")
        assert rows["expected"].null_count() == 0, table
        assert (rows["grader_id"] == rows["expected"]).all(), table
        # each grader id is committed in its own batch: the partition names it
        slugs = {g: grader_slug(g) for g in rows["grader_id"].unique()}
        assert (rows["grader"] == rows["grader_id"].replace_strict(slugs)).all(), table


def test_every_ensures_clause_is_graded_exactly_once(results):
    out, _ = results
    verdicts = load(out, "clause_verdicts")
    assert verdicts.select("run_uri", "clause_id").is_duplicated().sum() == 0
    graded = load(out, "runs").filter(pl.col("status") == "graded")
    services = load(out, "services")
    counted = verdicts.group_by("run_uri", "service").len()
    checks_of = {g.grader_id: len(g.checks) for g in default_ledger_graders()}
    for run in graded.iter_rows(named=True):
        for svc in services.filter(pl.col("run_uri") == run["run_uri"]).iter_rows(named=True):
            source = svc["contract_source"]
            if source is None:
                expected = 0
            elif run["source"] == "ledger":  # each check of its ledger grader is a clause
                expected = checks_of[source]
            else:
                path, _, inline = source.partition("#")
                with open(os.path.join(run["run_uri"], path), encoding="utf-8") as handle:
                    text = handle.read()
                contract = parse_contract(text)
                comp = contract.component(inline) if inline else contract.main
                expected = sum(1 for i in comp.items("ensures") if i.parent_position is None)
            got = counted.filter((pl.col("run_uri") == run["run_uri"])
                                 & (pl.col("service") == svc["service"]))["len"].sum()
            assert got == expected, (run["run_id"], svc["service"])


def test_scores_recomputed_independently_match(results):
    out, _ = results
    v = load(out, "clause_verdicts")
    weights = {"satisfied": 1.0, "partially_satisfied": 0.5, "violated": 0.0}
    expected_services = {}
    for (run_uri, service), group in v.group_by("run_uri", "service"):
        verdicts = group["verdict"].to_list()
        evaluable = [x for x in verdicts if x != "not_evaluable"]
        score = sum(weights[x] for x in evaluable) / len(evaluable) * 100 if evaluable else None
        expected_services[(run_uri, service)] = (score, len(verdicts))
    stored = load(out, "service_scores")
    assert stored.height == len(expected_services)
    for row in stored.iter_rows(named=True):
        score, n = expected_services[(row["run_uri"], row["service"])]
        assert row["clauses"] == n
        assert row["service_score"] == pytest.approx(score) if score is not None \
            else row["service_score"] is None
    runs = {}
    for (run_uri, _), (score, n) in expected_services.items():
        if score is not None:
            runs.setdefault(run_uri, []).append((score, n))
    for row in load(out, "run_scores").iter_rows(named=True):
        parts = runs.get(row["run_uri"])
        if not parts:
            assert row["overall_score"] is None and row["overall_verdict"] == "not_evaluable"
            continue
        expected = sum(s * n for s, n in parts) / sum(n for _, n in parts)
        assert row["overall_score"] == pytest.approx(expected)


def test_reports_have_exactly_the_report_fields(results):
    out, summary = results
    archived = sorted((out / "reports").glob("grader=*/*.json"))
    reports = sorted((out / "reports").glob("*.json"))
    assert len(reports) == len(archived) == summary["graded"]
    assert sorted(p.read_bytes() for p in reports) == sorted(p.read_bytes() for p in archived)
    scores = {r["run_id"]: r for r in load(out, "run_scores").iter_rows(named=True)}
    ledgers = set(load(out, "runs").filter(pl.col("source") == "ledger")["run_id"])
    for path in reports:
        report = json.loads(path.read_text())
        if report["run_id"] in ledgers:  # a ledger's GradeReport
            assert list(report) == LEDGER_REPORT_FIELDS
            assert report["checks"] and report["verdict"] == scores[report["run_id"]][
                "outcome_verdict"]
            assert (out / "reports" / f"grader={grader_slug(report['grader_id'])}"
                    / path.name).exists()
            continue
        assert (out / "reports" / f"grader={grader_slug(summary['grader_id'])}"
                / path.name).exists()
        assert list(report) == REPORT_FIELDS
        assert report["overall_score"] == scores[report["run_id"]]["overall_score"]
        for svc in report["services"]:
            assert list(svc) == ["name", "ensures_clauses", "service_score"]
            for clause in svc["ensures_clauses"]:
                assert list(clause) == ["text", "verdict", "evidence", "confidence"]
                assert len(clause["evidence"] or "") <= 2000
        for cond in report["conditional_ensures"]:
            assert cond["condition_triggered"] in (True, False, None)


def test_summary_is_printed_for_people(tmp_path):
    result = CliRunner().invoke(app, ["grade", str(SAMPLE_RUNS), "--out", str(tmp_path / "r")])
    assert result.exit_code == 0
    for words in ("runs found", "graded", "refused", "mean overall score", "verdicts"):
        assert words in result.output


def test_missing_runs_root_says_what_to_do(tmp_path):
    result = CliRunner().invoke(app, ["grade", str(tmp_path / "nope"), "--out",
                                      str(tmp_path / "r")])
    assert result.exit_code == 2
    assert "does not exist" in result.output
    (tmp_path / "a-file").write_text("not runs")
    result = CliRunner().invoke(app, ["grade", str(tmp_path / "a-file"), "--out",
                                      str(tmp_path / "r")])
    assert result.exit_code == 2
    assert "is a file, not a folder" in result.output
    # (a device was said not to exist)
    result = CliRunner().invoke(app, ["grade", "/dev/null", "--out", str(tmp_path / "r")])
    assert result.exit_code == 2
    assert "runs root /dev/null is not a folder (a device" in " ".join(result.output.split())
    result = CliRunner().invoke(app, ["grade", str(SAMPLE_RUNS), "--out",
                                      str(tmp_path / "a-file")])
    assert result.exit_code == 2
    assert f"results folder {tmp_path / 'a-file'} is a file, not a folder" in " ".join(
        result.output.split())


@pytest.mark.parametrize("name", ["results [old]", "results*", "why?"])
def test_a_results_path_read_as_a_pattern_is_refused(tmp_path, name):
    # fsspec and DuckDB read [ ] * ? in a path as a pattern: results under such a folder were
    # committed and then not found ("[1]"), or found with another folder's ("*"), and DuckDB
    # opened "a?b/catalog.duckdb" as "a" with options. Every command refuses the path at once.
    out = tmp_path / name / "r"
    result = CliRunner().invoke(app, ["grade", str(SAMPLE_RUNS), "--out", str(out),
                                      "--workers", "1"])
    assert result.exit_code == 2, result.output
    said = " ".join(result.output.split())
    assert f"results location {out} holds" in said and "any of [ ] * ?" in said
    assert not (tmp_path / name).exists()  # nothing written
    for command in (["grades", str(out)], ["sql", "select 1", "--results", str(out)]):
        refused = CliRunner().invoke(app, command)
        assert refused.exit_code == 2 and "any of [ ] * ?" in " ".join(refused.output.split())


@pytest.mark.parametrize(("args", "said"), [
    (["--endpoint-url", "localhost:9000"], "is not an endpoint URL: give http(s)://HOST[:PORT]"),
    (["--endpoint-url", "http://"], "is not an endpoint URL"),
    # a path: the runs root (which exists) was said not to exist
    (["--endpoint-url", "http://127.0.0.1:9000/some/path"], "is not an endpoint URL"),
    # every judge call failed (NaN, inf), and the grade exited 0
    (["--judge-cmd", "python3 judge.py", "--judge-timeout", "nan"],
     "--judge-timeout must be a number, at least 0.001, got nan"),
    (["--judge-cmd", "python3 judge.py", "--judge-timeout", "inf"],
     "--judge-timeout must be a number, at least 0.001, got inf"),
    (["--out", "s3://"], "s3:// names no bucket: give s3://BUCKET"),
    (["--out", "gs://bucket/results"], "local folders and s3://BUCKET/PREFIX only, not gs://"),
])
def test_a_location_rungrade_cannot_use_is_refused_before_anything_is_read(tmp_path, args,
                                                                            said):
    # each was botocore's or fsspec's traceback (exit code 1)
    out = ["--out", str(tmp_path / "r")] if "--out" not in args else []
    result = CliRunner().invoke(app, ["grade", str(SAMPLE_RUNS), *out, *args, "--workers", "1"])
    assert result.exit_code == 2, result.output
    assert said in " ".join(result.output.replace("│", " ").split())
    assert not list(tmp_path.iterdir())  # nothing written


def test_a_results_path_that_is_not_utf8_is_refused(tmp_path):
    # DuckDB takes UTF-8 paths only: such a grade committed its batches, then failed writing
    # the catalog with "std::bad_cast" (exit 1), night after night
    out = tmp_path / os.fsdecode(b"r\xe9sultats") / "r"
    result = CliRunner().invoke(app, ["grade", str(SAMPLE_RUNS), "--out", str(out),
                                      "--workers", "1"])
    assert result.exit_code == 2, result.output
    said = " ".join(result.output.split())
    assert f"results location {tmp_path}/r\\xe9sultats/r is not valid UTF-8" in said
    assert not list(tmp_path.iterdir())  # nothing written
    refused = CliRunner().invoke(app, ["sql", "select 1", "--results", str(out)])
    assert refused.exit_code == 2 and "is not valid UTF-8" in refused.output


def test_a_runs_root_that_is_not_utf8_is_graded_and_logged(tmp_path):
    # its path went into the grade's record with JSON's escapes of lone surrogates, which
    # DuckDB refuses: `rungrade grades` (and every query of the `grades` view) failed
    runs = tmp_path / os.fsdecode(b"runs-\xe9")
    shutil.copytree(SAMPLE_RUNS / "newsroom", runs)
    out = tmp_path / "results"
    graded = CliRunner().invoke(app, ["grade", str(runs), "--out", str(out), "--workers", "1",
                                      "--json"])
    assert graded.exit_code == 0, graded.output
    assert json.loads(graded.output)["graded"] == 2
    shown = f"{tmp_path}/runs-\\xe9"
    uris = duckdb.connect().sql(f"select distinct run_uri from '{out}/runs/*/*/*.parquet'")
    assert {u for (u,) in uris.fetchall()} == {
        f"{shown}/.prose/runs/{p.name}" for p in (runs / ".prose/runs").iterdir()}
    log = CliRunner().invoke(app, ["grades", str(out)])
    assert log.exit_code == 0, log.output
    assert connect(str(out)).sql("select runs_uri, status from grades").fetchall() == [
        (shown, "finished")]


def test_an_option_taken_as_the_results_path_is_refused(tmp_path, monkeypatch):
    # `--out --json` (a script's empty variable before it): click gives `--out` the next
    # option as its value, and the grade wrote its results into a folder named "--json".
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, ["grade", str(SAMPLE_RUNS), "--out", "--json",
                                      "--workers", "1"])
    assert result.exit_code == 2, result.output
    assert "give ./--json" in " ".join(result.output.split())
    assert not list(tmp_path.iterdir())  # nothing written
    # the folder of that name, said plainly, is graded
    named = CliRunner().invoke(app, ["grade", str(SAMPLE_RUNS), "--out", "./--json",
                                     "--workers", "1", "--json"])
    assert named.exit_code == 0, named.output
    assert (tmp_path / "--json" / "_commits").is_dir()


def test_version_names_the_package_and_the_default_grader():
    from importlib.metadata import version

    from pipeline.checks import DEFAULT_GRADER_ID

    shown = CliRunner().invoke(app, ["--version"])
    assert shown.exit_code == 0, shown.output
    assert shown.output.strip() == f"rungrade {version('rungrade')} (default grader " \
                                   f"{DEFAULT_GRADER_ID})"


@pytest.mark.parametrize("kind", ["an OpenProse run", "a moltzap ledger"])
def test_a_run_folder_given_as_the_runs_root_says_what_to_do(tmp_path, kind):
    # Runs are found in the folders under RUNS, never RUNS itself: given one run folder, the
    # grade would find nothing; it says which folder to give instead, before it writes
    # anything (no results folder, no lock nor grade record)
    marker = "program.md" if kind == "an OpenProse run" else "completion.json"
    run = next(p.parent for p in sorted(SAMPLE_RUNS.rglob(marker)))
    result = CliRunner().invoke(app, ["grade", str(run), "--out", str(tmp_path / "r"),
                                      "--workers", "1"])
    assert result.exit_code == 2, result.output
    assert not (tmp_path / "r").exists() and not result.stdout
    assert "is itself a run folder" in result.stderr
    assert f"Give the folder that holds it: {run.parent}" in " ".join(result.stderr.split())


def test_a_root_named_like_a_run_that_holds_runs_is_graded(tmp_path):
    # A dated snapshot folder named like a run ("20261130-020000-nightly/") holding run folders
    # is a runs root like any other, and so is it while it holds none: only a root that finds
    # nothing and holds a run's own files is told it is a run.
    from run_folders import write_run

    root = tmp_path / "20261130-020000-nightly"
    root.mkdir()  # no run tonight: nothing to grade, and no error
    (root / "README.md").write_text("nightly snapshot\n")
    command = ["grade", str(root), "--out", str(tmp_path / "r"), "--json", "--workers", "1"]
    result = CliRunner().invoke(app, command)
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["found"] == 0
    # ... said on stderr, with what a run folder is named like: runs named otherwise would
    # pass every night unseen
    assert "note: no run found under" in result.stderr and "20261112-031502" in result.stderr
    write_run(root / "team", "20261112-031502-abc123")
    result = CliRunner().invoke(app, command)
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["graded"] == 1
    assert "no run found" not in result.stderr
