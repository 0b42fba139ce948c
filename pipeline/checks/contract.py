"""Built-in contract checks: does the named output exist, and what happened on error paths.

What an output must contain is checked by library.py; this file holds the checks every
clause meets first (is its output there?) and the conditional-ensures bookkeeping.

Each function returns expressions over the clause frame (see frame.py). Deciding checks give
`passed` or `failed`; a check that cannot settle its property gives `undecided` and says in
`detail` what is still open.
"""

from __future__ import annotations

import polars as pl

from ..tables import MISSING_CONTRACT, UNREAD_ENSURES
from .frame import ERROR
from .grader import Check, check

PASSED, FAILED, UNDECIDED = pl.lit("passed"), pl.lit("failed"), pl.lit("undecided")
PRIMARY = pl.col("kind").is_in(["ensures", "program_ensures"]) & ~pl.col("on_degraded_path")
# An output its ensures item marks `(optional)` that was not published (or is empty).
OPTIONAL_ABSENT = pl.col("optional").fill_null(False) & ~pl.col("has_output")
# A clause judged on an output: a primary ensures naming one, or a triggered conditional.
ON_AN_OUTPUT = (
    ((PRIMARY & (pl.col("output_scope") == "named"))
     | ((pl.col("kind") == "conditional") & pl.col("triggered").fill_null(False)))
    & pl.col("has_output")
)
# Its output was read only up to the read cap (`bindings.truncated`), or for a conditional
# judged on all its service published, one of those outputs.
CUT_SHORT = pl.col("binding_truncated").fill_null(False)


def part_read(evidence: pl.Expr) -> pl.Expr:
    """`evidence`, saying on an output cut at the read cap that it was found in the part read."""
    # (`evidence` written once: in both branches of a `when`, it was computed twice)
    return pl.concat_str(evidence, pl.when(CUT_SHORT).then(pl.format(
        " (in its first {} bytes of {}: what was read, to its last whole block)",
        pl.col("binding_text").str.len_bytes(), pl.col("binding_size"))).otherwise(pl.lit("")))


def excerpt(expr: pl.Expr, size: int = 240) -> pl.Expr:
    """The start of an output, trimmed, cut at `size` characters with an ellipsis when longer
    (and, of several outputs joined, at the end of the first: see `grader.finished`).

    Only the excerpt is copied: the trimmed length comes from the whitespace at either end
    (found by anchored patterns), so a long output is never copied whole.
    """
    lead = expr.str.extract(r"^(\s*)", 1).str.len_chars().cast(pl.Int64)
    trail = expr.str.extract(r"(\s*)$", 1).str.len_chars().cast(pl.Int64)
    kept = (expr.str.len_chars().cast(pl.Int64) - lead - trail).clip(lower_bound=0)
    return pl.when(kept > size).then(
        pl.concat_str(expr.str.slice(lead, size), pl.lit("…"))
    ).otherwise(expr.str.slice(lead, kept))


def quoted(expr: pl.Expr) -> pl.Expr:
    return pl.concat_str(pl.lit("“"), expr, pl.lit("”"))


def where(expr: pl.Expr) -> pl.Expr:
    """`bindings/{service}/{name}` for a clause's output, as evidence of an absence."""
    return pl.format("bindings/{}/{}", pl.coalesce("output_service", "service"), expr)


@check("output_published")
def output_published() -> Check:
    """The output a clause names was published as a binding and is not empty."""
    program = pl.col("kind") == "program_ensures"
    absent_note = (
        pl.when(pl.col("binding_uri").is_not_null())
        .then(pl.format("{} is empty", pl.col("binding_uri")))
        # a program's output is published by one of its services: the log of none is its own
        .when(program & pl.col("output_service").is_null())
        .then(pl.format("no service of the run published `{}`", pl.col("output_name")))
        .when(program).then(pl.format("no binding {}.* in the run", where(pl.col("output_name"))))
        .otherwise(pl.format("no binding {}.* in the run; the log marks the service '{}'",
                             where(pl.col("output_name")), pl.col("log_status")))
    )
    return Check(
        precondition=True,
        applies=PRIMARY & pl.col("output_name").is_not_null() & ~OPTIONAL_ABSENT,
        outcome=pl.when(pl.col("has_output")).then(PASSED).otherwise(FAILED),
        detail=pl.format("output `{}` is published and non-empty", pl.col("output_name")),
        evidence=pl.when(pl.col("has_output")).then(quoted(excerpt(pl.col("binding_text"))))
        .otherwise(absent_note),
        confidence=pl.when(pl.col("has_output")).then(95).otherwise(90),
    )


