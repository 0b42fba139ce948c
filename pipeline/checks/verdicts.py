"""From checks to one verdict per clause, by one documented mapping (README, "Clause verdicts").

Checks come in two roles. A *precondition* (`Check(precondition=True)`; built in:
`output_published`, `degraded_output_provided`, `error_declared`) establishes that there is
something to judge; every other check is a *requirement* the clause states. Per clause, the
first row that matches decides:

| checks of the clause                              | verdict             | confidence          |
|---------------------------------------------------|---------------------|---------------------|
| none applied                                      | not_evaluable       | 0                   |
| a precondition failed (e.g. the output is missing), | violated          | weakest such one    |
| confidence 50 or more                             |                     |                     |
| requirements failed, none passed                  | violated            | weakest failure *   |
| requirements failed and passed                    | partially_satisfied | weakest failure *   |
| requirements passed, none failed                  | satisfied           | weakest passed one, |
|                                                   |                     | - 20 per undecided  |
|                                                   |                     | requirement         |
| requirements all undecided                        | not_evaluable       | 0                   |
| no requirement, preconditions passed              | satisfied           | weakest passed one  |

(*) of the failures established (confidence 50 or more); the strongest one when none is. A
failure under 50 establishes nothing, nor does it unsettle one that is established: v19 took
the weakest of all, so a judge's unsure "failed" (49) beside a count past its bound (95) made
the clause not_evaluable, and its run's score went up. A precondition's failure under 50 counts
among the requirements' failures; the reason names the failures established (all, when none
is).

Then any verdict with confidence under 50 becomes not_evaluable, with the reason. A failure is
established whatever stayed open, so it is not discounted; a satisfaction loses 20 points for
each requirement left open (a quality word, a vague word, what the clause says beyond what the
checks read), so at most two open questions beside strong passes keep a clause evaluable; a
clause whose requirements are all open ("a good report") is not_evaluable. `outcome` keeps the
strongest-outcome verdict of all the clause's checks: failed > undecided > passed (undecided
when no check applied).
"""

from __future__ import annotations

import polars as pl

from ..tables import conform

CONFIDENCE_FLOOR = 50
OPEN_PENALTY = 20
PRECONDITIONS = ("output_published", "degraded_output_provided", "error_declared")


def clause_verdicts(frame: pl.DataFrame, checks: pl.DataFrame, grader_id: str,
                    preconditions: tuple[str, ...] = PRECONDITIONS) -> pl.DataFrame:
    """One row per clause of `frame` (every clause, whether or not a check applied).

    `preconditions` names the checks that play that role (a Grader's `.preconditions`).
    """
    pre = pl.col("check").is_in(list(preconditions))
    passed, failed = pl.col("outcome") == "passed", pl.col("outcome") == "failed"
    established = failed & (pl.col("confidence") >= CONFIDENCE_FLOOR)
    undecided = pl.col("outcome") == "undecided"
    rank = pl.col("outcome").replace_strict({"failed": 0, "passed": 1, "undecided": 2},
                                            return_dtype=pl.Int8)
    per_clause = checks.with_row_index("_order").group_by(
        "run_uri", "service", "clause_id", maintain_order=True).agg(
        pl.len().alias("n_checks"),
        (pre & established).sum().alias("n_pre_failed"),
        (pre & failed & ~established).sum().alias("n_pre_weak"),
        (~pre & passed).sum().alias("n_passed"),
        (~pre & failed).sum().alias("n_failed"),
        (~pre & undecided).sum().alias("n_open"),
        pl.col("confidence").filter(pre & established).min().alias("pre_failed_conf"),
        pl.col("confidence").filter(pre & passed).min().alias("pre_passed_conf"),
        _failure_confidence(failed).alias("failed_conf"),
        pl.col("confidence").filter(~pre & passed).min().alias("passed_conf"),
        failed.any().alias("_any_failed"),
        undecided.any().alias("_any_open"),
        # evidence of a failure first, then of a pass, then whatever an open check quoted
        pl.col("evidence").sort_by(rank, "_order").first().alias("evidence"),
        # what failed: the failures established, else every failure
        pl.col("detail").filter(established | (failed & ~established.any()))
        .alias("failed_details"),
        # every question left open, and every rewrite suggested
        pl.col("detail").filter(undecided).alias("open_question"),
        pl.col("recommendation").filter(undecided).drop_nulls().alias("recommendation"),
        pl.col("judge_id").drop_nulls().first().alias("judge_id"),
    )
    n_failed, n_passed, n_open = pl.col("n_failed"), pl.col("n_passed"), pl.col("n_open")
    pre_failed = pl.col("n_pre_failed") > 0
    # a precondition's unsure failure counts as a requirement's would: with the requirements'
    # failures (v20 as first written made it the clause's, 40, over a count failed at 95)
    failing = (n_failed > 0) | (pl.col("n_pre_weak") > 0)
    verdict = (
        pl.when(pl.col("n_checks") == 0).then(pl.lit("not_evaluable"))
        .when(pre_failed).then(pl.lit("violated"))
        .when(failing & (n_passed > 0)).then(pl.lit("partially_satisfied"))
        .when(failing).then(pl.lit("violated"))
        .when(n_passed > 0).then(pl.lit("satisfied"))
        .when(n_open > 0).then(pl.lit("not_evaluable"))
        .otherwise(pl.lit("satisfied"))
    )
    confidence = (
        pl.when(pl.col("n_checks") == 0).then(0)
        .when(pre_failed).then(pl.col("pre_failed_conf"))
        .when(failing).then(pl.col("failed_conf"))
        .when(n_passed > 0).then(
            pl.min_horizontal("passed_conf", "pre_passed_conf") - OPEN_PENALTY * n_open)
        .when(n_open > 0).then(0)
        .otherwise(pl.col("pre_passed_conf"))
        .clip(0, 100).cast(pl.Int64)
    )
    per_clause = per_clause.with_columns(_joined("open_question"), _joined("recommendation"))
    out = (
        frame.select("run_id", "run_uri", "service", "clause_id")
        .join(per_clause, on=["run_uri", "service", "clause_id"], how="left")
        .with_columns(pl.col("n_checks", "n_pre_failed", "n_pre_weak", "n_passed", "n_failed",
                             "n_open").fill_null(0))
        .with_columns(verdict.alias("_verdict"), confidence.alias("confidence"))
        .with_columns(
            pl.when(pl.col("_any_failed").fill_null(False)).then(pl.lit("failed"))
            .when(pl.col("_any_open").fill_null(True)).then(pl.lit("undecided"))
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


def _failure_confidence(failed: pl.Expr) -> pl.Expr:
    """The confidence of a clause's `failed` checks: the weakest of those established (50 or
    more), else the strongest (under 50: the verdict becomes not_evaluable)."""
    confidence = pl.col("confidence").filter(failed)
    return pl.coalesce(confidence.filter(confidence >= CONFIDENCE_FLOOR).min(), confidence.max())


def _joined(column: str) -> pl.Expr:
    """The texts of list `column` (a clause's), in order, joined by "; "; null when none."""
    texts = pl.col(column)
    return pl.when(texts.list.len() > 0).then(texts.list.join("; ")).alias(column)


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
