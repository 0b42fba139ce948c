"""Code-first graders: a grader id and an ordered, non-empty list of checks.

A check is a small named function registered with `@check`. It returns a `Check`: polars
expressions over the clause frame (one row per clause, joined with its output) that say which
rows it judges and, for each, the outcome, the property it had to establish (detail), the
evidence and a confidence. Nothing here loops over rows: a grader runs as a few vectorized
`select`s over all clauses of a batch.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace

import polars as pl

from ..tables import COLUMNS, OUTCOMES, collect, conform, empty
from .frame import JOINED_MARK
from .output_analysis import FACT_FAMILY, FAMILY, TEXT_ID, families_of, output_facts, with_text_ids

GRADER_ID = re.compile(r"^[a-z0-9][a-z0-9_-]*(?:\.[a-z0-9_-]+)*\.grader/v[1-9][0-9]*$")
EVIDENCE_CAP = 2000
# Text shaped like a key, token or password is never copied into evidence (results are read
# widely); it is shown as SECRET_MASK instead.
# The tokens are ASCII, so their word boundaries are ASCII ones (`(?-u:\b)`): a Unicode `\b`
# keeps the regex engine off its fast path on any non-ASCII text, forty times slower.
SECRET_PATTERNS = (
    r"AKIA[0-9A-Z]{16}|-----BEGIN [A-Z ]*PRIVATE KEY-----|(?-u:\b)sk-[A-Za-z0-9_\-]{20,}"
    r"|(?-u:\b)gh[pousr]_[A-Za-z0-9]{30,}|(?-u:\b)xox[baprs]-[A-Za-z0-9\-]{10,}"
    r"|(?-u:\b)AIza[0-9A-Za-z_\-]{35}|(?i:bearer)\s+[A-Za-z0-9._\-]{20,}"
    r"|(?i:password|passwd|pwd|secret|api[_\-]?key|token)\s*[:=]\s*\S{6,}"
)
SECRET_MASK = "[secret masked]"


class GraderError(ValueError):
    """A grader definition that cannot be used (bad id, no checks, unknown check)."""


def settled(outcome: pl.Expr) -> pl.Expr:
    """A check's outcome with null read as `undecided`: a check whose expression gave no
    outcome (a `when` with no `otherwise` over a null column) established nothing."""
    return outcome.fill_null("undecided")


def refuse_unknown_outcomes(checks: pl.DataFrame, name: str = "check") -> pl.DataFrame:
    """`checks` unchanged when every outcome is passed, failed or undecided; else GraderError
    naming the grader, the check (column `name`) and the outcome it gave (its runs are then
    refused)."""
    wrong = checks.filter(~pl.col("outcome").is_in(list(OUTCOMES)))
    if not wrong.is_empty():
        grader_id, check_name, outcome = wrong.select("grader_id", name, "outcome").row(0)
        raise GraderError(
            f"check {check_name!r} of grader {grader_id} gave the outcome {outcome!r}; a "
            f"check's outcome must be one of {', '.join(OUTCOMES)}: fix the check's expression")
    return checks


def validate_grader_id(grader_id: str) -> str:
    if not isinstance(grader_id, str) or not GRADER_ID.match(grader_id):
        raise GraderError(
            f"grader id {grader_id!r} is malformed: expected '<name>.grader/v<integer>', "
            "for example 'prose.contract.grader/v1' (lowercase name, version from 1)"
        )
    return grader_id


@dataclass(frozen=True)
class Check:
    """One check, as expressions over the clause frame. `applies` selects the rows it judges."""

    applies: pl.Expr
    outcome: pl.Expr
    detail: pl.Expr
    evidence: pl.Expr
    confidence: pl.Expr
    # A testable rewrite to suggest when this check leaves its clause undecided.
    recommendation: pl.Expr | None = None
    name: str = ""
    # A list column of the frame: the check then judges one row per element (a clause with
    # three stated counts gets three rows); the element is `pl.col(each)` in the expressions.
    each: str | None = None
    # A precondition establishes there is something to judge (the output exists): when it
    # fails the clause is violated, when it passes it meets none of the clause's requirements.
    precondition: bool = False
    # Its undecided rows carry a judgment question (`detail`) that a judge may settle.
    judgeable: bool = False
    # Output measures are computed only where a check needs them: by default every measure
    # family its expressions read (output_analysis.FAMILIES), on every row it applies to.
    # `needs` narrows a family to the rows (after `each`) where its predicate holds.
    needs: Mapping[str, pl.Expr] = field(default_factory=dict)
    # Named intermediate columns, computed in order on the rows the check judges (after
    # `each`), that its other expressions read with pl.col(name): an expression used many
    # times is then computed once. Names should start with '_'; `applies` cannot read them.
    let: Mapping[str, pl.Expr] = field(default_factory=dict)
    # Of the rows it judges (after `each` and `let`), those where this is false are dropped,
    # as if it did not apply: a check that also reads outputs cut at the read cap keeps of
    # theirs only what their start establishes (see library.failed_on_part_read).
    keep: pl.Expr | None = None


class Lets(dict):
    """A check's `let` columns as they are written: `let("_name", expr)` records the
    expression (in order) and returns `pl.col("_name")` for the check's other expressions."""

    def __call__(self, name: str, expr: pl.Expr) -> pl.Expr:
        self[name] = expr
        return pl.col(name)


