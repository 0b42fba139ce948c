"""`rungrade report`: one self-contained HTML page whose charts are inline and offline."""

from __future__ import annotations

import base64
import dataclasses
import json
import re
import shutil
from html.parser import HTMLParser
from pathlib import Path

import pytest
from analyst_runs import BASE_ID, HEAD_ID, grade, grade_two_versions, write_sample_runs
from conftest import SAMPLE_RUNS
from typer.testing import CliRunner

from pipeline.cli import app
from pipeline.exit_codes import USAGE
from pipeline.numbers import shown


class Page(HTMLParser):
    """Collects every tag with its attributes, and the visible text."""

    def __init__(self):
        super().__init__()
        self.tags: list[tuple[str, dict]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data):
        self.text.append(data)


def parse(path: Path) -> tuple[str, Page]:
    html = path.read_text(encoding="utf-8")
    page = Page()
    page.feed(html)
    return html, page


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> Path:
    return grade_two_versions(tmp_path_factory.mktemp("report"))["results"]


def test_report_is_one_offline_page_with_its_charts_inline(results, tmp_path):
    out = tmp_path / "sub" / "report.html"
    result = CliRunner().invoke(app, ["report", str(results), "--html", str(out)])
    assert result.exit_code == 0, result.output
    html, page = parse(out)

    # nothing to fetch: no network URL anywhere, no script, no stylesheet link, no CSS url()
    assert "http://" not in html and "https://" not in html
    assert not [t for t, _ in page.tags if t in ("script", "link", "iframe", "object", "embed")]
    assert "url(" not in html and "@import" not in html
    refs = [a[k] for _, a in page.tags for k in ("src", "href", "srcset") if a.get(k)]
    assert refs and all(r.startswith("data:") for r in refs)

    images = [a for t, a in page.tags if t == "img"]
    assert [a["alt"] for a in images] == [
        "score distribution per grader id", "mean overall score per day and grader id",
        f"verdict flip matrix {BASE_ID} to {HEAD_ID}"]
    for img in images:
        prefix, _, data = img["src"].partition(",")
        assert prefix == "data:image/png;base64"
        png = base64.b64decode(data, validate=True)
        assert png.startswith(b"\x89PNG\r\n\x1a\n") and len(png) > 5000

    text = " ".join(page.text)
    assert f"base {BASE_ID} → head {HEAD_ID}" in re.sub(r"\s+", " ", text)
    assert "satisfied→violated" in text
    # the grades that wrote these results, newest first, each finished
    grades = re.search(r"<h2>Recent grades</h2>(.*?)</table>", html, re.S).group(1)
    assert re.findall(r"<th[^>]*>([^<]+)</th>", grades) == [
        "started (UTC)", "status", "grader", "secs", "found", "skip", "graded", "refused",
        "unlisted"]
    rows = re.findall(r"<tr>(.*?)</tr>", grades.split("<tbody>")[1])
    log = [json.loads(p.read_text()) for p in sorted((results / "_grades").glob("*.json"))]
    assert len(rows) == len(log) >= 2
    cells = [re.findall(r"<td[^>]*>([^<]*)</td>", row) for row in rows]
    assert [c[1:5] + c[6:8] for c in cells] == [
        ["finished", r["grader_id"], shown(r["elapsed_s"], 1), str(r["found"]),
         str(r["graded"]), str(r["refused"])] for r in reversed(log)]


def test_report_without_a_file_named_writes_report_html_where_it_runs(results, tmp_path,
                                                                     monkeypatch):
    # `rungrade report RESULTS`, as --help gives the default: it ended in an AttributeError
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, ["report", str(results)])
    assert result.exit_code == 0, result.output
    assert parse(tmp_path / "report.html")[0].startswith("<!DOCTYPE html>")
    empty = tmp_path / "empty"
    empty.mkdir()
    nothing = CliRunner().invoke(app, ["report", str(empty)])
    assert nothing.exit_code == 2 and "no committed results" in nothing.output


def test_report_shows_a_killed_grade_interrupted(results, tmp_path):
    # as `rungrade grades` does: a record left `running` while nobody holds the lock
    from pipeline.store import ResultStore, new_batch_id

    copy = tmp_path / "results"
    shutil.copytree(results, copy)
    log = [json.loads(p.read_text()) for p in sorted((copy / "_grades").glob("*.json"))]
    ResultStore(str(copy)).log_grade({**log[-1], "grade_id": new_batch_id(),
                                      "status": "running", "finished_at": None})
    out = tmp_path / "report.html"
    result = CliRunner().invoke(app, ["report", str(copy), "--html", str(out)])
    assert result.exit_code == 0, result.output
    grades = re.search(r"<h2>Recent grades</h2>(.*?)</table>", parse(out)[0], re.S).group(1)
    statuses = [re.findall(r"<td[^>]*>([^<]*)</td>", row)[1]
                for row in re.findall(r"<tr>(.*?)</tr>", grades.split("<tbody>")[1])]
    assert statuses == ["interrupted"] + ["finished"] * len(log)  # (newest first)


