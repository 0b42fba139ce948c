"""From checks to one verdict per clause, by one documented mapping (README, "Verdicts").

Per clause, over the checks that applied to it:
- no check decided anything                  -> not_evaluable (reason: the open question)
- confidence below 50                        -> not_evaluable (reason: the confidence)
- every decided check passed                 -> satisfied
- some passed and some failed                -> partially_satisfied
- every decided check failed                 -> violated
Confidence is the lowest confidence of the decided checks, lowered by 25 for each check that
stayed undecided (an open judgment question weakens what the decided checks established).
`outcome` keeps the strongest-outcome verdict of the same checks: failed > undecided > passed.
"""

from __future__ import annotations

import polars as pl

from ..tables import conform

CONFIDENCE_FLOOR = 50
UNDECIDED_PENALTY = 25


def clause_verdicts(frame: pl.DataFrame, checks: pl.DataFrame, grader_id: str) -> pl.DataFrame:
    """One row per clause of `frame` (every clause, whether or not a check applied)."""
    decided = pl.col("outcome") != "undecided"
    per_clause = checks.group_by("run_uri", "service", "clause_id", maintain_order=True).agg(
        (pl.col("outcome") == "passed").sum().alias("n_passed"),
        (pl.col("outcome") == "failed").sum().alias("n_failed"),
        (pl.col("outcome") == "undecided").sum().alias("n_undecided"),
        pl.col("confidence").filter(decided).min().alias("decided_confidence"),
        # evidence of a failure first, then of a pass, then whatever an open check quoted
        pl.col("evidence").sort_by(
            pl.col("outcome").replace_strict({"failed": 0, "passed": 1, "undecided": 2},
                                             return_dtype=pl.Int8)
        ).first().alias("evidence"),
        pl.col("detail").filter(~decided).first().alias("open_question"),
        pl.col("recommendation").filter(~decided).drop_nulls().first().alias("recommendation"),
        pl.col("judge_id").drop_nulls().first().alias("judge_id"),
    )
    n_decided = pl.col("n_passed") + pl.col("n_failed")
    confidence = (
        pl.when(n_decided > 0)
        .then(pl.col("decided_confidence") - UNDECIDED_PENALTY * pl.col("n_undecided"))
        .otherwise(0)
        .clip(0, 100)
    )
    out = (
        frame.select("run_id", "run_uri", "service", "clause_id")
        .join(per_clause, on=["run_uri", "service", "clause_id"], how="left")
        .with_columns(
            pl.col("n_passed", "n_failed", "n_undecided").fill_null(0),
        )
        .with_columns(confidence.cast(pl.Int64).alias("confidence"))
        .with_columns(
            pl.when(pl.col("n_failed") > 0).then(pl.lit("failed"))
            .when((pl.col("n_undecided") > 0) | (n_decided == 0)).then(pl.lit("undecided"))
            .otherwise(pl.lit("passed")).alias("outcome"),
            pl.when(n_decided == 0).then(pl.lit("not_evaluable"))
            .when(pl.col("confidence") < CONFIDENCE_FLOOR).then(pl.lit("not_evaluable"))
            .when(pl.col("n_failed") == 0).then(pl.lit("satisfied"))
            .when(pl.col("n_passed") == 0).then(pl.lit("violated"))
            .otherwise(pl.lit("partially_satisfied")).alias("verdict"),
        )
        .with_columns(
            pl.when(pl.col("verdict") != "not_evaluable").then(None)
            .when(n_decided == 0).then(
                pl.coalesce("open_question", pl.lit("no check applies to this clause")))
            .otherwise(pl.format(
                "confidence {} is below {}: {}", pl.col("confidence"),
                pl.lit(CONFIDENCE_FLOOR),
                pl.coalesce("open_question", pl.lit("the decided checks are weak"))))
            .alias("reason"),
            pl.when(pl.col("verdict") == "not_evaluable").then(pl.col("recommendation"))
            .alias("recommendation"),
            pl.lit(grader_id).alias("grader_id"),
        )
    )
    return conform("clause_verdicts", out)