CheckFactory = Callable[..., Check]
REGISTRY: dict[str, CheckFactory] = {}


def check(name: str) -> Callable[[CheckFactory], CheckFactory]:
    """Register a check factory under `name`; the factory's result carries that name."""

    def register(factory: CheckFactory) -> CheckFactory:
        def build(*args, **kwargs) -> Check:
            return replace(factory(*args, **kwargs), name=name)

        build.__name__ = factory.__name__
        build.__doc__ = factory.__doc__
        build.check_name = name  # type: ignore[attr-defined]
        REGISTRY[name] = build
        return build

    return register


@dataclass(frozen=True)
class Grader:
    grader_id: str
    checks: tuple[Check, ...]

    def __init__(self, grader_id: str, checks: Sequence[Check]):
        object.__setattr__(self, "grader_id", validate_grader_id(grader_id))
        checks = tuple(checks)
        if not checks:
            raise GraderError(f"grader {grader_id} has no checks: a grader with no evidence "
                              "cannot pass anything; give it at least one check")
        names = [c.name for c in checks]
        if not all(names):
            raise GraderError(f"grader {grader_id} lists a check with no name: make each with "
                              "a factory decorated @check(\"name\") (its rows are known by it)")
        if twice := sorted({name for name in names if names.count(name) > 1}):
            raise GraderError(f"grader {grader_id} lists a check twice: {', '.join(twice)} "
                              "(check names must be unique)")
        object.__setattr__(self, "checks", checks)

    @property
    def preconditions(self) -> tuple[str, ...]:
        """Names of the checks that are preconditions (see Check.precondition)."""
        return tuple(c.name for c in self.checks if c.precondition)

    def with_id(self, grader_id: str) -> Grader:
        return Grader(grader_id, self.checks)


def _rows(lazy: pl.LazyFrame, c: Check) -> pl.LazyFrame:
    """The rows a check judges: one per clause, or one per element of its `each` column."""
    if c.each is None:
        return lazy.filter(c.applies)
    return lazy.filter(pl.col(c.each).list.len() > 0).explode(c.each).filter(c.applies)


def _expressions(c: Check) -> list[pl.Expr]:
    return [e for e in (c.applies, c.outcome, c.detail, c.evidence, c.confidence,
                        c.recommendation, c.keep, *c.needs.values(), *c.let.values())
            if e is not None]


# The position of a row among the rows its check judges (see `_judged`).
EACH_ROW = "_each_row"
# Whether a check keeps a row it judged (its `keep`, see `judged_rows`)
KEEP = "_keep"


def _judged(lazy: pl.LazyFrame, c: Check) -> pl.LazyFrame:
    """The rows a check judges with its `let` columns (before its `keep`: see `judged_rows`).

    The rows of a check with `each` come grouped by element, numbered (`EACH_ROW`) in their
    order before: a regex built from the element (a field name, a literal) is then compiled
    once per element, not once per row. Polars keeps the last 32 patterns of a thread
    compiled; rows that cycle through more of them (a shard of a program whose clauses name
    forty fields) recompiled the pattern on every row, about a millisecond each for a
    Unicode-aware one.
    """
    rows = _rows(lazy, c)
    if c.each is not None:
        rows = rows.with_row_index(EACH_ROW).sort(pl.col(c.each).hash(), maintain_order=True)
    for name, expr in c.let.items():
        rows = rows.with_columns(expr.alias(name))
    return rows


# (expression, its root names, whether it selects columns by pattern or type) by id: a
# grader's expressions are built once, and walking them anew cost a shard about 4 ms. The
# expression is held, so its id cannot be another's while it is here.
_ROOTS: dict[int, tuple[pl.Expr, tuple[str, ...], bool]] = {}


