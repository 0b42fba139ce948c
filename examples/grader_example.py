"""An example grader: the built-in contract checks plus two checks of a team's own.

    rungrade grade RUNS --out RESULTS --grader examples/grader_example.py
"""

import polars as pl

from pipeline.checks import (
    FAILED,
    NAMED,
    PASSED,
    UNDECIDED,
    Check,
    Grader,
    around,
    builtin_checks,
    check,
    label,
)

PLACEHOLDER = r"(?i)(?:^|[^\p{L}\p{N}_])(?:TODO|TBD|lorem ipsum)(?:[^\p{L}\p{N}_]|$)"


@check("sources_cited")
def sources_cited() -> Check:
    """Deciding: an output whose clause asks for sources links at least one URL."""
    cites = pl.col("n_urls") > 0
    return Check(
        applies=NAMED & pl.col("description").str.contains(r"(?i)\bsource|\bcit(?:e|ation)"),
        outcome=pl.when(cites).then(PASSED).otherwise(FAILED),
        detail=pl.format("{} links at least one source URL", label()),
        evidence=pl.when(cites).then(pl.format("{} URLs, first {}", pl.col("n_urls"),
                                               pl.col("urls").list.first()))
        .otherwise(pl.format("no URL in {}", label())),
        confidence=pl.lit(90),
    )


@check("no_placeholders")
def no_placeholders() -> Check:
    """One-sided: an output said to be final or ready that still holds TODO, TBD or lorem
    ipsum fails; finding none settles nothing, so it stays undecided."""
    found = pl.col("output_text").str.contains(PLACEHOLDER)
    return Check(
        applies=NAMED & pl.col("description").str.contains(r"(?i)\b(?:final|ready)\b"),
        outcome=pl.when(found).then(FAILED).otherwise(UNDECIDED),
        detail=pl.format("{} holds no placeholder text", label()),
        evidence=pl.when(found).then(around(pl.col("output_text"), pl.lit(PLACEHOLDER), 60))
        .otherwise(pl.lit("no TODO, TBD or lorem ipsum found")),
        confidence=pl.when(found).then(95).otherwise(0),
    )


# The id names this grader's meaning: change a check, bump the version (v2, v3, ...).
grader = Grader("acme.contract.grader/v1", [*builtin_checks(), sources_cited(),
                                            no_placeholders()])
