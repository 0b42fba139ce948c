"""The `rungrade` command line."""

from __future__ import annotations

import json
import signal
import sys
import threading
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from . import exit_codes

app = typer.Typer(
    help="Grade AI agent runs clause by clause against their contracts; write Parquet results.",
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode="rich",
)
out = Console()
err = Console(stderr=True)

EndpointOpt = Annotated[str | None, typer.Option(
    "--endpoint-url", envvar="AWS_ENDPOINT_URL",
    help="S3-compatible endpoint for s3:// paths (default: the AWS variables).")]


def fail(message: str, code: int) -> typer.Exit:
    err.print(f"[bold red]error:[/] {message}", soft_wrap=True)
    return typer.Exit(code)


@app.command()
def grade(
    runs: Annotated[str, typer.Argument(help="Folder or s3://bucket/prefix holding run folders "
                                             "(found at any depth).")],
    out_dir: Annotated[str, typer.Option("--out", "-o", help="Results folder or s3:// prefix.")]
    = "results",
    grader_id: Annotated[str | None, typer.Option(
        "--grader-id", help="Grader id to stamp on every row, '<name>.grader/v<N>' "
                            "(default: the grader's own id).")] = None,
    grader_path: Annotated[Path | None, typer.Option(
        "--grader", help="Python file defining `grader` (a rungrade Grader) to use instead "
                         "of the built-in contract grader.")] = None,
    batch_size: Annotated[int, typer.Option(help="Runs per committed batch.")] = 2000,
    workers: Annotated[int | None, typer.Option(
        help="Processes reading runs (default: one per core).")] = None,
    validate: Annotated[bool, typer.Option(
        "--validate", help="Check every table against its pandera schema before writing.")]
    = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the summary as JSON.")] = False,
    endpoint_url: EndpointOpt = None,
) -> None:
    """Grade every run under RUNS and write results to --out.

    Every run found is either graded or refused with a reason; the summary adds them up.
    SIGTERM stops at the next batch boundary: the batch in hand is abandoned, committed ones
    stay, and rerunning the same command finishes the job.
    Exit codes: 0 done; 2 bad arguments or input; 3 results locked by another grade;
    4 a store failed (read-only, full, unreachable); 143 stopped by SIGTERM;
    1 unexpected failure.
    """
    import duckdb

    from .checks import GraderError, default_grader
    from .grade import grade_runs
    from .sources.outage import is_outage
    from .user_grader import load_grader

    try:
        grader = load_grader(grader_path) if grader_path else default_grader()
        if grader_id:
            grader = grader.with_id(grader_id)
    except (GraderError, FileNotFoundError, ImportError) as exc:
        raise fail(str(exc), exit_codes.USAGE) from exc

    progress = _progress_bar() if sys.stderr.isatty() and not as_json else None
    stop = _StopRequest()
    try:
        if progress:
            with progress as bar:
                task = bar.add_task("reading runs", total=None)

                def on_progress(stage: str, done: int, total: int) -> None:
                    bar.update(task, completed=done, total=total)

                summary = grade_runs(runs, out_dir, grader, batch_size=batch_size,
                                     workers=workers, endpoint_url=endpoint_url,
                                     validate=validate, progress=on_progress,
                                     should_stop=stop.is_set)
        else:
            summary = grade_runs(runs, out_dir, grader, batch_size=batch_size, workers=workers,
                                 endpoint_url=endpoint_url, validate=validate,
                                 should_stop=stop.is_set)
    except FileNotFoundError as exc:
        raise fail(f"{exc}. Check the path (or bucket and --endpoint-url).",
                   exit_codes.USAGE) from exc
    except Exception as exc:
        if not isinstance(exc, OSError | duckdb.IOException) and not is_outage(exc):
            raise
        raise fail(f"a store failed while grading: {exc}. Batches committed in {out_dir} are "
                   "intact and nothing half-published is visible; fix the cause (space, "
                   "permissions, endpoint) and rerun the same command.",
                   exit_codes.STORAGE) from exc
    finally:
        stop.restore()
    if as_json:
        out.print_json(json.dumps(summary.as_dict()))
    else:
        print_summary(summary)
    if summary.stopped:
        raise fail(f"stopped by SIGTERM after {len(summary.batches)} committed batch(es); the "
                   "batch in progress was abandoned. Rerun the same command to finish.",
                   exit_codes.STOPPED)


class _StopRequest(threading.Event):
    """Set by SIGTERM; `restore()` puts the previous handler back."""

    def __init__(self) -> None:
        super().__init__()
        self.previous = None
        if threading.current_thread() is threading.main_thread():
            self.previous = signal.signal(signal.SIGTERM, lambda *_: self.set())

    def restore(self) -> None:
        if self.previous is not None:
            signal.signal(signal.SIGTERM, self.previous)


def _progress_bar():
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    return Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                    TimeElapsedColumn(), TimeRemainingColumn(), console=err, transient=True)


def print_summary(summary) -> None:
    data = summary.as_dict()
    table = Table(title=f"rungrade · {data['grader_id']}", show_header=False, box=None,
                  pad_edge=False)
    table.add_column(style="bold")
    table.add_column()
    table.add_row("runs found", str(data["found"]))
    table.add_row("graded", str(data["graded"]))
    refused = ", ".join(f"{k} {v}" for k, v in data["refusals"].items())
    table.add_row("refused", f"{data['refused']}" + (f"  ({refused})" if refused else ""))
    score = data["mean_overall_score"]
    table.add_row("mean overall score", "—" if score is None else f"{score:.1f}")
    table.add_row("verdicts", ", ".join(f"{k} {v}" for k, v in data["verdicts"].items()) or "—")
    table.add_row("results", f"{data['results']}  (reports/ holds one JSON report per run)")
    out.print(table)
    if data["found"] != data["graded"] + data["refused"]:
        err.print("[bold red]counts do not add up: found != graded + refused[/]")


@app.command()
def sql(
    query: Annotated[str, typer.Argument(help="SQL over the result views, or a path to a .sql "
                                              "file.")],
    results: Annotated[str, typer.Option("--results", "-r", help="Results folder or s3:// "
                                                                 "prefix.")] = "results",
    csv: Annotated[Path | None, typer.Option(help="Also write the result as CSV.")] = None,
    endpoint_url: EndpointOpt = None,
) -> None:
    """Run SQL against the committed results (every table is a view; see README)."""
    from .catalog import connect

    text = Path(query).read_text() if query.endswith(".sql") and Path(query).exists() else query
    try:
        con = connect(results, endpoint_url)
    except FileNotFoundError as exc:
        raise fail(str(exc), exit_codes.USAGE) from exc
    df = con.sql(text).pl()
    if csv:
        df.write_csv(csv)
    _print_frame(df)


def _print_frame(df, limit: int = 50) -> None:
    table = Table(show_lines=False)
    for col in df.columns:
        table.add_column(col, overflow="fold")
    for row in df.head(limit).iter_rows():
        table.add_row(*["" if v is None else (f"{v:.2f}" if isinstance(v, float) else str(v))
                        for v in row])
    out.print(table)
    if df.height > limit:
        out.print(f"… {df.height - limit} more rows")


def main() -> None:  # pragma: no cover - console entry point
    app()
