"""The `rungrade` command line."""

from __future__ import annotations

import json
import sys
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
    err.print(f"[bold red]error:[/] {message}")
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
    ledger_grader_paths: Annotated[list[Path] | None, typer.Option(
        "--ledger-grader", help="Python file defining `ledger_graders = [LedgerGrader(...)]` "
                                "for moltzap ledgers; each replaces the built-in grader of its "
                                "scenario. Repeatable.")] = None,
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

    Every run found (OpenProse run folders of either era, and moltzap ledger folders) is
    either graded or refused with a reason; the summary adds them up. Ledgers are graded by
    the ledger grader of their scenario (built in, or from --ledger-grader).
    Exit codes: 0 done; 2 bad arguments or input; 3 results locked by another grade;
    1 unexpected failure.
    """
    from .checks import GraderError, default_grader
    from .grade import default_ledger_graders, grade_runs
    from .user_grader import load_grader, load_ledger_graders

    try:
        grader = load_grader(grader_path) if grader_path else default_grader()
        if grader_id:
            grader = grader.with_id(grader_id)
        ledger_graders = default_ledger_graders(tuple(
            g for path in ledger_grader_paths or [] for g in load_ledger_graders(path)))
    except (GraderError, FileNotFoundError, ImportError) as exc:
        raise fail(str(exc), exit_codes.USAGE) from exc

    progress = _progress_bar() if sys.stderr.isatty() and not as_json else None
    try:
        if progress:
            with progress as bar:
                task = bar.add_task("reading runs", total=None)

                def on_progress(stage: str, done: int, total: int) -> None:
                    bar.update(task, completed=done, total=total)

                summary = grade_runs(runs, out_dir, grader, batch_size=batch_size,
                                     workers=workers, endpoint_url=endpoint_url,
                                     validate=validate, ledger_graders=ledger_graders,
                                     progress=on_progress)
        else:
            summary = grade_runs(runs, out_dir, grader, batch_size=batch_size, workers=workers,
                                 endpoint_url=endpoint_url, validate=validate,
                                 ledger_graders=ledger_graders)
    except FileNotFoundError as exc:
        raise fail(f"{exc}. Check the path (or bucket and --endpoint-url).",
                   exit_codes.USAGE) from exc
    if as_json:
        out.print_json(json.dumps(summary.as_dict()))
    else:
        print_summary(summary)


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
    if data["ledger_verdicts"]:
        table.add_row("ledger verdicts",
                      ", ".join(f"{k} {v}" for k, v in data["ledger_verdicts"].items()))
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