def _roots(e: pl.Expr) -> tuple[tuple[str, ...], bool]:
    found = _ROOTS.get(id(e))
    if found is None or found[0] is not e:
        if len(_ROOTS) > 50_000:  # graders come and go (a test suite, a judge): start afresh
            _ROOTS.clear()
        found = _ROOTS[id(e)] = (e, tuple(e.meta.root_names()), e.meta.has_multiple_outputs())
    return found[1], found[2]


def _columns(exprs: Sequence[pl.Expr]) -> set[str]:
    return {name for e in exprs for name in _roots(e)[0]}


def _narrowed(lazy: pl.LazyFrame, columns: Sequence[str], c: Check, exprs: Sequence[pl.Expr],
              keys: Iterable[str]) -> pl.LazyFrame:
    """The frame narrowed to `keys`, check `c`'s `each` column and the columns `exprs` read.
    Polars carries a step's whole schema through planning (cloned at every step, and the
    measured clause frame has over a hundred columns): a plan over the few a check reads costs
    less to make. Where an expression selects columns by pattern or type (`pl.all()`, a
    selector), every column is kept."""
    if any(_roots(e)[1] for e in exprs):
        return lazy
    read = _columns(exprs) | set(keys) | ({c.each} if c.each is not None else set())
    return lazy.select([name for name in columns if name in read])


def measure(checks: Sequence[Check], frame: pl.DataFrame) -> pl.DataFrame:
    """The clause frame with the output measures `checks` read, computed where they need them.

    Measures a check's `applies` reads are computed for every output first (they decide which
    rows it judges); then each other family on the rows of the checks that read it, narrowed
    by their `needs`. Which rows need which family is found in one query over every check
    (one per check cost a shard of few runs more than the measures). A clause frame that
    already has its measures is returned as it is.
    """
    if "output_text" in frame.columns:
        return frame
    frame = with_text_ids(frame.with_row_index("_mrow"))
    up_front = families_of(_columns([c.applies for c in checks]))
    frame = output_facts(frame, {name: True for name in up_front})
    wanted: list[pl.LazyFrame] = []  # (_mrow, family) of each row a check needs a family on
    for c in checks:
        # the families it reads itself: output_facts adds the ones they are computed after
        families = {FACT_FAMILY[n] for n in _columns(_expressions(c)) if n in FACT_FAMILY}
        families -= up_front
        for name in c.needs:
            if name not in FAMILY:
                raise GraderError(f"check {c.name} needs unknown measure family {name!r}; "
                                  f"families are {', '.join(FAMILY)}")
        measured = sorted(n for n in _columns(list(c.needs.values())) if n in FACT_FAMILY
                          and FACT_FAMILY[n] not in up_front)
        if measured:
            raise GraderError(f"the needs of check {c.name} read the measure(s) "
                              f"{', '.join(measured)}, which are not computed yet when needs "
                              "are read; write needs over the clause's own columns (formats, "
                              "quantities, kind, ...)")
        if not families:
            continue
        rows = _rows(_narrowed(frame.lazy(), frame.columns, c, [c.applies, *c.needs.values()],
                               ["_mrow"]), c)
        wanted.append(
            rows.select("_mrow", *[(c.needs.get(name, pl.lit(True))).alias(name)
                                   for name in sorted(families)])
            .unpivot(index="_mrow", variable_name="family", value_name="hit")
            .filter(pl.col("hit")).select("_mrow", "family"))
    every: dict[str, pl.Series | bool] = {name: False for name in FAMILY}  # unread: typed nulls
    if wanted:
        hits = collect(pl.concat(wanted).group_by("family").agg(pl.col("_mrow").unique()))
        masks = frame.select(pl.col("_mrow").is_in(ids.implode()).alias(name)
                             for name, ids in zip(hits["family"], hits["_mrow"], strict=True))
        every.update({name: masks[name] for name in masks.columns})
    return output_facts(frame, every).drop("_mrow", TEXT_ID)


def _live(checks: Sequence[Check], frame: pl.DataFrame) -> set[int]:
    """The positions of the checks that judge at least one row of `frame`, found in one pass:
    a check with nothing to judge (no clause states a value type, say) is not planned at all,
    which spares its fixed cost in every shard. A check with `each` is live where a clause has
    an element of its column (its `applies` reads the element, so it is not tried here)."""
    if frame.is_empty():
        return set()
    found = frame.select([
        (pl.col(c.each).list.len() > 0 if c.each is not None else c.applies).any().alias(str(i))
        for i, c in enumerate(checks)]).row(0)
    return {i for i, hit in enumerate(found) if hit}


KEYS = ("run_id", "run_uri", "service", "clause_id")


