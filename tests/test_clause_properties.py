"""Property tests: reading and grading clauses never raise, whatever the clause says.

Clauses are built from the phrases the readers look for (counts, units, joiners, quotes,
negations, formats, value types, field names) in any order, with sub-items, many clauses to a
batch as in a real one: one clause the readers or checks trip on would refuse every run
holding it. Outputs mix the shapes the checks measure (JSON, tables, lists, numbers, dates).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import polars as pl
from check_runs import grade_folder, run_id, write_service_run
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipeline.checks.clause_analysis import clause_requirements
from pipeline.tables import VERDICTS

# Each example is a fresh reading of its clauses, which compiles the readers' patterns again
# (about a second before the first clause is read): few examples, each a small batch (where a
# reader may find nothing at all) or a larger one (many clauses for one compiling).
FAST = settings(max_examples=int(os.environ.get("HYPOTHESIS_EXAMPLES", 6)), deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

PHRASES = [
    "a", "an", "the", "one", "two", "three", "a single", "5", "12", "2,000", "0", "-1", "1.5",
    "5, 7 and 5", "2-3", "2 to 4", "between 2 and 4", "3+", "at most", "at least", "under",
    "over", "more than", "fewer than", "no more than", "up to", "exactly", "top", "or more",
    "or fewer", "or less", "does not exceed", "never more than", "not shorter than",
    "words", "word", "lines", "one-line", "200-word", "sentences", "paragraphs", "syllables",
    "items", "columns", "two-column", "sources", "URLs", "characters", "days", "decimals",
    "each", "each with a source URL", "per", "one per line", "for each", "and a", "and",
    "then", "then the", "followed by", "followed by an", "with a", "with an", "plus", "or",
    "summary", "title", "table", "list", "bullet points", "numbered list", "JSON", "JSON array",
    "a JSON object with fields:", "CSV", "comma-separated", "YAML", "markdown", "fenced code",
    "not", "never", "without", "no", "rather than", "not JSON", "must not be", "starts with",
    "begins with either", "ends with", "one of", "containing", "stating", "never mentions",
    '"none"', '"low", "medium" or "high"', "“Draft”", "`status`", "`score` (0-100)",
    "'quoted'", "an integer", "a number", "a URL", "a date", "an ISO 8601 date", "YYYY-MM-DD",
    "a boolean", "in French", "concise", "well-sourced", "a good report", "exactly the keys",
    "no other columns", "only these fields:", "a `Total` row", "rounded to 2 decimals",
    "H2 sections", 'sections "Features", "Fixes" and "Known issues"', "a single fenced",
    "the columns Name, Role and Email", "`score` between 0 and 1", "then up to 3",
    "under 5 words each", "one line each", "a UUID", "an email address",
    "a JSON object with a `findings` array of objects", '"## Summary"',
    'whose `status` is "ok"', "at least one of", "field", "field of", "array of", "whose",
    "with a `name`", "has", "is", "a positive number", "a negative integer", "non-positive",
    "greater than", "less than", "below", "above", "≥", "<", "`count` (a positive integer)",
    "a `count` field (under 30)", "a `score` key (0-100)", "at least 3 and at most 5",
    'signed "— Team"', "from: gold, silver, bronze", 'mentions both "x" and "y"', "set to",
    "non-empty", "unique", "in that order", "hyphenated", "subject of", "whose `n` is above",
    "Next steps", ",",
    ";", ":", "(",
    ")", "—", "-", ".", "e.g.", "such as", "if", "or the single line", "```", "\n",
]
FIELDS = ["`summary`", "`score`", "`status`", "`retrieved`", "`items`", "name", "Summary", ""]


def _text(parts: list[str]) -> str:
    return " ".join(parts).strip()


clause_texts = st.lists(st.sampled_from(PHRASES), min_size=1, max_size=14).map(_text)
sub_items = st.lists(
    st.tuples(st.sampled_from(FIELDS), st.lists(st.sampled_from(PHRASES), max_size=8)).map(
        lambda fp: (f"{fp[0]}: " if fp[0] else "") + _text(fp[1])),
    max_size=3)


def small_or_large(items: st.SearchStrategy) -> st.SearchStrategy:
    """Lists of `items`: 1-6 of them, or 15-40 (drawn as often)."""
    return st.lists(items, min_size=1, max_size=6) | st.lists(items, min_size=15, max_size=40)


clauses = small_or_large(st.tuples(clause_texts, sub_items))


@FAST
@given(clauses)
def test_reading_clauses_never_raises(rows):
    frame = pl.DataFrame({"description": [d for d, _ in rows], "details": [s for _, s in rows]},
                         schema={"description": pl.String, "details": pl.List(pl.String)})
    out = clause_requirements(frame)
    assert out.height == frame.height
    assert out["description"].to_list() == frame["description"].to_list()
    for column in ("quantities", "literals", "enums", "fields", "ranges", "field_lengths",
                   "field_types", "formats", "excluded_formats"):
        assert out[column].null_count() == 0, column
    bounds = out.select(pl.col("quantities").explode().struct.unnest()).drop_nulls("measure")
    assert bounds.filter(pl.col("min") > pl.col("max")).is_empty()


OUTPUT_PARTS = [
    "", "hello there", "42", "7.5", "1,024", "true", "2026-11-30", "30 Nov 2026",
    "https://a.example/x", "- one\n- two\n- three", "1. first\n2. second",
    "| a | b |\n|---|---|\n| 1 | 2 |", '{"summary": "one two three", "score": 190}',
    '[{"status": "ok", "retrieved": "yesterday"}]', "```json\n{\"a\": 1}\n```", "a,b,c\n1,2,3",
    "# Summary\n\nOne. Two.", "none", "Draft", "TL;DR: fine.", "api_key=sk-123456789012345678",
]
outputs = st.lists(st.sampled_from(OUTPUT_PARTS), min_size=1, max_size=3).map("\n\n".join)


@FAST
@given(small_or_large(st.tuples(clause_texts, sub_items, outputs)))
def test_grading_any_clause_gives_one_verdict(cases):
    with tempfile.TemporaryDirectory(prefix="clause-props-") as tmp:
        root = Path(tmp)
        for n, (clause, subs, output) in enumerate(cases):
            lines = "".join(f"\n  - {sub}" for sub in subs)
            clause = clause.replace("\n", " ")
            write_service_run(root, run_id(n), ensures=f"- `out`: {clause}{lines}",
                              outputs={"out.md": output})
        tables, _ = grade_folder(root)
    assert tables["refusals"].is_empty(), tables["refusals"].rows()
    verdicts = tables["clause_verdicts"]
    primary = verdicts.filter(pl.col("clause_id").is_in(
        tables["clauses"].filter(pl.col("kind") == "ensures")["clause_id"].implode()))
    assert primary.group_by("run_id").len()["len"].to_list() == [1] * len(cases)
    assert set(verdicts["verdict"]) <= set(VERDICTS)
