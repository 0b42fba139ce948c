"""The tables between stages: one column list per table, used to build frames and schemas.

Every stage hands the next one polars DataFrames with exactly these columns. The pandera
schemas below are applied by the tests and by `rungrade grade --validate`, never per row in
the hot path.
"""

from __future__ import annotations

import polars as pl

from .names import shown_in

REFUSAL_REASONS = {
    "missing-program": "the run folder has no program.md (era B: root.prose.md)",
    "missing-manifest": "the run folder has no manifest.md (era B: manifest.run.md or "
                        "forme.manifest.json)",
    "no-outputs": "no service published any binding",
    "incomplete-run": "state.md (era B: vm.log.md) is missing or does not end with a '---end' "
                      "line",
    "no-ensures": "no service declares an ensures clause, so there is nothing to grade",
    "unreadable-file": "a file the grader needs could not be read, or a folder of the run "
                       "could not be listed",
    "unsafe-path": "the run holds a symlink that leaves the runs root (never followed)",
    "unsupported-layout": "the run uses a layout this grader does not grade yet",
    "internal-error": "the grader raised while processing this run",
    # moltzap ledgers (SPEC 4.1): validation, then grading refusals
    "ledger-incomplete": "the ledger has no completion.json (it is written last)",
    "ledger-unreadable-artifact": "manifest.json or records.ndjson is missing, unreadable or too "
                                  "large",
    "ledger-invalid-json": "a ledger file or record line is not valid JSON",
    "ledger-empty-line": "records.ndjson holds an empty line",
    "ledger-schema-mismatch": "a ledger file or record envelope does not have the ledger schema",
    "ledger-run-id-mismatch": "manifest, completion and records do not name the same run id",
    "ledger-digest-mismatch": "a file's sha256 differs from the digest sealed in completion.json",
    "ledger-undecodable-event": "a record's event is not a well-formed moltzap event",
    "ledger-duplicate-event-id": "two records carry the same event id",
    "ledger-sequence-gap": "logicalSequence is not 0, 1, 2, ... in line order",
    "ledger-record-count-mismatch": "completion.json's recordCount differs from the records",
    "ledger-no-grader": "no ledger grader is defined for the ledger's scenario",
    "ledger-grader-ambiguous": "more than one ledger grader matches the ledger's scenarios",
    "ledger-program-not-succeeded": "the ledger has no program-succeeded event",
    "ledger-target-not-ready": "no ready runtime for the grader's target agent",
    "ledger-selection-unmatched": "a selected response names a delivery the ledger does not hold",
    "ledger-response-count-mismatch": "the number of selected responses differs from the "
                                      "grader's expected count",
}
OUTCOMES = ("passed", "failed", "undecided")
VERDICTS = ("satisfied", "partially_satisfied", "violated", "not_evaluable")
RUN_VERDICTS = ("satisfied", "partial", "violated", "not_evaluable")
# A service whose contract the run does not hold gets one clause of this kind, never graded
MISSING_CONTRACT = "missing_contract"
UNREAD_ENSURES = "unread_ensures"
CLAUSE_KINDS = ("ensures", "conditional", "program_ensures", "detail", "ledger_check",
                MISSING_CONTRACT, UNREAD_ENSURES)

Str, Int, Bool, F64 = pl.String, pl.Int64, pl.Boolean, pl.Float64

COLUMNS: dict[str, dict[str, pl.DataType]] = {
    "runs": {
        "run_id": Str, "source": Str, "layout": Str, "run_uri": Str, "program": Str,
        "completed": Bool, "ended_at": Str, "fingerprint": Str, "discovered_at": Str,
        "file_count": Int, "total_bytes": Int, "status": Str, "graded_in": Str,
    },
    "services": {
        "run_id": Str, "run_uri": Str, "service": Str, "kind": Str, "contract_source": Str,
        "declared_errors": pl.List(Str), "errored": Bool, "error_name": Str,
        "error_detail": Str, "log_status": Str, "log_note": Str, "position": Int,
    },
    "clauses": {
        "run_id": Str, "run_uri": Str, "service": Str, "clause_id": Str, "position": Int,
        "parent_position": Int, "kind": Str, "output_name": Str, "output_service": Str,
        "condition": Str, "text": Str, "description": Str, "optional": Bool,
    },
    "bindings": {
        "run_id": Str, "run_uri": Str, "service": Str, "name": Str, "uri": Str,
        "extension": Str, "size_bytes": Int, "sha256": Str, "text": Str, "truncated": Bool,
        "decode_errors": Bool,
    },
    "refusals": {"run_id": Str, "run_uri": Str, "reason": Str, "detail": Str},
    "checks": {
        "grader_id": Str, "run_id": Str, "run_uri": Str, "service": Str, "clause_id": Str,
        "check": Str, "outcome": Str, "detail": Str, "evidence": Str, "confidence": Int,
        "recommendation": Str, "judgeable": Bool, "judge_id": Str,
    },
    "clause_verdicts": {
        "grader_id": Str, "run_id": Str, "run_uri": Str, "service": Str, "clause_id": Str,
        "verdict": Str, "outcome": Str, "evidence": Str, "confidence": Int, "reason": Str,
        "recommendation": Str, "judge_id": Str,
    },
    "service_scores": {
        "grader_id": Str, "run_id": Str, "run_uri": Str, "service": Str, "clauses": Int,
        "satisfied": Int, "partially_satisfied": Int, "violated": Int, "not_evaluable": Int,
        "evaluable": Int, "service_score": F64, "passes": Bool,
    },
    "run_scores": {
        "grader_id": Str, "run_id": Str, "run_uri": Str, "program": Str, "services": Int,
        "services_scored": Int, "services_passing": Int, "services_failing": Int,
        "clauses": Int, "overall_score": F64, "overall_verdict": Str, "outcome_verdict": Str,
    },
}
# Tables read from runs; the grader id is stamped on them when a batch is stored.
SOURCE_TABLES = ("runs", "services", "clauses", "bindings", "refusals")
GRADED_TABLES = ("checks", "clause_verdicts", "service_scores", "run_scores")
TABLES = SOURCE_TABLES + GRADED_TABLES


