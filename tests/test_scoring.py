"""The SQL scores on hand-built verdict tables: service score, weighting, verdict and ties."""

from __future__ import annotations

import polars as pl
import pytest

from pipeline.scoring import run_models
from pipeline.tables import frame

GRADER = "test.grader/v1"


def score(services: dict[str, list[str]], outcomes: list[str] | None = None):
    """services: name -> clause verdicts of one run. Returns (service_scores, run_scores)."""
    verdict_rows = [
        {"grader_id": GRADER, "run_id": "r1", "run_uri": "/runs/r1", "service": svc,
         "clause_id": f"{svc}-{i}", "verdict": v, "outcome": "passed", "confidence": 90}
        for svc, verdicts in services.items() for i, v in enumerate(verdicts)
    ]
    check_rows = [{"grader_id": GRADER, "run_id": "r1", "run_uri": "/runs/r1", "service": "s",
                   "clause_id": "c", "check": "x", "outcome": o} for o in (outcomes or [])]
    runs = frame("runs", [{"run_id": "r1", "run_uri": "/runs/r1", "program": "p",
                           "status": "graded"}]).with_columns(pl.lit(GRADER).alias("grader_id"))
    out = run_models({"runs": runs, "clause_verdicts": frame("clause_verdicts", verdict_rows),
                      "checks": frame("checks", check_rows)})
    return out["service_scores"], out["run_scores"].row(0, named=True)


S, P, V, N = "satisfied", "partially_satisfied", "violated", "not_evaluable"


def test_service_score_counts_partial_as_half_and_ignores_not_evaluable():
    services, _ = score({"a": [S, P, V, N]})
    row = services.row(0, named=True)
    assert row["evaluable"] == 3 and row["not_evaluable"] == 1
    assert row["service_score"] == pytest.approx((1 + 0.5) / 3 * 100)
    assert row["passes"] is False


def test_overall_score_is_weighted_by_clause_count():
    _, run = score({"a": [S, S, S, V], "b": [V]})  # 75 over 4 clauses, 0 over 1
    assert run["overall_score"] == pytest.approx((75 * 4 + 0 * 1) / 5)


@pytest.mark.parametrize(
    ("services", "verdict"),
    [
        ({"a": [S], "b": [S, N]}, "satisfied"),  # every scored service passes
        ({"a": [S], "b": [P]}, "partial"),  # 1 of 2 fails: exactly half is not a majority
        ({"a": [S], "b": [V], "c": [V]}, "violated"),  # 2 of 3 fail: a majority
        ({"a": [S], "b": [S], "c": [V]}, "partial"),  # 1 of 3 fails
        ({"a": [S], "b": [S], "c": [V], "d": [V]}, "partial"),  # tie 2 of 4 goes to partial
        ({"a": [N], "b": [N]}, "not_evaluable"),  # nothing could be scored
        ({"a": [N], "b": [V]}, "violated"),  # unscored services neither pass nor fail
    ],
)
def test_overall_verdict_rule_and_ties(services, verdict):
    _, run = score(services)
    assert run["overall_verdict"] == verdict


@pytest.mark.parametrize(
    ("outcomes", "strongest"),
    [(["passed", "undecided", "failed"], "failed"), (["passed", "undecided"], "undecided"),
     (["passed"], "passed"), ([], "undecided")],
)
def test_strongest_outcome_verdict(outcomes, strongest):
    _, run = score({"a": [S]}, outcomes)
    assert run["outcome_verdict"] == strongest
