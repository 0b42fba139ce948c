"""From checks to one verdict per clause, by one documented mapping (README, "Clause verdicts").

Per clause, over the checks that applied to it (every check counts alike, the check that the
output was published included), the first row that matches decides:

| checks of the clause                  | verdict             | confidence                    |
|---------------------------------------|---------------------|-------------------------------|
| none applied                          | not_evaluable       | 0                             |
| none decided (all undecided)          | not_evaluable       | 0                             |
| some failed, none passed              | violated            | weakest failed check          |
| some failed, some passed              | partially_satisfied | weakest failed check          |
| all decided ones passed               | satisfied           | weakest passed check × decided |
|                                       |                     | / (decided + undecided)       |

Then any verdict with confidence under 50 becomes not_evaluable, with the reason. A failure is
established whatever stayed open, so it is not discounted; a satisfaction is only as strong as
the share of the clause's checks that settled anything ("a good report" is published, but the
open question of what "good" means halves the confidence: not_evaluable). `outcome` keeps the
strongest-outcome verdict of all the clause's checks: failed > undecided > passed (undecided
when no check applied).
"""

from __future__ import annotations

import polars as pl

from ..tables import conform

CONFIDENCE_FLOOR = 50


def clause_verdicts(frame: pl.DataFrame, checks: pl.DataFrame, grader_id: str) -> pl.DataFrame:
    """One row per clause of `frame` (every clause, whether or not a check applied)."""
    passed, failed = pl.col("outcome") == "passed", pl.col("outcome") == "failed"
    undecided = pl.col("outcome") == "undecided"
    rank = pl.col("outcome").replace_strict({"failed": 0, "passed": 1, "undecided": 2},
                                            return_dtype=pl.Int8)
    per_clause = checks.with_row_index("_order").group_by(
        "run_uri", "service", "clause_id", maintain_order=True).agg(
        pl.len().alias("n_checks"),
        passed.sum().alias("n_passed"),
        failed.sum().alias("n_failed"),
        undecided.sum().alias("n_open"),
        pl.col("confidence").filter(failed).min().alias("failed_conf"),
        pl.col("confidence").filter(passed).min().alias("passed_conf"),
        # evidence of a failure first, then of a pass, then whatever an open check quoted
        pl.col("evidence").sort_by(rank, "_order").first().alias("evidence"),
        pl.col("detail").filter(failed).alias("failed_details"),
        pl.col("detail").filter(undecided).first().alias("open_question"),
        pl.col("recommendation").filter(undecided).drop_nulls().first().alias("recommendation"),
    )
    n_failed, n_passed, n_open = pl.col("n_failed"), pl.col("n_passed"), pl.col("n_open")
    verdict = (
        pl.when((n_failed > 0) & (n_passed > 0)).then(pl.lit("partially_satisfied"))
        .when(n_failed > 0).then(pl.lit("violated"))
        .when(n_passed > 0).then(pl.lit("satisfied"))
        .otherwise(pl.lit("not_evaluable"))
    )
    confidence = (
        pl.when(n_failed > 0).then(pl.col("failed_conf"))
        .when(n_passed > 0).then(
            (pl.col("passed_conf") * n_passed / (n_passed + n_open)).floor())
        .otherwise(0)
        .clip(0, 100).cast(pl.Int64)
    )
    out = (
        frame.select("run_id", "run_uri", "service", "clause_id")
        .join(per_clause, on=["run_uri", "service", "clause_id"], how="left")
        .with_columns(pl.col("n_checks", "n_passed", "n_failed", "n_open").fill_null(0))
        .with_columns(verdict.alias("_verdict"), confidence.alias("confidence"))
        .with_columns(
            pl.when(n_failed > 0).then(pl.lit("failed"))
            .when((n_open > 0) | (pl.col("n_checks") == 0)).then(pl.lit("undecided"))
            .otherwise(pl.lit("passed")).alias("outcome"),
            pl.when((pl.col("_verdict") != "not_evaluable")
                    & (pl.col("confidence") < CONFIDENCE_FLOOR))
            .then(pl.lit("not_evaluable")).otherwise(pl.col("_verdict")).alias("verdict"),
        )
        .with_columns(_reason().alias("reason"),
                      pl.when(pl.col("verdict") == "not_evaluable")
                      .then(pl.col("recommendation")).alias("recommendation"),
                      pl.lit(grader_id).alias("grader_id"))
    )
    return conform("clause_verdicts", out)


def _reason() -> pl.Expr:
    """Why a clause got its verdict: what failed, or the question nothing settled."""
    failures = pl.col("failed_details").list.join("; ")
    open_question = pl.coalesce("open_question", pl.lit("the decided checks are weak"))
    return (
        pl.when(pl.col("n_checks") == 0).then(pl.lit("no check applies to this clause"))
        .when((pl.col("verdict") == "not_evaluable") & (pl.col("_verdict") != "not_evaluable"))
        .then(pl.format("confidence {} is below {} ({} on {}): {}", pl.col("confidence"),
                        pl.lit(CONFIDENCE_FLOOR), pl.col("_verdict"),
                        pl.lit("what text can settle"), open_question))
        .when(pl.col("verdict") == "not_evaluable").then(open_question)
        .when(pl.col("verdict").is_in(["violated", "partially_satisfied"]))
        .then(pl.format("failed: {}", failures))
    )