@check("optional_output")
def optional_output() -> Check:
    """An output its item marks `(optional)` may be absent: absent, nothing of it is graded,
    and its clause is not held against the service."""
    return Check(
        applies=PRIMARY & pl.col("output_name").is_not_null() & OPTIONAL_ABSENT,
        outcome=UNDECIDED,
        detail=pl.format("optional output `{}` was not published: there is nothing of it to "
                         "grade", pl.col("output_name")),
        evidence=pl.when(pl.col("binding_uri").is_not_null())
        .then(pl.format("{} is empty", pl.col("binding_uri")))
        .otherwise(pl.format("no binding {}.* in the run", where(pl.col("output_name")))),
        confidence=pl.lit(0),
    )


@check("output_read_whole")
def output_read_whole() -> Check:
    """An output larger than the read cap was read only in part: what a clause says of it
    (its length, its format, how it ends) is not established by its start. No other check
    judges it, but for the failures its start establishes (`library.failed_on_part_read`:
    a count already past an upper bound, a forbidden text or a secret found), which make the
    clause violated; else the clause is not_evaluable."""
    return Check(
        applies=ON_AN_OUTPUT & CUT_SHORT,
        outcome=UNDECIDED,
        detail=pl.when(pl.col("output_scope") == "named").then(pl.format(
            "`{}` is {} bytes, more than the read cap: only its start was read, and what the "
            "clause says of the whole output is not established", pl.col("target_output"),
            pl.col("binding_size")))
        .otherwise(pl.format(
            "an output `{}` published is larger than the read cap: only its start was read, "
            "and what the clause says of all it published is not established",
            pl.coalesce("output_service", "service"))),
        evidence=quoted(excerpt(pl.col("binding_text"))),
        confidence=pl.lit(0),
    )


@check("contract_found")
def contract_found() -> Check:
    """A service the manifest lists whose contract the run does not hold, or whose ensures
    stand under a heading this grader does not read (`## Ensures`, `**Ensures**`): what it
    ensures cannot be known, so nothing of it is graded, and the report says so."""
    missing = pl.col("kind") == MISSING_CONTRACT
    return Check(
        applies=pl.col("kind").is_in([MISSING_CONTRACT, UNREAD_ENSURES]),
        outcome=UNDECIDED,
        detail=pl.when(missing)
        .then(pl.format("the run holds no contract of `{}` ({} is not in it): its ensures "
                        "clauses cannot be graded", pl.col("service"), pl.col("description")))
        .otherwise(pl.format("`{}` states its ensures under “{}”, a heading this grader does "
                             "not read: they cannot be graded", pl.col("service"),
                             pl.col("description"))),
        evidence=pl.when(pl.col("service_outputs").list.len() > 0)
        .then(pl.format("`{}` published {}, graded against nothing", pl.col("service"),
                        pl.col("service_outputs").list.join(", ")))
        .otherwise(pl.format("`{}` published nothing", pl.col("service"))),
        confidence=pl.lit(0),
        recommendation=pl.when(missing).then(pl.format(
            "keep {} in the run: the wiring phase copies each service's contract there, and "
            "without it what `{}` ensures is unknown", pl.col("description"), pl.col("service")))
        .otherwise(pl.format("write the ensures of `{}` under a `### Ensures` heading (or an "
                             "`ensures:` block), as contracts do, so that they are graded",
                             pl.col("service"))),
    )


@check("output_named")
def output_named() -> Check:
    """A primary clause that names no output cannot be located; the question stays open."""
    return Check(
        applies=PRIMARY & pl.col("output_name").is_null(),
        outcome=UNDECIDED,
        detail=pl.format("which published output establishes: {}", quoted(pl.col("text"))),
        evidence=pl.lit("the clause names no output file"),
        confidence=pl.lit(0),
        recommendation=pl.format("name the output this clause is about, e.g. "
                                 "\"- `output-name`: {}\"", pl.col("text")),
    )


