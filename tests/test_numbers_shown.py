"""Scores as the commands show them: rounded once, half up, at the decimals shown, and a
bound short of zero never written as a signed zero."""

from __future__ import annotations

import json

import pytest
from check_runs import run_id, write_service_run
from typer.testing import CliRunner

from pipeline.cli import app
from pipeline.numbers import rounded, shown


@pytest.mark.parametrize(("value", "places", "expected"), [
    (3.125, 2, 3.13), (6.25, 1, 6.3), (46.15, 1, 46.2), (53.846153846, 1, 53.8),
    (-0.05, 1, -0.1), (2.675, 2, 2.68), (100.0, 1, 100.0), (-0.04, 1, 0.0),
])
def test_a_value_is_rounded_half_up_as_written(value, places, expected):
    # (Python's round takes the even neighbour of the binary value: 3.12, 6.2, 46.1, 2.67)
    assert rounded(value, places) == expected


@pytest.mark.parametrize(("value", "places", "signed", "expected"), [
    (-0.0398, 1, True, "0.0"), (-0.0398, 2, True, "-0.04"), (0.3, 1, True, "+0.3"),
    (6.25, 1, False, "6.3"), (-0.04, 1, False, "0.0"),
])
def test_a_value_is_shown_without_a_signed_zero(value, places, signed, expected):
    assert shown(value, places, signed) == expected


@pytest.mark.parametrize(("query", "expected"), [
    # a value Decimal cannot quantize at 2 decimals: `rungrade sql` failed with a traceback
    ("select 1.0/0 as x", "inf"),
    ("select 1e30::double as x", "1000000000000000019884624838656.00"),
    ("select 'nan'::double as x", "nan"), ("select 2.675::double as x", "2.68"),
])
def test_sql_shows_any_double(tmp_path, query, expected):
    write_service_run(tmp_path / "runs", run_id(1), ensures="- `o`: exactly one sentence",
                      outputs={"o.md": "Done."})
    runner = CliRunner()
    assert runner.invoke(app, ["grade", str(tmp_path / "runs"), "--out",
                               str(tmp_path / "results")]).exit_code == 0
    said = runner.invoke(app, ["sql", str(tmp_path / "results"), query])
    assert said.exit_code == 0, said.output
    assert said.output.split()[-1] == expected


def test_the_summary_shows_the_mean_rounded_once(tmp_path):
    # 7 of 13 clauses satisfied: 53.846…; rounded to 53.85 for the JSON, then to one decimal
    # again, the summary said 53.9
    ensures = "\n".join(f"- `o{i}`: exactly one sentence" for i in range(13))
    write_service_run(tmp_path / "runs", run_id(1), ensures=ensures,
                      outputs={f"o{i}.md": "Done." for i in range(7)})
    runner = CliRunner()
    said = runner.invoke(app, ["grade", str(tmp_path / "runs"), "--out", str(tmp_path / "a")])
    assert said.exit_code == 0, said.output
    assert "mean overall score  53.8 " in said.output.replace("\n", " ")
    data = runner.invoke(app, ["grade", str(tmp_path / "runs"), "--out", str(tmp_path / "b"),
                               "--json"])
    assert json.loads(data.output)["mean_overall_score"] == 53.85
