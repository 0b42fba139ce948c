"""Every file of sql/ runs unchanged in DuckDB against the Parquet a real grade produced.

Twice: through `RESULTS/catalog.duckdb` (what the duckdb CLI opens), and through views an
analyst writes by hand over `read_parquet(…, hive_partitioning = true)` with no code of ours.
"""

from __future__ import annotations

import re
from pathlib import Path

import duckdb
import polars as pl
import pytest
from analyst_runs import BASE_ID, HEAD_ID, grade_two_versions

from pipeline.catalog import GRADE_COLUMNS, VIEW_MODELS
from pipeline.judging.cache import COLUMNS as JUDGMENT_COLUMNS
from pipeline.scoring import SCORE_MODELS, SQL_DIR
from pipeline.tables import COLUMNS, TABLES

SQL_FILES = sorted(SQL_DIR.rglob("*.sql"))


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> Path:
    return grade_two_versions(tmp_path_factory.mktemp("sql"))["results"]


def hand_written_views(results: Path) -> duckdb.DuckDBPyConnection:
    """What an analyst without rungrade does: one view per table straight over the Parquet,
    and `_commits` over the commit markers."""
    con = duckdb.connect()
    con.execute(f"""
        create view _commits as
        select batch_id, grader_id from read_json('{results}/_commits/*.json')
    """)
    for table in TABLES:
        con.execute(f"""
            create view {table} as
            select * exclude (grader, batch), batch as batch_id
            from read_parquet('{results}/{table}/**/*.parquet', hive_partitioning = true)
        """)
    for model in VIEW_MODELS:
        text = (SQL_DIR / f"{model}.sql").read_text()
        con.execute(f"create view {Path(model).name} as {text}")
    return con


def test_every_sql_file_is_a_known_model():
    known = {f"{m}.sql" for m in (*SCORE_MODELS, *VIEW_MODELS)}
    assert {str(p.relative_to(SQL_DIR)) for p in SQL_FILES} == known
    assert {"staging", "scores", "marts"} == {p.parent.name for p in SQL_FILES}


@pytest.mark.parametrize("path", SQL_FILES, ids=lambda p: str(p.relative_to(SQL_DIR)))
def test_sql_file_runs_unchanged_on_the_results(results, path):
    text = path.read_text()
    catalog = duckdb.connect(str(results / "catalog.duckdb"), read_only=True)
    got = catalog.sql(text).pl()
    assert got.height > 0, f"{path.name} returned no rows on real results"
    assert len(set(got.columns)) == len(got.columns), "a model must name each column once"

    # the same file over hand-written read_parquet views gives the same rows
    by_hand = hand_written_views(results).sql(text).pl()
    assert by_hand.sort(by_hand.columns, nulls_last=True).equals(
        got.sort(got.columns, nulls_last=True))

    # and what the file computes is what the results expose under its name
    exposed = catalog.sql(f"select * from {path.stem}").pl().select(got.columns)
    assert exposed.sort(got.columns, nulls_last=True).equals(
        got.sort(got.columns, nulls_last=True))
    if "grader_id" in got.columns:
        assert set(got["grader_id"]) == {BASE_ID, HEAD_ID}
    if "base_grader_id" in got.columns:
        pairs = set(got.select("base_grader_id", "head_grader_id").iter_rows())
        assert pairs == {(BASE_ID, HEAD_ID), (HEAD_ID, BASE_ID)}


def test_score_models_reproduce_the_stored_scores(results):
    """scores/*.sql rerun on the stored verdicts give the stored scores (nothing drifted)."""
    con = duckdb.connect(str(results / "catalog.duckdb"), read_only=True)
    for model in SCORE_MODELS:
        name = Path(model).name
        again = con.sql((SQL_DIR / f"{model}.sql").read_text()).pl()
        stored = pl.scan_parquet(f"{results}/{name}/**/*.parquet",
                                 hive_partitioning=True).collect().select(again.columns)
        assert again.height == stored.height > 0
        assert again.sort(again.columns, nulls_last=True).equals(
            stored.sort(again.columns, nulls_last=True))


def test_rungrade_sql_runs_a_file_and_says_why_a_query_failed(results, tmp_path):
    from typer.testing import CliRunner

    from pipeline.cli import app
    from pipeline.exit_codes import USAGE

    def sql(query: str):
        return CliRunner().invoke(app, ["sql", query, "--results", str(results), "--csv",
                                        str(tmp_path / "out.csv")])

    trends = SQL_DIR / "marts" / "trends.sql"
    assert sql(str(trends)).exit_code == 0
    expected = duckdb.connect(str(results / "catalog.duckdb"), read_only=True).sql(
        trends.read_text()).pl()
    assert pl.read_csv(tmp_path / "out.csv").height == expected.height > 0
    # a query DuckDB rejects: its own words, exit code 2, no traceback
    for query, words in (("select nope from run_scores", "Binder Error"),
                         ("selec 1", "Parser Error"), ("select * from no_such_view",
                                                       "Catalog Error")):
        failed = sql(query)
        assert failed.exit_code == USAGE, failed.output
        said = " ".join(failed.output.split())
        assert f"the query failed: {words}" in said and "Traceback" not in said, said


README = SQL_DIR.parent / "README.md"


def _documented(block: str) -> set[str]:
    """Column names a README block states: `in backticks`, or in a table row's first cell
    (several names, comma-separated)."""
    names = set(re.findall(r"`([a-z_][a-z0-9_]*)`", block))
    for cell in re.findall(r"^\| *([a-z_][a-z0-9_, ]*?) *\|", block, re.M):
        names |= {name.strip() for name in cell.split(",")}
    return names


def test_the_readme_documents_every_table_and_column(results):
    # "Tables and columns" and the models' table: every column of every view an analyst meets
    text = README.read_text(encoding="utf-8")
    section = text[text.index("### Tables and columns"):text.index("### `rungrade trend`")]
    assert {"grader_id", "run_uri", "run_id"} <= _documented(section.split("**runs**")[0])
    catalog = duckdb.connect(str(results / "catalog.duckdb"), read_only=True)
    every = {**{t: set(COLUMNS[t]) for t in TABLES}, "grades": set(GRADE_COLUMNS),
             "judgments": set(JUDGMENT_COLUMNS)}
    for table, columns in every.items():
        block = re.split(r"\n\*\*[a-z_]+\*\*|\n### ", section.split(f"\n**{table}**", 1)[1])[0]
        missing = columns - {"grader_id"} - _documented(block)
        assert not missing, f"README: {table} lacks {sorted(missing)}"
        if table in TABLES:  # the views add the grader id and the batch each row came from
            viewed = {c for c, *_ in catalog.sql(f"describe {table}").fetchall()}
            assert viewed == columns | {"grader_id", "batch_id"}
    assert "`batch_id`" in text[text.index("### Views"):text.index("### Tables and columns")]
    for model in VIEW_MODELS:
        view = Path(model).name
        (row,) = re.findall(rf"^\| {view} \|[^|]*\|(.*)\|$", section, re.M)
        columns = {c for c, *_ in catalog.sql(f"describe {view}").fetchall()}
        missing = columns - _documented(row)
        assert not missing, f"README: the {view} model lacks {sorted(missing)}"