@check("degraded_path")
def degraded_path() -> Check:
    """Primary ensures of a service graded on its degraded path are recorded, not judged."""
    return Check(
        applies=pl.col("on_degraded_path"),
        outcome=UNDECIDED,
        detail=pl.when(pl.col("errored")).then(pl.format(
            "not held against `{}`: it errored with declared error '{}' and is graded on its "
            "degraded path", pl.col("service"), ERROR))
        .otherwise(pl.format(
            "not held against `{}`: the log marks it {} and {} met a condition of its "
            "conditional ensures, so it is graded on that path", pl.col("service"),
            pl.col("log_status"), pl.col("trigger"))),
        evidence=pl.when(pl.col("errored"))
        .then(pl.format("error '{}': {}", ERROR,
                        excerpt(pl.col("error_detail").fill_null(""), 200)))
        .otherwise(pl.format("`{}` {} ({})", pl.col("service"), pl.col("log_status"),
                             pl.col("trigger"))),
        confidence=pl.lit(0),
    )


@check("condition_triggered")
def condition_triggered() -> Check:
    """A conditional whose condition did not occur (or cannot be told) leaves its path untested."""
    return Check(
        applies=(pl.col("kind") == "conditional") & ~pl.col("triggered").fill_null(False),
        outcome=UNDECIDED,
        detail=pl.when(pl.col("triggered").is_null())
        .then(pl.format("branch condition {} cannot be told from the run log: untested",
                        quoted(pl.col("condition"))))
        .otherwise(pl.format("condition {} did not occur in this run: degraded path untested",
                             quoted(pl.col("condition")))),
        evidence=pl.when(pl.col("errored"))
        .then(pl.format("the service errored with '{}', which this condition does not name",
                        ERROR))
        .otherwise(pl.format("`{}` did not error (log: {})", pl.col("service"),
                             pl.col("log_status"))),
        confidence=pl.lit(0),
        recommendation=pl.format(
            "untested conditional path: add a run (or fixture) in which {} occurs, to exercise "
            "{}", quoted(pl.col("condition")), quoted(pl.col("description"))),
    )


@check("degraded_output_provided")
def degraded_output_provided() -> Check:
    """When the condition occurred, the service must still publish its degraded output: the
    output its degraded text names, or else any non-empty binding."""
    named = pl.col("output_scope") == "named"
    outputs = pl.col("service_outputs")
    provided = pl.when(named).then(pl.col("has_output")).otherwise(outputs.list.len() > 0)
    return Check(
        precondition=True,
        applies=(pl.col("kind") == "conditional") & pl.col("triggered").fill_null(False),
        outcome=pl.when(provided).then(PASSED).otherwise(FAILED),
        detail=pl.format("after {}, `{}` provides {}", pl.col("trigger"),
                         pl.col("service"), quoted(pl.col("description"))),
        evidence=pl.when(named & provided)
        .then(pl.format("published `{}`: {}", pl.col("target_output"),
                        quoted(excerpt(pl.col("binding_text")))))
        .when(named)
        .then(pl.format("no non-empty `{}` was published after {}",
                        pl.col("target_output"), pl.col("trigger")))
        .when(provided)
        .then(pl.format("published: {}", outputs.list.join(", ")))
        .otherwise(pl.format("`{}` published no non-empty binding after {}",
                             pl.col("service"), pl.col("trigger"))),
        confidence=pl.when(provided).then(pl.when(named).then(90).otherwise(70)).otherwise(90),
    )


@check("error_declared")
def error_declared() -> Check:
    """The error a service signalled must be one it declared (an error the log records
    without a name cannot be told either way)."""
    return Check(
        precondition=True,
        applies=(pl.col("kind") == "conditional") & pl.col("triggered").fill_null(False)
        & pl.col("error_name").is_not_null(),
        outcome=pl.when(pl.col("error_declared")).then(PASSED).otherwise(FAILED),
        detail=pl.format("error '{}' is one of `{}`'s declared errors", ERROR,
                         pl.col("service")),
        evidence=pl.format("declared: {}", pl.col("declared_errors").list.join(", ")),
        confidence=pl.lit(95),
    )


def contract_checks() -> list[Check]:
    """Existence and error-path checks, in the order the built-in grader runs them."""
    return [
        output_published(), optional_output(), output_read_whole(), contract_found(),
        output_named(),
        degraded_path(), condition_triggered(), degraded_output_provided(), error_declared(),
    ]
