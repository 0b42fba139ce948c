"""One self-contained HTML page about a results folder: tables and charts, no network at all.

Charts are drawn with altair and rendered to PNG by vl-convert, then embedded as base64
`data:` URIs; the page has no script, no stylesheet link and no external image, so it opens
the same offline, in a mail attachment or from an artifact store.
"""

from __future__ import annotations

import base64
import html
from datetime import UTC, datetime
from pathlib import Path

import duckdb
import polars as pl

from . import analysis, numbers
from .tables import VERDICTS

CHART_WIDTH = 560
STYLE = """
body { font-family: system-ui, sans-serif; margin: 2rem auto; max-width: 1000px; color: #222; }
h1 { font-size: 1.5rem; } h2 { font-size: 1.2rem; margin-top: 2.2rem; }
table { border-collapse: collapse; margin: .6rem 0 1.2rem; font-size: .85rem; }
th, td { border-bottom: 1px solid #ddd; padding: .25rem .6rem; text-align: right; }
th { background: #f4f4f4; } td.text, th.text { text-align: left; }
img { max-width: 100%; } .note { color: #666; font-size: .85rem; }
"""


def _png(chart) -> str:
    """The chart as a `data:image/png;base64,…` URI (rendered locally by vl-convert)."""
    import vl_convert

    png = vl_convert.vegalite_to_png(chart.to_dict(), scale=2)
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")


def _img(chart, alt: str) -> str:
    return f'<img alt="{html.escape(alt)}" src="{_png(chart)}">'


def _cell(value, places: int = 1) -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        return numbers.shown(value, places)
    return str(value)


# columns shown to 2 decimals: a confidence bound of -0.04 is short of zero, which -0.0 hid,
# and a mean delta of 0.02 shown 0.0 sat off the middle of its interval
FINE_COLUMNS = frozenset({"mean_score_delta", "sd_score_delta", "ci95_low", "ci95_high"})


TREND_ROWS = 200  # rows of the trends table on the page: the newest days


def _table(df: pl.DataFrame, limit: int = 200, left_out: str = "more rows") -> str:
    """An HTML table of `df` (first `limit` rows, then how many `left_out`); text columns are
    left-aligned."""
    text_cols = {c for c, t in df.schema.items() if t == pl.String}
    head = "".join(f'<th class="{"text" if c in text_cols else ""}">{html.escape(c)}</th>'
                   for c in df.columns)
    places = [2 if c in FINE_COLUMNS else 1 for c in df.columns]
    rows = []
    for row in df.head(limit).iter_rows():
        cells = "".join(
            f'<td class="{"text" if c in text_cols else ""}">{html.escape(_cell(v, n))}</td>'
            for c, v, n in zip(df.columns, row, places, strict=True))
        rows.append(f"<tr>{cells}</tr>")
    more = (f'<p class="note">… {df.height - limit} {left_out}</p>' if df.height > limit
            else "")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>{more}"


def distribution_chart(dist: pl.DataFrame):
    """Grouped bars: graded runs per score bucket, one colour per grader id."""
    import altair as alt

    order = [f"{b}–{b + analysis.SCORE_BUCKET}" for b in range(0, 100, analysis.SCORE_BUCKET)]
    return alt.Chart(dist).mark_bar().encode(
        x=alt.X("score_range:N", sort=order, scale=alt.Scale(domain=order),
                title="overall score"),
        xOffset="grader_id:N",
        y=alt.Y("runs:Q", title="graded runs"),
        color=alt.Color("grader_id:N", title="grader id"),
    ).properties(width=CHART_WIDTH, height=260, title="Score distribution per grader id")


