"""From the checks table to judgment requests, and from answers back to the checks table.

A row is asked about when its check is `judgeable`, it is still `undecided`, and its clause
has a published, non-empty output. Requests are keyed by content: `clause_sha256` hashes the
clause text with the question asked about it, `output_sha256` the output excerpt the judge
is shown. Rows with equal keys share one request (and one answer).
"""

from __future__ import annotations

import hashlib

import polars as pl

from ..checks.grader import EVIDENCE_CAP
from ..tables import conform

OUTPUT_CHARS = 8000  # of an output shown to the judge; the rest is cut and said to be
JUDGMENT_PREFIX = r"^requires judgment:\s*"


def _sha256(expr: pl.Expr) -> pl.Expr:
    return expr.map_elements(lambda s: hashlib.sha256(s.encode("utf-8")).hexdigest(),
                             return_dtype=pl.String, skip_nulls=True)


def judgment_requests(checks: pl.DataFrame, clauses: pl.DataFrame,
                      runs: pl.DataFrame | None = None) -> pl.DataFrame:
    """One row per checks row to ask: `_row` (its index in `checks`), `id`, the two hashes
    and the request fields. Empty when nothing is judgeable."""
    context = clauses.select(
        "run_uri", "service", "clause_id", pl.col("text").alias("clause"), "output_name",
        pl.col("binding_text").alias("_text"),
        pl.col("binding_truncated").fill_null(False).alias("_cut"),
    )
    rows = (
        checks.with_row_index("_row")
        .filter(pl.col("judgeable").fill_null(False) & (pl.col("outcome") == "undecided"))
        .join(context, on=["run_uri", "service", "clause_id"], how="inner")
        .filter(pl.col("_text").str.strip_chars().str.len_chars() > 0)
    )
    if runs is not None and "program" in runs.columns:
        rows = rows.join(runs.select("run_uri", "program").unique("run_uri"), on="run_uri",
                         how="left")
    else:
        rows = rows.with_columns(pl.lit(None, pl.String).alias("program"))
    rows = rows.with_columns(
        pl.col("detail").str.replace(JUDGMENT_PREFIX, "").alias("question"),
        pl.col("_text").str.slice(0, OUTPUT_CHARS).alias("output"),
        (pl.col("_cut") | (pl.col("_text").str.len_chars() > OUTPUT_CHARS))
        .alias("output_truncated"),
    ).with_columns(
        # length-prefixed, so no two (clause, question) pairs hash the same text
        _sha256(pl.format("{}:{}\n{}", pl.col("clause").str.len_bytes(), "clause",
                          "question")).alias("clause_sha256"),
        _sha256(pl.col("output")).alias("output_sha256"),
    )
    return rows.with_columns(
        _sha256(pl.concat_str("clause_sha256", "output_sha256", separator=":"))
        .str.slice(0, 24).alias("id"),
    ).select("_row", "id", "clause_sha256", "output_sha256", "program", "service", "clause",
             "question", "output_name", "output", "output_truncated")


def _normalised(expr: pl.Expr) -> pl.Expr:
    """Text compared loosely for quotes: case, quote marks, markdown marks and spacing."""
    return (expr.str.to_lowercase().str.replace_all(r"[“”„]", '"').str.replace_all(r"[‘’]", "'")
            .str.replace_all(r"[*_`#>]", "").str.replace_all(r"\s+", " ").str.strip_chars())


def quotes_found(results: pl.DataFrame) -> pl.DataFrame:
    """Per answer `id`: whether every piece of its evidence (pieces joined by … or ...) occurs
    in the output it was given; null when the evidence quotes nothing."""
    pieces = (
        results.select("id", "output", pl.col("evidence").fill_null("")
                       .str.replace_all(r"\.\.\.", "…").str.split("…").alias("piece"))
        .explode("piece")
        .with_columns(_normalised(pl.col("piece")).str.strip_chars("\"' ").alias("piece"))
        .filter(pl.col("piece").str.len_chars() > 0)
    )
    return pieces.with_columns(
        _normalised(pl.col("output")).str.contains(pl.col("piece"), literal=True).alias("hit")
    ).group_by("id").agg(pl.col("hit").all().alias("quote_found"))


