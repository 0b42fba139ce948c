"""Per-run reports (JSON): the contract `grade` report of an OpenProse run, with exactly the
fields of the contract grader's report, and the GradeReport of a moltzap ledger.

Built with polars aggregations over the batch tables; the only per-run step is serialising.
"""

from __future__ import annotations

import polars as pl

from .checks.ledger import LEDGER_CLAUSE_KIND, verdict
from .names import REFUSED_MARK, report_stem, uri_tag


def _clause_rows(clauses: pl.DataFrame, verdicts: pl.DataFrame) -> pl.DataFrame:
    return verdicts.join(
        clauses.select("run_uri", "service", "clause_id", "position", "kind", "text",
                       "condition", "description"),
        on=["run_uri", "service", "clause_id"], how="left",
    )


def build_reports(tables: dict[str, pl.DataFrame], frame: pl.DataFrame) -> dict[str, str]:
    """Return {staged name: JSON text} for every graded run of the batch, in run_uri order,
    then {staged name + REFUSED_MARK: ""} for every refused run: it has no report, and
    publishing removes the one it held from an earlier grade.

    A staged name is `{uri tag}.{run_id}.json`, the tag 8 hex digits of the SHA-1 of the
    run's own uri and the run id cut if very long (see `report_stem`). Publishing drops the
    tag (`ResultStore.publish`), except from a run id that a run under another prefix holds
    (see `ReportOwners`): that report is named `{run_id}~{uri tag}.json`.
    """
    def staged(run_id: str, run_uri: str) -> str:
        return f"{uri_tag(run_uri)}.{report_stem(run_id)}.json"

    graded = {staged(run_id, run_uri): text for run_id, run_uri, text in sorted(
        _contract_reports(tables, frame) + ledger_reports(tables), key=lambda r: r[1])}
    refused = tables["runs"].filter(pl.col("status") == "refused").select("run_id", "run_uri")
    return graded | {staged(*run) + REFUSED_MARK: "" for run in refused.iter_rows()}


def _encoded(report: pl.DataFrame, fields: tuple[str, ...]) -> list[tuple[str, str, str]]:
    """(run_id, run_uri, JSON text) per row: `fields` as one object, serialised by polars
    (compact, UTF-8 unescaped: the bytes `json.dumps(..., ensure_ascii=False,
    separators=(",", ":"))` would write, without building Python objects; `jq .` indents)."""
    return report.select("run_id", "run_uri",
                         pl.struct(*fields).struct.json_encode().alias("_json")).rows()


def ledger_reports(tables: dict[str, pl.DataFrame]) -> list[tuple[str, str, str]]:
    """(run_id, run_uri, GradeReport JSON) per graded ledger: grader id, checks in order,
    verdict.

    `checks` holds name, outcome and detail of every check; `verdict` is derived from them
    (failed > undecided > passed) and is never an input.
    """
    runs = tables["runs"].filter((pl.col("status") == "graded") & (pl.col("source") == "ledger"))
    if runs.is_empty():
        return []
    checks = (
        tables["checks"].join(
            tables["clauses"].filter(pl.col("kind") == LEDGER_CLAUSE_KIND)
            .select("run_uri", "clause_id", "position", pl.col("text").alias("name")),
            on=["run_uri", "clause_id"])
        .sort("run_uri", "position")
        .group_by("run_uri", "grader_id", maintain_order=True)
        .agg(
            pl.struct("name", "outcome", "detail").alias("checks"),
            verdict(pl.col("outcome")).alias("verdict"),
        )
    )
    report = runs.select("run_id", "run_uri", pl.col("program").alias("definition_id")).join(
        checks, on="run_uri", how="left")
    return _encoded(report, ("run_id", "grader_id", "definition_id", "verdict", "checks"))


def _contract_reports(tables: dict[str, pl.DataFrame], frame: pl.DataFrame
                      ) -> list[tuple[str, str, str]]:
    runs = tables["runs"].filter((pl.col("status") == "graded") & (pl.col("source") != "ledger"))
    if runs.is_empty():
        return []
    rows = _clause_rows(tables["clauses"], tables["clause_verdicts"])
    services = tables["services"].select("run_uri", "service", "position")
    clause_lists = (
        rows.sort("run_uri", "service", "position")
        .group_by("run_uri", "service", maintain_order=True)
        .agg(pl.struct("text", "verdict", "evidence", "confidence").alias("ensures_clauses"))
    )
    service_lists = (
        services.join(clause_lists, on=["run_uri", "service"], how="left")
        .join(tables["service_scores"].select("run_uri", "service", "service_score"),
              on=["run_uri", "service"], how="left")
        .with_columns(pl.col("ensures_clauses").fill_null(
            pl.lit([], dtype=clause_lists.schema["ensures_clauses"])))
        .sort("run_uri", "position")
        .group_by("run_uri", maintain_order=True)
        .agg(pl.struct(pl.col("service").alias("name"), "ensures_clauses", "service_score")
             .alias("services"))
    )
    provided = (
        tables["checks"].filter(pl.col("check") == "degraded_output_provided")
        .select("run_uri", "clause_id", (pl.col("outcome") == "passed").alias("provided"))
    )
    conditionals = (
        frame.filter(pl.col("kind") == "conditional")
        .join(provided, on=["run_uri", "clause_id"], how="left")
        .sort("run_uri", "service", "position")
        .group_by("run_uri", maintain_order=True)
        .agg(pl.struct(
            pl.col("text").alias("clause"),
            pl.col("service"),
            pl.col("triggered").alias("condition_triggered"),
            pl.col("provided").alias("degraded_output_provided"),
        ).alias("conditional_ensures"))
    )
    unevaluable = (
        rows.filter(pl.col("verdict") == "not_evaluable")
        .sort("run_uri", "service", "position")
        .group_by("run_uri", maintain_order=True)
        .agg(
            pl.struct(pl.col("text").alias("clause"), "service", pl.col("reason").alias("why"))
            .alias("unevaluable_clauses"),
            pl.format("{}: {}", pl.col("service"), pl.col("recommendation"))
            .filter(pl.col("recommendation").is_not_null()).alias("recommendations"),
        )
    )
    report = (
        runs.select("run_id", "run_uri", "program")
        .join(tables["run_scores"].select("run_uri", "overall_score", "overall_verdict"),
              on="run_uri", how="left")
        .join(service_lists, on="run_uri", how="left")
        .join(conditionals, on="run_uri", how="left")
        .join(unevaluable, on="run_uri", how="left")
        .sort("run_uri")
    )
    lists = ("services", "conditional_ensures", "unevaluable_clauses", "recommendations")
    report = report.with_columns(pl.col(c).fill_null(pl.lit([], dtype=report.schema[c]))
                                 for c in lists)
    return _encoded(report, ("run_id", "program", "overall_score", "overall_verdict", *lists))