def trend_chart(daily: pl.DataFrame):
    """Mean overall score per day, one line per grader id."""
    import altair as alt

    days = (daily["day"].max() - daily["day"].min()).days + 1 if daily.height else 1
    ticks = {"interval": "day", "step": max(1, days // 8)}  # at most ~8 labels, one per day
    # a line joins consecutive days only: a day without runs breaks it (a straight line
    # across weeks without a run read as a trend nobody measured)
    stretch = (pl.col("day").diff().over("grader_id", order_by="day") != pl.duration(days=1)
               ).fill_null(True).cum_sum().over("grader_id", order_by="day")
    daily = daily.with_columns(stretch.alias("stretch")) if daily.height else daily
    return alt.Chart(daily).mark_line(point=True).encode(
        x=alt.X("day:T", title="day", axis=alt.Axis(format="%Y-%m-%d", tickCount=ticks)),
        y=alt.Y("mean_overall_score:Q", title="mean overall score",
                scale=alt.Scale(domain=[0, 100])),
        color=alt.Color("grader_id:N", title="grader id"),
        detail="stretch:N",
    ).properties(width=CHART_WIDTH, height=260, title="Mean overall score per day")


def flip_chart(matrix: pl.DataFrame, base: str, head: str):
    """Heat map of clause verdicts under `base` (rows) against `head` (columns)."""
    import altair as alt

    order = list(VERDICTS)
    cells = alt.Chart(matrix).encode(
        x=alt.X("to_verdict:N", sort=order, title=f"verdict under {head}"),
        y=alt.Y("from_verdict:N", sort=order, title=f"verdict under {base}"),
    )
    heat = cells.mark_rect().encode(
        color=alt.Color("clauses:Q", scale=alt.Scale(scheme="blues"), title="clauses"))
    labels = cells.mark_text(fontSize=13).encode(
        text="clauses:Q",
        color=alt.condition(alt.datum.clauses > matrix["clauses"].max() / 2,
                            alt.value("white"), alt.value("black")))
    return (heat + labels).properties(width=360, height=300,
                                      title="Clause verdict flips (rows: base, columns: head)")


def build_report(con: duckdb.DuckDBPyConnection, results: str, base: str | None = None,
                 head: str | None = None, endpoint_url: str | None = None) -> str:
    """The report page as one HTML string. Refuses unknown grader ids (ResultsQueryError)."""
    ids = analysis.grader_ids(con)
    parts = [
        "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
        "<title>rungrade report</title>", f"<style>{STYLE}</style></head><body>",
        "<h1>rungrade report</h1>",
        f'<p class="note">results: {html.escape(results)} · generated '
        f"{datetime.now(UTC).isoformat(timespec='seconds')} · grader ids: "
        f"{html.escape(', '.join(ids))}</p>",
        "<h2>Runs per grader id</h2>", _table(analysis.grader_totals(con)),
        "<h2>Recent grades</h2>", _table(analysis.recent_grades(
            _grade_log(con, results, endpoint_url)).reverse()),
    ]
    dist = analysis.score_distribution(con)
    parts.append("<h2>Score distribution</h2>")
    parts.append(_img(distribution_chart(dist), "score distribution per grader id")
                 if not dist.is_empty() else '<p class="note">no graded run has a score</p>')
    daily = analysis.daily_scores(con)
    parts.append("<h2>Trend per grader id</h2>")
    if not daily.is_empty():
        parts.append(_img(trend_chart(daily), "mean overall score per day and grader id"))
    # newest days first: the rows a long history leaves out are the oldest (oldest first, the
    # newest days were cut, and with them the grader ids that sort last)
    trends = analysis.trends(con).sort("day", "grader_id", "program", descending=[True, False,
                                                                                 False],
                                       nulls_last=True, maintain_order=True)
    parts.append(_table(trends, TREND_ROWS, "older rows (all of them: `rungrade trend`)"))

    parts.append("<h2>Grader version diff</h2>")
    # Left to choose, the pair is the newest two ids that graded a run in common: there may be
    # none (one id, or only ledger graders' ids beside it, each grading runs of its own)
    pair = (base, head) if base is not None or head is not None else analysis.newest_pair(
        con, ids)
    if pair is None:
        parts.append(f'<p class="note">{html.escape(analysis.no_pair(con, ids))}</p>')
    else:
        diff = analysis.version_diff(con, *pair)
        parts.append(f"<p>base <b>{html.escape(diff.base)}</b> → head "
                     f"<b>{html.escape(diff.head)}</b></p>")
        parts.append(_table(pl.DataFrame([diff.summary])))
        parts.append(_img(flip_chart(diff.flip_matrix(), diff.base, diff.head),
                          f"verdict flip matrix {diff.base} to {diff.head}"))
        changed = diff.moved
        parts.append("<h2>Runs whose score or verdict moved</h2>")
        parts.append(_table(changed.drop("run_uri")) if not changed.is_empty()
                     else '<p class="note">no run changed its overall score or verdict</p>')
        parts.append("<h2>Flipped clauses</h2>")
        flipped = diff.flipped.select("run_id", "service", "text", "flip")
        parts.append(_table(flipped) if not flipped.is_empty()
                     else '<p class="note">no clause changed its verdict</p>')
    parts.append("</body></html>")
    return "\n".join(parts)


def _grade_log(con: duckdb.DuckDBPyConnection, results: str,
               endpoint_url: str | None) -> pl.DataFrame:
    """The grade log as `rungrade grades` shows it (`catalog.read_grades`: a grade killed
    outright reads `interrupted` once nobody holds the lock); results from before the log
    have none, and the `grades` view is then empty."""
    from .catalog import read_grades

    try:
        return read_grades(results, endpoint_url)
    except FileNotFoundError:
        return con.sql("select * from grades").pl()


def write_report(results: str, out: Path | str, base: str | None = None,
                 head: str | None = None, endpoint_url: str | None = None) -> Path:
    """Write the report of `results` to `out`; return its path."""
    from .catalog import ask

    page = ask(results, lambda con: build_report(con, results, base, head, endpoint_url),
               endpoint_url)
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(page, encoding="utf-8")
    return out
