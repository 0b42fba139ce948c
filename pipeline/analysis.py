"""The questions analysts ask of a results folder: trends, grader-version diffs, distributions.

Each function reads the views of `catalog.py` (the SQL lives in `sql/staging` and `sql/marts`)
and returns polars DataFrames, so the CLI, the HTML report and notebooks give one answer.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date

import duckdb
import polars as pl

from .catalog import connect
from .tables import VERDICTS

# Score buckets of the distribution chart: [0, 10), …, [80, 90), [90, 100].
SCORE_BUCKET = 10


class ResultsQueryError(ValueError):
    """A question the results cannot answer as asked (unknown grader id, bad date, …)."""


def open_results(results: str, endpoint_url: str | None = None) -> duckdb.DuckDBPyConnection:
    """A DuckDB connection with every results view; refuses a folder with no committed batch."""
    return connect(results, endpoint_url)


def grader_ids(con: duckdb.DuckDBPyConnection) -> list[str]:
    """Grader ids with committed results, in the order they first appeared (oldest first)."""
    rows = con.sql("""
        select grader_id, min(batch_id) as first_batch
        from _commits
        group by grader_id
        order by first_batch, grader_id
    """).fetchall()
    return [grader_id for grader_id, _ in rows]


def parse_day(text: str | date | None) -> date | None:
    """`YYYY-MM-DD` as a date; refuses anything else with a message that shows the format."""
    if text is None or isinstance(text, date):
        return text
    try:
        return date.fromisoformat(text)
    except ValueError as exc:
        raise ResultsQueryError(f"{text!r} is not a date; write it as YYYY-MM-DD, "
                                "e.g. 2026-11-03") from exc


def _known(con: duckdb.DuckDBPyConnection, grader_id: str) -> str:
    known = grader_ids(con)
    if grader_id not in known:
        raise ResultsQueryError(f"no results for grader id {grader_id!r}; the results hold: "
                                + ", ".join(known))
    return grader_id


def trends(con: duckdb.DuckDBPyConnection, program: str | None = None,
           since: str | date | None = None, grader_id: str | None = None) -> pl.DataFrame:
    """The `trends` mart (grader id × program × day), optionally narrowed; oldest day first."""
    if grader_id is not None:
        _known(con, grader_id)
    return con.sql("""
        select *
        from trends
        where ($program is null or program = $program)
            and ($since is null or day >= $since)
            and ($grader_id is null or grader_id = $grader_id)
        order by grader_id, program nulls last, day
    """, params={"program": program, "since": parse_day(since), "grader_id": grader_id}).pl()


def daily_scores(con: duckdb.DuckDBPyConnection) -> pl.DataFrame:
    """Per grader id and day over all programs: graded runs and their mean overall score."""
    return con.sql("""
        select
            grader_id,
            run_date as day,
            count(*) as graded,
            avg(overall_score) as mean_overall_score
        from run_days
        where status = 'graded'
        group by grader_id, run_date
        order by grader_id, day
    """).pl()


def score_distribution(con: duckdb.DuckDBPyConnection) -> pl.DataFrame:
    """Graded runs per grader id and score bucket (10 points wide; 100 falls in 90–100)."""
    scores = con.sql("""
        select grader_id, overall_score
        from run_scores
        where overall_score is not null
    """).pl()
    bucket = (pl.col("overall_score") // SCORE_BUCKET * SCORE_BUCKET).clip(
        0, 100 - SCORE_BUCKET).cast(pl.Int64)
    return (
        scores.group_by("grader_id", bucket.alias("bucket")).agg(pl.len().alias("runs"))
        .with_columns(pl.format("{}–{}", pl.col("bucket"), pl.col("bucket") + SCORE_BUCKET)
                      .alias("score_range"))
        .sort("grader_id", "bucket")
    )


def grader_totals(con: duckdb.DuckDBPyConnection) -> pl.DataFrame:
    """One row per grader id: runs found, graded, refused, mean overall score, run verdicts."""
    return con.sql("""
        select
            grader_id,
            count(*) as runs,
            count(*) filter (where status = 'graded') as graded,
            count(*) filter (where status = 'refused') as refused,
            avg(overall_score) as mean_overall_score,
            count(*) filter (where overall_verdict = 'satisfied') as satisfied,
            count(*) filter (where overall_verdict = 'partial') as partial,
            count(*) filter (where overall_verdict = 'violated') as violated,
            count(*) filter (where overall_verdict = 'not_evaluable') as not_evaluable
        from run_days
        group by grader_id
        order by grader_id
    """).pl()


def recent_grades(log: pl.DataFrame, last: int = 14) -> pl.DataFrame:
    """The last `last` grades of a grade log (the `grades` view, oldest first), narrowed to
    what a morning reader looks at: when, how it ended, under which grader id (results graded
    by several hold the grades of each), how long, and its counts (found = skip + graded +
    refused once finished; unlisted: folders it could not list)."""
    return log.tail(last).select(
        pl.col("started_at").dt.convert_time_zone("UTC").dt.replace_time_zone(None)
        .dt.truncate("1s").alias("started (UTC)"), "status",
        pl.col("grader_id").alias("grader"), pl.col("elapsed_s").alias("secs"), "found",
        pl.col("skipped").alias("skip"), "graded", "refused",
        pl.col("unlisted").list.len().alias("unlisted"))


def version_changes(log: pl.DataFrame, last: int = 14) -> list[tuple[str, str]]:
    """(grade id, what moved) for each of the last `last` grades of a grade log (the `grades`
    view, oldest first) that ran with other versions than the grade before it, e.g.
    `polars 2.1.0 → 2.2.0`: its verdicts may differ from earlier ones under the same grader id.
    Records without versions (written before grades noted them) are passed over."""
    shown = set(log.tail(last)["grade_id"].to_list())
    changes, before = [], None
    for grade_id, versions in log.select("grade_id", "versions").iter_rows():
        if not versions:
            continue
        moved = [f"{name} {before.get(name)} → {version}" for name, version in versions.items()
                 if before is not None and before.get(name) != version]
        if moved and grade_id in shown:
            changes.append((grade_id, ", ".join(moved)))
        before = versions
    return changes


def newest_pair(con: duckdb.DuckDBPyConnection,
                known: list[str] | None = None) -> tuple[str, str] | None:
    """(base, head): the latest grader id that can be compared with another, and the latest
    other id that graded (not refused) some of its runs from the same files, among `known`
    (default: every grader id of the results, by first committed batch); None where no two
    can be compared."""
    known = grader_ids(con) if known is None else known
    # one grading stamps several ids (each ledger carries its ledger grader's), so the two
    # newest ids need not share a run: pair the newest id with the newest that does
    for head in reversed(known):
        base = _latest_sharing(con, head, known)
        if base is not None:
            return base, head
    return None


def latest_pair(con: duckdb.DuckDBPyConnection) -> tuple[str, str]:
    """`newest_pair`, refusing results with no such pair (ResultsQueryError)."""
    known = grader_ids(con)
    pair = newest_pair(con, known)
    if pair is not None:
        return pair
    raise ResultsQueryError(f"a diff needs results of two grader ids that graded the same "
                            f"runs from the same files, and {no_pair(con, known)}")


def no_pair(con: duckdb.DuckDBPyConnection, known: list[str]) -> str:
    """Why no two of the grader ids `known` can be compared, and what to do: "these results
    hold …; …". Two that graded the same runs, whose files all changed between the two
    grades, are named: grading the runs again under both brings them into the comparison."""
    ids = ", ".join(known)
    held = ("these results hold no grader id" if not known else
            f"these results hold one grader id ({ids})" if len(known) == 1 else
            f"these results hold {len(known)} grader ids ({ids})")
    changed = con.sql("""
        select base_grader_id, head_grader_id, changed_runs
        from grader_pairs
        where changed_runs > 0
        order by head_first_batch desc, base_first_batch desc
        limit 1
    """).fetchall()
    if changed:
        return f"{held}: {_all_changed(*changed[0])}"
    if len(known) > 1:
        held += ", no two of which graded the same run"
    return (f"{held}; grade the same runs again under another grader id (`rungrade grade "
            "RUNS --out RESULTS --grader my_grader.py`) to see what changes between versions")


def _all_changed(base: str, head: str, runs: int) -> str:
    """What to do about ids `base` and `head` whose `runs` in common all changed."""
    return (f"{base} and {head} graded {runs} run(s) in common, but their files changed "
            "between the two grades; grade those runs again under both ids (each grade skips "
            "the runs unchanged since) to compare them")


def _latest_sharing(con: duckdb.DuckDBPyConnection, grader_id: str,
                    known: list[str]) -> str | None:
    """The newest grader id other than `grader_id` with which it can be compared: that
    graded (not refused) one of its runs from the same files (`paired_runs`), if any; of
    those, the newest version of the same grader first (after an upgrade to
    `prose.contract.grader/v16`, v15, not a team's grader that graded a few runs since)."""
    sharing = {g for (g,) in con.sql("""
        select distinct base_grader_id
        from paired_runs
        where head_grader_id = $id and same_files
    """, params={"id": grader_id}).fetchall()}
    name = grader_id.rpartition("/v")[0]
    newest_first = [g for g in reversed(known) if g in sharing]
    return next((g for g in newest_first if g.rpartition("/v")[0] == name),
                next(iter(newest_first), None))


@dataclass
class VersionDiff:
    """Everything that changed from grader id `base` to `head` on the runs both graded
    from the same files (`paired_runs`)."""

    base: str
    head: str
    summary: dict  # one row of version_summary
    flips: pl.DataFrame  # from_verdict, to_verdict, flipped, clauses (the full matrix)
    clauses: pl.DataFrame  # every paired clause, with base/head verdict and `flipped`
    runs: pl.DataFrame  # run_score_deltas of the pair
    services: pl.DataFrame  # service_score_deltas of the pair

    @property
    def flipped(self) -> pl.DataFrame:
        return self.clauses.filter(pl.col("flipped"))

    @property
    def moved(self) -> pl.DataFrame:
        """The runs whose overall score, verdict or outcome verdict changed, the largest
        move first: a score that appeared or went (not_evaluable on one side, null) counts as
        moved, first."""
        scored = pl.col("base_score").is_null() != pl.col("head_score").is_null()
        return self.runs.filter(
            (pl.col("score_delta").fill_null(0) != 0) | scored | pl.col("verdict_changed")
            | pl.col("outcome_changed")
        ).sort(scored, pl.col("score_delta").abs().fill_null(0), descending=True)

    def flip_matrix(self) -> pl.DataFrame:
        """Clauses per base verdict (rows) × head verdict (columns), every verdict present."""
        grid = pl.DataFrame({"from_verdict": list(VERDICTS)}).join(
            pl.DataFrame({"to_verdict": list(VERDICTS)}), how="cross")
        counts = grid.join(self.flips.select("from_verdict", "to_verdict", "clauses"),
                           on=["from_verdict", "to_verdict"], how="left")
        return counts.with_columns(pl.col("clauses").fill_null(0))


def version_diff(con: duckdb.DuckDBPyConnection, base: str | None = None,
                 head: str | None = None) -> VersionDiff:
    """Diff two grader ids (default: the two latest); refuses unknown or identical ids."""
    if base is None and head is None:
        base, head = latest_pair(con)
    elif base is None or head is None:
        # one id given: compare it with the latest other id that graded a run in common
        given = _known(con, base or head)
        other = _latest_sharing(con, given, grader_ids(con))
        if other is None:
            raise ResultsQueryError(f"no other grader id graded (not refused) a run that "
                                    f"{given} graded from the same files; grade the same runs "
                                    "under a second grader id")
        base, head = (other, given) if base is None else (given, other)
    _known(con, base)
    _known(con, head)
    if base == head:
        raise ResultsQueryError(f"--base and --head are both {base!r}; pick two grader ids")
    params = {"base": base, "head": head}
    where = "where base_grader_id = $base and head_grader_id = $head"

    def view(name: str) -> pl.DataFrame:
        return con.sql(f"select * exclude (base_grader_id, head_grader_id) from {name} {where}",
                       params=params).pl()

    summary = view("version_summary")
    if summary.is_empty():
        raise ResultsQueryError(f"{base} and {head} graded (not refused) no run in common "
                                "from the same files; grade the same runs under both to "
                                "compare them")
    if summary["shared_runs"].item() == 0:  # (ids given: they were not chosen for sharing runs)
        raise ResultsQueryError(_all_changed(base, head, summary["changed_runs"].item()))
    return VersionDiff(
        base=base, head=head, summary=summary.row(0, named=True),
        flips=view("verdict_flips"), clauses=view("version_diffs"),
        runs=view("run_score_deltas"), services=view("service_score_deltas"),
    )