def test_report_flip_matrix_follows_base_and_head(results, tmp_path):
    out = tmp_path / "r.html"
    result = CliRunner().invoke(app, ["report", str(results), "--html", str(out),
                                      "--base", HEAD_ID, "--head", BASE_ID])
    assert result.exit_code == 0, result.output
    _, page = parse(out)
    alts = [a["alt"] for t, a in page.tags if t == "img"]
    assert alts[-1] == f"verdict flip matrix {HEAD_ID} to {BASE_ID}"
    assert "violated→satisfied" in " ".join(page.text)

    bad = CliRunner().invoke(app, ["report", str(results), "--html", str(out),
                                   "--base", "nope.grader/v1"])
    assert bad.exit_code == USAGE and "nope.grader/v1" in bad.output

    # the grader ids after the results, and `-o` for the page, as `rungrade diff` takes them
    again = tmp_path / "again.html"
    given = CliRunner().invoke(app, ["report", str(results), HEAD_ID, BASE_ID, "-o", str(again)])
    assert given.exit_code == 0, given.output
    assert [a["alt"] for t, a in parse(again)[1].tags if t == "img"] == alts


@pytest.mark.parametrize("runs", ["one grader id", "ledgers beside"])
def test_report_of_no_pair_of_grader_ids_says_how_to_compare(tmp_path, runs):
    # "ledgers beside": the repository's sample runs (`make run`), whose ledgers each carry
    # their ledger grader's id: four ids, no two of which graded the same run
    folder = write_sample_runs(tmp_path / "runs") if runs == "one grader id" else SAMPLE_RUNS
    grade(folder, tmp_path / "results", "--grader-id", BASE_ID)
    out = tmp_path / "r.html"
    result = CliRunner().invoke(app, ["report", str(tmp_path / "results"), "--html", str(out)])
    assert result.exit_code == 0, result.output
    html, page = parse(out)
    assert len([t for t, _ in page.tags if t == "img"]) == 2  # no flip matrix without a pair
    assert "grade the same runs again under another grader id" in html
    assert "https://" not in html
    assert ("hold one grader id (" if runs == "one grader id" else
            "), no two of which graded the same run;") in html


def test_runs_whose_score_appears_are_listed_as_moved(tmp_path):
    # a run not_evaluable under one grader (no score) and satisfied under the other moved;
    # the diff counted it among the verdicts changed, listed no run, and the report said
    # "no run changed its overall score"
    import polars as pl
    from run_folders import write_run

    from pipeline.checks import PASSED, Check, Grader
    from pipeline.grade import grade_runs

    runs, results = tmp_path / "runs", tmp_path / "results"
    write_run(runs, "20261112-031502-vague", files={
        "services/researcher.md": "### Ensures\n- `findings`: a good list\n",
        "services/writer.md": "### Ensures\n- `report`: a nice report\n"})
    passes = Check(applies=pl.col("has_output"), outcome=PASSED, detail=pl.lit("published"),
                   evidence=pl.lit(""), confidence=pl.lit(90), name="published")
    never = dataclasses.replace(passes, applies=pl.lit(False))  # every clause not_evaluable
    for grader in (Grader("vague.grader/v1", [never]), Grader("lenient.grader/v1", [passes])):
        grade_runs(str(runs), str(results), grader, workers=1)
    diff = CliRunner().invoke(app, ["diff", str(results)])
    assert diff.exit_code == 0, diff.output
    assert "Runs whose score or verdict moved" in diff.stdout
    assert "20261112-031502-vague" in diff.stdout
    out = tmp_path / "r.html"
    assert CliRunner().invoke(app, ["report", str(results), "-o", str(out)]).exit_code == 0
    html, _ = parse(out)
    assert "no run changed its overall score" not in html
    assert "20261112-031502-vague" in html.split("Runs whose score or verdict moved")[1]


def test_the_trend_chart_joins_consecutive_days_only(tmp_path):
    # a line drawn across months without a run read as a trend nobody measured
    import datetime as dt

    import polars as pl

    from pipeline.html_report import trend_chart

    days = [dt.date(2026, 3, 1), dt.date(2026, 11, 3), dt.date(2026, 11, 4)]
    daily = pl.DataFrame({"grader_id": ["g/v1"] * 3, "day": days,
                          "mean_overall_score": [80.0, 90.0, 91.0]})
    chart = trend_chart(daily).to_dict()
    assert chart["encoding"]["detail"]["field"] == "stretch"
    values = chart["datasets"][next(iter(chart["datasets"]))]
    assert [v["stretch"] for v in values] == [1, 2, 2]


def test_a_trends_table_too_long_for_the_page_leaves_out_its_oldest_days(results, tmp_path,
                                                                           monkeypatch):
    # oldest first, the page cut the newest days, and the grader ids that sort last
    from pipeline import analysis, html_report

    trends = analysis.trends(analysis.open_results(str(results)))
    newest = trends["day"].max()
    monkeypatch.setattr(html_report, "TREND_ROWS", 2)
    out = tmp_path / "report.html"
    assert CliRunner().invoke(app, ["report", str(results), "-o", str(out)]).exit_code == 0
    html, _ = parse(out)
    table = html.split("<h2>Trend per grader id</h2>")[1].split("</table>")[0]
    rows = re.findall(r"<tr>(.*?)</tr>", table.split("<tbody>")[1])
    assert len(rows) == 2
    assert all(f">{newest.isoformat()}<" in row for row in rows)
    assert f"… {trends.height - 2} older rows" in html


def test_the_trend_command_shows_each_ids_newest_days(results, monkeypatch):
    from pipeline import analysis, cli

    trends = analysis.trends(analysis.open_results(str(results)), grader_id=BASE_ID)
    days = sorted(set(trends["day"].to_list()))
    assert len(days) >= 2
    monkeypatch.setattr(cli, "TREND_ROWS", 1)
    result = CliRunner().invoke(app, ["trend", str(results), "--grader-id", BASE_ID])
    assert result.exit_code == 0, result.output
    assert days[-1].isoformat() in result.output and days[0].isoformat() not in result.output
    assert f"… and {trends.height - 1} earlier rows, left out" in result.output