def judged_rows(measured: pl.DataFrame, c: Check, order: int = 0) -> pl.LazyFrame:
    """The query of check `c` (at position `order` in its grader) over a measured clause frame:
    one row per row it judges, with its outcome, detail, evidence, confidence and
    recommendation (evidence not yet masked or cut: see `run_checks`)."""
    rows = _judged(_narrowed(measured.lazy(), measured.columns, c, _expressions(c), KEYS),
                   c).select(
        *KEYS,
        pl.lit(c.name).alias("check"),
        settled(c.outcome).alias("outcome"),
        c.detail.alias("detail"),
        c.evidence.alias("evidence"),
        c.confidence.alias("confidence"),
        (c.recommendation if c.recommendation is not None else pl.lit(None, pl.String))
        .alias("recommendation"),
        pl.lit(c.judgeable).alias("judgeable"),
        pl.lit(order).alias("check_order"),
        (pl.col(EACH_ROW) if c.each is not None else pl.lit(0, pl.UInt32)).alias(EACH_ROW),
        *([] if c.keep is None else [c.keep.alias(KEEP)]),
    )
    # (kept once the few columns of a check's rows are made: a filter before copied every
    # output's text it carried, a third of the count check's time)
    return rows if c.keep is None else rows.filter(pl.col(KEEP)).drop(KEEP)


def finished(rows: pl.LazyFrame) -> pl.LazyFrame:
    """Checks' rows (`judged_rows`) as stored: evidence masked (SECRET_PATTERNS) and cut at
    EVIDENCE_CAP, confidence clipped to 0–100 and rounded, a null confidence 0 (a check whose
    confidence is a `when` without `otherwise` left a satisfied verdict with none, which the
    floor of 50 never met)."""
    evidence = pl.col("evidence")
    # a quote of several outputs joined (OUTPUTS_JOINED) ends where the first does: v21 quoted
    # the end of one file and the start of the next as one text (`around` quotes the output
    # its match is in); found by a plain search, the few such rows cut by a pattern
    joined = pl.when(evidence.str.contains(JOINED_MARK, literal=True)).then(evidence)
    return rows.with_columns(
        pl.coalesce(joined.str.replace_all(r"\s*" + JOINED_MARK + "[^”]*", "…"), evidence)
        .str.replace_all(SECRET_PATTERNS, SECRET_MASK, literal=False)
        .str.slice(0, EVIDENCE_CAP),
        pl.col("confidence").clip(0, 100).round(0).cast(pl.Int64).fill_null(0))


def refuse_unknown_columns(checks: Sequence[Check], columns: Sequence[str]) -> None:
    """GraderError naming the check and the column, and the frame's closest names, when a
    check reads a column the measured clause frame (`columns`) does not have: a misspelt
    measure. Polars named it among the few columns the check's query was narrowed to, and
    every run with a clause was refused `internal-error`."""
    known = {*columns, EACH_ROW}
    for c in checks:
        read = _columns(_expressions(c)) - known - set(c.let) - {c.each}
        if read:
            name = sorted(read)[0]
            close = difflib.get_close_matches(name, sorted(known), n=3)
            raise GraderError(
                f"check {c.name!r} reads column {name!r}, which the clause frame does not "
                f"have" + (f"; did you mean {', '.join(map(repr, close))}?" if close else
                           " (the README's \"Writing your own grader\" lists its columns)"))


def run_checks(grader: Grader, frame: pl.DataFrame) -> pl.DataFrame:
    """Apply every check to the clause frame; one output row per (clause, applicable check).

    `frame` is a clause frame (frame.clause_frame), with or without its output measures; the
    measures the checks read are computed here when it has none.
    """
    measured = measure(grader.checks, frame)
    if not measured.is_empty():  # (said here too where no grade asked first, see grade.py)
        refuse_unknown_columns(grader.checks, measured.columns)
    live = _live(grader.checks, measured)
    if not live:
        return empty("checks")
    parts = [judged_rows(measured, c, order)
             for order, c in enumerate(grader.checks) if order in live]
    # masked, cut and clipped once over every check's rows: one expression, not one a check
    out = collect(finished(pl.concat(parts, how="vertical_relaxed")))
    out = out.sort(["run_uri", "service", "clause_id", "check_order", EACH_ROW],
                   maintain_order=True)
    out = out.drop("check_order", EACH_ROW).with_columns(
        pl.lit(grader.grader_id).alias("grader_id"))
    return conform("checks", refuse_unknown_outcomes(out))


__all__ = ["COLUMNS", "EVIDENCE_CAP", "REGISTRY", "Check", "Grader", "GraderError", "Lets", "check",
           "judged_rows", "measure", "refuse_unknown_outcomes", "run_checks", "settled",
           "validate_grader_id"]
