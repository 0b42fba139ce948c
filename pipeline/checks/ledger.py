"""Ledger graders: code-first checks over the responses a moltzap ledger selected (SPEC 4).

A ledger grader names the scenario it grades, the endpoint and the target agent whose
responses count, how many responses it expects, and an ordered, non-empty list of checks.
A check is two polars expressions over the evidence frame (one row per ledger, built from
the `bindings` rows the ledger reader wrote for its selected responses), so a grader runs as
one `select` per check over every ledger of its scenario at once; nothing loops per ledger.

Evidence frame columns (what a check may read):
  responses          number of selected responses
  empty_responses    1-based positions of responses whose text is empty after trimming
  final_text         text of the final response: its text parts joined by newlines
  final_parts        number of parts of the final response
  final_kinds        part types of the final response, in order (list of str)
  final_single_text  text of the final response's only part when that part is text, else null
  final_words        words in final_text (maximal runs of non-whitespace; unicode whitespace)
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import polars as pl

from ..tables import collect, conform, empty
from .contract import excerpt, quoted
from .grader import EVIDENCE_CAP, GraderError, refuse_unknown_outcomes, settled, validate_grader_id

LEDGER_CLAUSE_KIND = "ledger_check"
LEDGER_SERVICE_KIND = "target"
PASSED, FAILED, UNDECIDED = pl.lit("passed"), pl.lit("failed"), pl.lit("undecided")
PARTS = pl.List(pl.Struct({"type": pl.String, "text": pl.String}))
# A word character for boundaries, as the reference detectors use it: letters, digits, '_'.
WORD_CLASS = r"[\p{L}\p{N}_]"


@dataclass(frozen=True)
class LedgerCheck:
    """One check of a ledger grader: its vocabulary word, name, property and expressions."""

    kind: str
    name: str
    detail: str
    outcome: pl.Expr
    evidence: pl.Expr


def _name(name: str | None, default: str) -> str:
    name = default if name is None else name
    if not isinstance(name, str) or not name.strip():
        raise GraderError("a ledger check needs a non-empty name")
    return name


def valid_messages(name: str | None = None) -> LedgerCheck:
    """Passed when every selected response carries non-empty text; failed otherwise."""
    empties = pl.col("empty_responses")
    ok = (pl.col("responses") > 0) & (empties.list.len() == 0)
    return LedgerCheck(
        kind="valid_messages",
        name=_name(name, "non-empty messages"),
        detail="every selected response carries non-empty text",
        outcome=pl.when(ok).then(PASSED).otherwise(FAILED),
        evidence=pl.when(ok)
        .then(pl.format("{} selected response(s), each with text", pl.col("responses")))
        .otherwise(pl.format(
            "response(s) {} of {} carry no text (final response parts: {})",
            empties.list.eval(pl.element().cast(pl.String)).list.join(", "),
            pl.col("responses"), pl.col("final_kinds").list.join(", "))),
    )


def at_most_words(limit: int, name: str | None = None) -> LedgerCheck:
    """Passed when the final response has at most `limit` words; failed otherwise."""
    if not isinstance(limit, int) or isinstance(limit, bool) or limit < 0:
        raise GraderError(f"at_most_words needs a whole number of words >= 0, not {limit!r}")
    words = pl.col("final_words")
    return LedgerCheck(
        kind="at_most_words",
        name=_name(name, f"at most {limit} words"),
        detail=f"the final response has no more than {limit} words",
        outcome=pl.when(words <= limit).then(PASSED).otherwise(FAILED),
        evidence=pl.format("the final response has {} word(s): {}", words,
                           quoted(excerpt(pl.col("final_text")))),
    )


def exact_final_text(expected: str, name: str | None = None) -> LedgerCheck:
    """Passed when the final response is one text part whose trimmed text is `expected`."""
    if not isinstance(expected, str) or not expected.strip():
        raise GraderError("exact_final_text needs a non-empty expected text")
    single = pl.col("final_single_text")
    ok = (single.str.strip_chars() == pl.lit(expected)).fill_null(False)
    return LedgerCheck(
        kind="exact_final_text",
        name=_name(name, f"exactly {expected}"),
        detail=f"the final response is exactly one text part reading “{expected}” (trimmed, "
               "case-sensitive)",
        outcome=pl.when(ok).then(PASSED).otherwise(FAILED),
        evidence=pl.when(pl.col("final_parts") != 1)
        .then(pl.format("the final response has {} parts ({})", pl.col("final_parts"),
                        pl.col("final_kinds").list.join(", ")))
        .when(single.is_null())
        .then(pl.format("the final response's only part is a {} part",
                        pl.col("final_kinds").list.first()))
        .otherwise(quoted(excerpt(single))),
    )


_LOOKBEHIND = re.compile(r"\(\?<!(\[(?:\\.|[^\]\\])*\])\)")
_LOOKAHEAD = re.compile(r"\(\?!(\[(?:\\.|[^\]\\])*\])\)")
_CAPTURE = re.compile(r"(?<!\\)\((?!\?)")  # an unescaped '(' that opens a capturing group
_FLAGS = re.compile(r"\(\?[a-zA-Z]+\)")  # inline flags opening a pattern, e.g. (?i)
_LOOKAROUND = ("(?<!", "(?!", "(?<=", "(?=")


def _negate(char_class: str) -> str:
    return "[" + char_class[2:] if char_class.startswith("[^") else "[^" + char_class[1:]


def _scan(pattern: str) -> tuple[list[str], bool]:
    """The top-level alternatives of `pattern` (split at each `|` outside groups, classes and
    escapes), and whether a lookaround group opens anywhere in it."""
    parts, start, depth, in_class, lookaround, i = [], 0, 0, 0, False, 0
    while i < len(pattern):
        char = pattern[i]
        if char == "\\":
            i += 2
            continue
        if in_class:
            in_class += (char == "[") - (char == "]")
        elif char == "[":  # a class: its '|' and '(' are literal, and so is a leading ']'
            in_class, i = 1, i + 1 + pattern.startswith("^", i + 1)
            i += pattern.startswith("]", i)
            continue
        elif char == "(":
            depth += 1
            lookaround |= pattern.startswith(_LOOKAROUND, i)
        elif char == ")":
            depth -= 1
        elif char == "|" and depth == 0:
            parts.append(pattern[start:i])
            start = i + 1
        i += 1
    return [*parts, pattern[start:]], lookaround


def _bounds(alternative: str) -> tuple[str | None, str, str | None]:
    """(class before, middle, class after) of one alternative: the negative lookbehind it
    opens with and the negative lookahead it closes with, each around one character class
    (None where it has none). GraderError when lookaround stands anywhere else."""
    behind = _LOOKBEHIND.match(alternative)
    middle = alternative[behind.end():] if behind else alternative
    ahead = ([None, *_LOOKAHEAD.finditer(middle)])[-1]
    if ahead is not None and ahead.end() == len(middle):
        middle = middle[:ahead.start()]
    else:
        ahead = None
    if _scan(middle)[1]:
        raise GraderError(
            f"pattern {alternative!r}: lookaround is supported only as the reference boundary, "
            "a negative lookbehind opening the pattern (or one of its '|' alternatives) and a "
            "negative lookahead closing it, each around one character class (for a phrase, "
            "use bounded('refund approved'))")
    return (behind.group(1) if behind else None, middle,
            ahead.group(1) if ahead else None)


def _bounded_by(behind: str | None, middle: str, ahead: str | None) -> str:
    return ((f"(?:^|{_negate(behind)})" if behind else "") + middle
            + (f"(?:{_negate(ahead)}|$)" if ahead else ""))


def portable_pattern(pattern: str) -> str:
    """Rewrite negative lookaround around one character class into plain alternations.

    The regex engine behind polars has no lookaround, so the reference boundary
    `(?<![\\p{L}\\p{N}_])x(?![\\p{L}\\p{N}_])` becomes
    `(?:^|[^\\p{L}\\p{N}_])(x)(?:[^\\p{L}\\p{N}_]|$)`: it matches the same texts, and
    group 1 is what the lookaround form would have matched. Each top-level alternative may
    carry such a boundary (`(?<!C)a(?!C)|(?<!C)b(?!C)|c`); alternatives with the same one are
    rewritten as one (`(?:^|[^C])(a|b)(?:[^C]|$)`). GraderError for lookaround elsewhere, which
    a rewrite consuming a character could not match the same texts with.
    """
    flags = _FLAGS.match(pattern)
    lead, body = (flags.group(0), pattern[flags.end():]) if flags else ("", pattern)
    alternatives, lookaround = _scan(body)
    if not lookaround:
        return pattern
    parts = [_bounds(alternative) for alternative in alternatives]
    if len({(behind, ahead) for behind, _, ahead in parts}) == 1:
        behind, _, ahead = parts[0]
        return lead + _bounded_by(behind, "(" + "|".join(m for _, m, _ in parts) + ")", ahead)
    return lead + "|".join(_bounded_by(behind, f"(?:{middle})", ahead)
                           for behind, middle, ahead in parts)


def bounded(term: str) -> str:
    """A pattern matching `term` only as a whole word, with unicode-aware boundaries; group 1
    is the term as found."""
    return f"(?:^|[^{WORD_CLASS[1:-1]}])({re.escape(term)})(?:[^{WORD_CLASS[1:-1]}]|$)"


def _compiled(pattern: str, case_insensitive: bool) -> str:
    if not isinstance(pattern, str) or not pattern:
        raise GraderError("detects_failure needs a non-empty pattern")
    pattern = portable_pattern(pattern)
    if case_insensitive and not pattern.startswith("(?i)"):
        pattern = "(?i)" + pattern
    try:
        pl.Series([""], dtype=pl.String).str.contains(pattern)
    except pl.exceptions.ComputeError as exc:
        raise GraderError(
            f"pattern {pattern!r} does not compile: {str(exc).splitlines()[0]}. Lookaround is "
            "not supported except around one character class; use "
            "bounded('word') for a whole-word match") from exc
    return pattern


def detects_failure(name: str, detail: str, pattern: str, *,
                    case_insensitive: bool = True) -> LedgerCheck:
    """One-sided detector: failed when `pattern` occurs in the final response, else undecided.

    Never passed: finding nothing does not establish that the property holds.
    """
    regex = _compiled(pattern, case_insensitive)
    found = pl.col("final_text").str.contains(regex)
    match = pl.col("final_text").str.extract(regex, 0)
    if _CAPTURE.search(regex):  # the pattern says which part of its match to quote
        match = pl.coalesce(pl.col("final_text").str.extract(regex, 1), match)
    return LedgerCheck(
        kind="detects_failure",
        name=_name(name, ""),
        detail=_name(detail, ""),
        outcome=pl.when(found).then(FAILED).otherwise(UNDECIDED),
        evidence=pl.when(found)
        .then(pl.format("found {} in the final response", quoted(match.str.strip_chars())))
        .otherwise(pl.lit("the pattern does not occur in the final response; that does not "
                          "establish the property (a paraphrase would not match)")),
    )


def requires_judgment(name: str, detail: str) -> LedgerCheck:
    """Deferred check: always undecided; it carries its semantic question into the report."""
    return LedgerCheck(
        kind="requires_judgment",
        name=_name(name, ""),
        detail=_name(detail, ""),
        outcome=UNDECIDED,
        evidence=pl.format("requires judgment of the final response: {}",
                           quoted(excerpt(pl.col("final_text")))),
    )


@dataclass(frozen=True)
class LedgerGrader:
    """A grader of one moltzap scenario: whose responses count, how many, and the checks."""

    grader_id: str
    scenario_id: str
    endpoint_name: str
    target_name: str
    expected_responses: int
    checks: tuple[LedgerCheck, ...]

    def __init__(self, grader_id: str, scenario_id: str, endpoint_name: str, target_name: str,
                 expected_responses: int, checks: Sequence[LedgerCheck]):
        validate_grader_id(grader_id)
        for field_name, value in (("scenario_id", scenario_id),
                                  ("endpoint_name", endpoint_name),
                                  ("target_name", target_name)):
            if not isinstance(value, str) or not value.strip():
                raise GraderError(f"ledger grader {grader_id}: {field_name} must be a "
                                  "non-empty string")
        if (not isinstance(expected_responses, int) or isinstance(expected_responses, bool)
                or expected_responses < 1):
            raise GraderError(f"ledger grader {grader_id}: expected_responses must be a whole "
                              f"number >= 1, not {expected_responses!r}")
        checks = tuple(checks)
        if not checks:
            raise GraderError(f"ledger grader {grader_id} has no checks: a grader with no "
                              "evidence cannot pass anything; give it at least one check")
        if not all(isinstance(c, LedgerCheck) for c in checks):
            raise GraderError(f"ledger grader {grader_id}: checks must come from the ledger "
                              "vocabulary (valid_messages, at_most_words, exact_final_text, "
                              "detects_failure, requires_judgment)")
        names = [c.name for c in checks]
        if len(set(names)) != len(names):
            raise GraderError(f"ledger grader {grader_id} lists a check name twice: {names}")
        for key, value in (("grader_id", grader_id), ("scenario_id", scenario_id),
                           ("endpoint_name", endpoint_name), ("target_name", target_name),
                           ("expected_responses", expected_responses), ("checks", checks)):
            object.__setattr__(self, key, value)


def ledger_grader_set(graders: Iterable[LedgerGrader],
                      overrides: Iterable[LedgerGrader] = ()) -> tuple[LedgerGrader, ...]:
    """`graders` with each of `overrides` replacing the one for its scenario.

    Refuses (GraderError) two graders for one scenario or one grader id used twice.
    """
    merged: dict[str, LedgerGrader] = {}
    for source in (graders, overrides):
        seen: set[str] = set()
        for grader in source:
            if not isinstance(grader, LedgerGrader):
                raise GraderError(f"{grader!r} is not a LedgerGrader")
            if grader.scenario_id in seen:
                raise GraderError(f"two ledger graders grade scenario {grader.scenario_id!r}; "
                                  "keep one per scenario")
            seen.add(grader.scenario_id)
            merged[grader.scenario_id] = grader
    ids = [g.grader_id for g in merged.values()]
    if len(set(ids)) != len(ids):
        raise GraderError(f"a ledger grader id is used for two scenarios: {sorted(ids)}")
    return tuple(merged.values())


def evidence_frame(responses: pl.DataFrame) -> pl.DataFrame:
    """One row per ledger from its selected responses (bindings named `response-{n}`)."""
    texts = pl.element().filter(pl.element().struct.field("type") == "text")
    per_response = responses.with_columns(
        pl.col("name").str.extract(r"^response-(\d+)$").cast(pl.Int64).alias("order"),
        pl.col("text").str.json_decode(PARTS).alias("parts"),
    ).with_columns(
        pl.col("parts").list.eval(texts.struct.field("text")).list.join("\n")
        .alias("response_text"),
        pl.col("parts").list.eval(pl.element().struct.field("type")).alias("kinds"),
    )
    blank = pl.col("response_text").str.strip_chars().str.len_chars() == 0
    final = pl.col("final_part_list")
    return (
        per_response.sort("run_uri", "order")
        .group_by("run_id", "run_uri", maintain_order=True)
        .agg(
            pl.len().cast(pl.Int64).alias("responses"),
            pl.col("order").filter(blank).alias("empty_responses"),
            pl.col("response_text").last().alias("final_text"),
            pl.col("kinds").last().alias("final_kinds"),
            pl.col("parts").last().alias("final_part_list"),
        )
        .with_columns(
            final.list.len().cast(pl.Int64).alias("final_parts"),
            pl.col("final_text").str.count_matches(r"\S+").cast(pl.Int64).alias("final_words"),
            pl.when((final.list.len() == 1) & (pl.col("final_kinds").list.first() == "text"))
            .then(final.list.first().struct.field("text")).alias("final_single_text"),
        )
        .drop("final_part_list")
    )


def ledger_grader_ids(services: pl.DataFrame) -> pl.DataFrame:
    """(run_uri, grader_id) of every ledger read for grading: its target row names the grader."""
    return services.filter(pl.col("kind") == LEDGER_SERVICE_KIND).select(
        "run_uri", pl.col("contract_source").alias("grader_id")).unique("run_uri")


def run_ledger_checks(graders: Sequence[LedgerGrader], clauses: pl.DataFrame,
                      bindings: pl.DataFrame, services: pl.DataFrame) -> pl.DataFrame:
    """The `checks` rows of every ledger in the tables, each stamped with its grader's id.

    Raises GraderError when a ledger was read for a grader that is not in `graders`.
    """
    assigned = ledger_grader_ids(services)
    if assigned.is_empty():
        return empty("checks")
    by_id = {g.grader_id: g for g in graders}
    missing = sorted(set(assigned["grader_id"].to_list()) - set(by_id))
    if missing:
        raise GraderError(f"ledgers were read for ledger grader(s) {missing}, which grading "
                          "was not given; pass the same ledger graders to both stages")
    evidence = evidence_frame(bindings.join(assigned, on="run_uri", how="semi")).join(
        assigned, on="run_uri").lazy()
    parts = []
    for grader_id in sorted(by_id.keys() & set(assigned["grader_id"].to_list())):
        frame = evidence.filter(pl.col("grader_id") == grader_id)
        for position, c in enumerate(by_id[grader_id].checks):
            parts.append(frame.select(
                "run_uri", "grader_id",
                pl.lit(position, pl.Int64).alias("position"),
                pl.lit(c.kind).alias("check"),
                pl.lit(c.name).alias("_name"),
                settled(c.outcome).alias("outcome"),
                pl.lit(c.detail).alias("detail"),
                c.evidence.str.slice(0, EVIDENCE_CAP).alias("evidence"),
            ))
    checks = refuse_unknown_outcomes(collect(pl.concat(parts, how="vertical_relaxed")),
                                     name="_name").drop("_name").with_columns(
        # code decides exactly what it decides; an undecided check established nothing
        pl.when(pl.col("outcome") == "undecided").then(0).otherwise(100).alias("confidence"),
    )
    keys = clauses.filter(pl.col("kind") == LEDGER_CLAUSE_KIND).select(
        "run_id", "run_uri", "service", "clause_id", "position")
    out = keys.join(checks, on=["run_uri", "position"], how="inner").sort("run_uri", "position")
    return conform("checks", out)


def verdict(outcomes: pl.Expr) -> pl.Expr:
    """The strongest outcome present: failed > undecided > passed (undecided when empty)."""
    return (
        pl.when((outcomes == "failed").any()).then(FAILED)
        .when((outcomes == "undecided").any() | (outcomes.len() == 0)).then(UNDECIDED)
        .otherwise(PASSED)
    )


__all__ = ["LEDGER_CLAUSE_KIND", "LEDGER_SERVICE_KIND", "LedgerCheck", "LedgerGrader",
           "at_most_words", "bounded", "detects_failure", "evidence_frame", "exact_final_text",
           "ledger_grader_ids", "ledger_grader_set", "portable_pattern", "requires_judgment",
           "run_ledger_checks", "valid_messages", "verdict"]