def settled_checks(checks: pl.DataFrame, requests: pl.DataFrame, results: pl.DataFrame,
                   judge_id: str) -> pl.DataFrame:
    """`checks` with the asked rows filled from `results` (one row per request id: status
    answered | cached | failed | over_budget, outcome, confidence, evidence, rationale,
    reason). Unanswered rows stay undecided and say why in `detail`."""
    outputs = requests.select("id", "output").unique("id")
    results = results.join(outputs, on="id", how="left")
    results = results.join(quotes_found(results), on="id", how="left")
    answered = pl.col("status").is_in(["answered", "cached"])
    decided = answered & pl.col("outcome").is_in(["passed", "failed"])
    # a passed answer must quote the output; a failed one may state an absence instead, and
    # an undecided one's words not in the output are stated too, not shown as a quote (SPEC:
    # evidence is quoted output text or a stated absence)
    absence = pl.col("outcome").is_in(["failed", "undecided"]) & (
        pl.col("quote_found") == False)  # noqa: E712
    unquoted = decided & (pl.col("outcome") == "passed") & (
        pl.col("quote_found").is_null() | (pl.col("quote_found") == False))  # noqa: E712
    # a pass it does not show in the output is not taken: the question stays open, as it was
    # before the judge answered (a pass capped at 49 confidence made a clause its checks had
    # satisfied not_evaluable, and a run violated, for a judge that said "passed")
    quote_note = (
        pl.when(~unquoted).then(pl.lit(""))
        .when(pl.col("quote_found").is_null()).then(
            pl.lit(" (it answered passed but quoted nothing from the output: the question "
                   "stays open)"))
        .otherwise(pl.lit(" (it answered passed but its quote is not in the output: the "
                          "question stays open)"))
    )
    judge = pl.lit(judge_id)
    updates = requests.select("_row", "id").join(results, on="id", how="left").select(
        "_row",
        pl.when(unquoted).then(pl.lit("undecided"))
        .when(answered).then(pl.col("outcome")).alias("_outcome"),
        pl.when(unquoted).then(pl.lit(0))
        .when(answered).then(pl.col("confidence")).alias("_confidence"),
        pl.when(answered & (pl.col("evidence").fill_null("").str.len_chars() > 0))
        .then(pl.when(absence).then(pl.col("evidence"))  # (stated, not quoted)
              .otherwise(pl.concat_str(pl.lit("“"), pl.col("evidence"), pl.lit("”"))))
        .alias("_evidence"),
        pl.when(answered).then(pl.concat_str(
            pl.lit(" · judge "), judge,
            pl.when(pl.col("rationale").fill_null("") != "")
            .then(pl.concat_str(pl.lit(": "), pl.col("rationale"))).otherwise(pl.lit("")),
            quote_note))
        .when(pl.col("status") == "over_budget")
        .then(pl.concat_str(pl.lit(" · judge "), judge, pl.lit(" not asked: "),
                            pl.col("reason")))
        .otherwise(pl.concat_str(pl.lit(" · judge "), judge, pl.lit(" gave no answer: "),
                                 pl.col("reason").fill_null("no answer")))
        .alias("_note"),
        pl.when(answered).then(judge).alias("_judge_id"),
    )
    out = (
        checks.with_row_index("_row").join(updates, on="_row", how="left")
        .with_columns(
            pl.coalesce("_outcome", "outcome").alias("outcome"),
            pl.coalesce("_confidence", "confidence").alias("confidence"),
            pl.coalesce("_evidence", "evidence").str.slice(0, EVIDENCE_CAP).alias("evidence"),
            pl.concat_str("detail", pl.col("_note").fill_null("")).alias("detail"),
            pl.coalesce("_judge_id", "judge_id").alias("judge_id"),
        )
        .sort("_row")
    )
    return conform("checks", out)