def collect(query: pl.LazyFrame) -> pl.DataFrame:
    """Run a lazy query on polars' in-memory engine. Left to choose ("auto"), polars 2 runs
    these queries on its streaming engine, which costs a shard's checks query about 14% more
    CPU (222 against 253 ms on 400 runs, one thread) and a small query a fixed tenth of a
    millisecond more: the grader's frames fit in memory by design (shards are bounded)."""
    return query.collect(engine="in-memory")


def empty(table: str) -> pl.DataFrame:
    return pl.DataFrame(schema=COLUMNS[table])


def frame(table: str, rows: list[dict]) -> pl.DataFrame:
    """Build a table from row dicts, with exactly the table's columns and types."""
    if not rows:
        return empty(table)
    schema = COLUMNS[table]  # built column by column: faster than from row dicts
    columns = {c: [row.get(c) for row in rows] for c in schema}
    try:
        return pl.DataFrame(columns, schema=schema, strict=False)
    except UnicodeEncodeError:  # a file name that is not UTF-8, in a path, a name or a detail
        return pl.DataFrame({c: shown_in(values) for c, values in columns.items()},
                            schema=schema, strict=False)


def conform(table: str, df: pl.DataFrame) -> pl.DataFrame:
    """Select and cast a frame to the table's columns (extra columns dropped, missing = null)."""
    cols = COLUMNS[table]
    return df.select(
        [
            (pl.col(c) if c in df.columns else pl.lit(None)).cast(t).alias(c)
            for c, t in cols.items()
        ]
    )


def pandera_schema(table: str):
    """The pandera (polars backend) schema of a table, with the closed vocabularies checked."""
    import pandera.polars as pa

    allowed = {
        ("refusals", "reason"): list(REFUSAL_REASONS),
        ("checks", "outcome"): list(OUTCOMES),
        ("clause_verdicts", "outcome"): list(OUTCOMES),
        ("clause_verdicts", "verdict"): list(VERDICTS),
        ("run_scores", "overall_verdict"): list(RUN_VERDICTS),
        ("run_scores", "outcome_verdict"): list(OUTCOMES),
        ("clauses", "kind"): list(CLAUSE_KINDS),
        ("runs", "status"): ["graded", "refused"],
    }
    ranges = {
        ("checks", "confidence"): (0, 100),
        ("clause_verdicts", "confidence"): (0, 100),
        ("service_scores", "service_score"): (0, 100),
        ("run_scores", "overall_score"): (0, 100),
    }
    required = {"run_id", "run_uri", "grader_id", "service", "clause_id"} | {
        col for (tab, col) in allowed if tab == table} - {"overall_verdict"}
    columns = {}
    for col, dtype in COLUMNS[table].items():
        checks = []
        if (table, col) in allowed:
            checks.append(pa.Check.isin(allowed[(table, col)]))
        if (table, col) in ranges:
            checks.append(pa.Check.in_range(*ranges[(table, col)]))
        columns[col] = pa.Column(dtype, checks=checks, nullable=col not in required,
                                 required=col != "grader_id" or table in GRADED_TABLES)
    return pa.DataFrameSchema(columns, strict=True, name=table)


def validate(tables: dict[str, pl.DataFrame]) -> None:
    """Validate every known table in `tables`; raises pandera's SchemaError on a mismatch."""
    for name, df in tables.items():
        if name in COLUMNS:
            pandera_schema(name).validate(conform_extra(name, df))


def conform_extra(table: str, df: pl.DataFrame) -> pl.DataFrame:
    # Stored tables carry partition columns (grader_id, batch_id) beyond the stage schema.
    extra = [c for c in df.columns if c not in COLUMNS[table]]
    return df.drop(extra)
