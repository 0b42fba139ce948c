"""The `rungrade` command line."""

from __future__ import annotations

import atexit
import contextlib
import errno
import functools
import gc
import json
import os
import re
import signal
import sys
import threading
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from . import exit_codes, numbers

app = typer.Typer(
    help="Grade AI agent runs clause by clause against their contracts; write Parquet results.",
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode="rich",
)


def _to_devnull(stream) -> None:
    with contextlib.suppress(OSError, ValueError):  # (a stream without a descriptor)
        os.dup2(os.open(os.devnull, os.O_WRONLY), stream.fileno())


class _Console(Console):
    """A console that, when its output cannot be written, prints nothing more and lets the
    command finish (rich and Python exit 1 at once, with a traceback but for a closed pipe,
    which says the command failed): see `_output_failed` for the exit code. The reader
    closing the pipe (`rungrade … | head`) is `pipe_closed`; a full disk or an I/O error,
    `write_error`."""
    pipe_closed = False
    write_error: OSError | None = None

    def on_broken_pipe(self) -> None:
        self.quiet = self.pipe_closed = True
        _to_devnull(self.file)

    def _check_buffer(self) -> None:  # (rich's, which answers only a closed pipe)
        try:
            super()._check_buffer()
        except OSError as exc:
            self.could_not_write(exc)

    def could_not_write(self, exc: OSError) -> None:
        del self._buffer[:]
        self.quiet = True
        self.write_error = self.write_error or exc


out = _Console()
err = _Console(stderr=True)

# The interpreter's last collections, as it exits, walk every object still alive (polars',
# pydantic's, the grade's): 70-90 ms, about a tenth of a no-change rerun of 10,000 runs.
# Frozen, they are skipped; the memory goes back to the system with the process all the same.
atexit.register(gc.freeze)


def _print_version(asked: bool) -> None:
    if asked:
        from importlib.metadata import version

        from .checks import DEFAULT_GRADER_ID
        out.print(f"rungrade {version('rungrade')} (default grader {DEFAULT_GRADER_ID})",
                  markup=False)
        _output_failed()  # (an option's callback: no command's wrapper looks)
        raise typer.Exit()


@app.callback()
def _options(version: Annotated[bool, typer.Option(
        "--version", callback=_print_version, is_eager=True,
        help="Print rungrade's version and its default grader id, then exit.")] = False) -> None:
    """Options of rungrade itself, given before the command."""


def _endpoint(url: str | None) -> str | None:
    """--endpoint-url (or AWS_ENDPOINT_URL) checked before anything is read: botocore's
    ValueError on a malformed one was a traceback."""
    if url:
        from urllib.parse import urlsplit

        try:
            parts = urlsplit(url)
            ok = parts.scheme in ("http", "https") and bool(parts.hostname) and (
                parts.port is None or parts.port > 0) and parts.path in ("", "/") and not (
                parts.query or parts.fragment)  # (a path: its buckets' keys would be elsewhere)
        except ValueError:  # (a port that is no number)
            ok = False
        if not ok:
            raise typer.BadParameter(f"{url!r} is not an endpoint URL: give "
                                     "http(s)://HOST[:PORT], e.g. http://127.0.0.1:9000")
    return url


EndpointOpt = Annotated[str | None, typer.Option(
    "--endpoint-url", envvar="AWS_ENDPOINT_URL", callback=_endpoint,
    help="S3-compatible endpoint for s3:// paths (default: the AWS variables).")]


def _file(text: str | Path) -> Path:
    """A file or folder the user names (`parser=` of an option): an empty one is an unset
    variable in a script, and one starting with '-' an option taken as the value (`-o
    --base`): `Path` would make the first the working folder and the second a file so named.
    An option's default (a Path) is passed through it as it stands."""
    if isinstance(text, Path):
        return text
    if not text.strip():
        raise typer.BadParameter("is empty (an unset variable in a script?): give a path")
    if text.startswith("-") and text != "-":
        raise typer.BadParameter(f"{text!r} reads as an option given where a path was "
                                 f"expected; for a file of that name, give ./{text}")
    if "://" in text:  # (as RUNS and --out tell a URL; `Path` makes a local `s3:/…` of it)
        raise typer.BadParameter(f"{text} is a URL: this is written to a local file or "
                                 "folder only; write it here and copy it (`aws s3 cp`)")
    return Path(text)


def _out_file(text: str | Path) -> Path:
    """A file the command writes (`parser=` of an option), as `_file`; a path ending in '/'
    names a folder, where `Path` would drop the '/' and write a file so named."""
    if isinstance(text, str) and text.endswith(("/", os.sep)) and text.strip("/" + os.sep):
        raise typer.BadParameter(f"{text} ends with '/', which names a folder: give the "
                                 f"file to write, e.g. {text}rows.csv")
    return _file(text)


def _word(text: str) -> str:
    """A grader id or other name the user gives (`parser=` of an option): an empty one was
    taken as the option left out."""
    if not text.strip():
        raise typer.BadParameter("is empty (an unset variable in a script?): give a value, or "
                                 "leave the option out")
    return text


# (the kinds of value --help shows)
_file.__name__, _out_file.__name__, _word.__name__ = "path", "path", "str"


def fail(message: str, code: int) -> typer.Exit:
    # (escaped: a path or quoted text with brackets is not markup)
    err.print(f"[bold red]error:[/] {escape(message)}", soft_wrap=True)
    return typer.Exit(code)


# rungrade's optional parts (pyproject's extras), by the modules each brings
_EXTRAS = {"s3fs": "s3", "aiobotocore": "s3", "altair": "report", "vl_convert": "report",
           "dask": "dask", "distributed": "dask"}


def _missing_extra(exc: ImportError) -> str | None:
    """The extra whose module `exc` did not find (fsspec names s3fs only in its message)."""
    for module, extra in _EXTRAS.items():
        if (exc.name or "").partition(".")[0] == module or f"{module} " in f"{exc} ":
            return extra
    return None


def _write_stdout(data: bytes) -> None:
    """`data` on standard output as it is (CSV: UTF-8 whatever the terminal's encoding), to
    the last byte: a reader gone mid-write is seen (BrokenPipeError), where a write that
    took only part of the data returned without a word."""
    try:
        sys.stdout.flush()
        rest = memoryview(data)
        while rest:  # (unbuffered, as PYTHONUNBUFFERED makes it, a write may take a part)
            rest = rest[sys.stdout.buffer.write(rest) or 0:]
        sys.stdout.buffer.flush()
    except BrokenPipeError:  # (the command goes on to its own exit code, as with rich)
        out.on_broken_pipe()
    except OSError as exc:
        out.could_not_write(exc)


def _output_failed() -> None:
    """Once a command's work is done: its exit code when its output could not be written."""
    if out.write_error is not None:
        err.print(f"error: the output could not be written to standard output "
                  f"({out.write_error.strerror or out.write_error}); the command's work stands "
                  "(a grade's results are committed).", markup=False, soft_wrap=True)
        raise typer.Exit(exit_codes.STORAGE)
    if out.pipe_closed:
        raise typer.Exit(exit_codes.PIPE_CLOSED)


_COMMAND_STARTED: list[str] = []  # the command whose code runs (see `main`)


def _sigterm_to_the_command() -> None:
    """SIGTERM as a command starts: its default again (the process ends by it), where the
    console entry point answered it while rungrade loaded (`entry.stopped_early`); `grade`
    and the commands that write results set their own at once."""
    from .entry import stopped_early

    if (threading.current_thread() is threading.main_thread()
            and signal.getsignal(signal.SIGTERM) is stopped_early):
        signal.signal(signal.SIGTERM, signal.SIG_DFL)


def _command():
    """`app.command()`, where Ctrl-C that no part of the command answers (while it starts,
    loads a grader, prints) ends it with exit 130 and one line saying so (typer ended it
    with 130 and nothing said); a command whose output could not be written exits, once
    done, as `_output_failed` says; and a character its terminal cannot show prints as ?."""
    def register(command):
        @functools.wraps(command)
        def run(*args, **kwargs):
            _COMMAND_STARTED.append(command.__name__)
            _sigterm_to_the_command()
            for stream in (sys.stdout, sys.stderr):  # (a character the terminal's encoding
                with contextlib.suppress(AttributeError, ValueError):  # lacks shows as ?)
                    stream.reconfigure(errors="replace")
            try:
                done = command(*args, **kwargs)
            except KeyboardInterrupt:
                raise fail("interrupted (Ctrl-C) before the command finished; what it "
                           "committed before stands: rerun the same command.",
                           exit_codes.INTERRUPTED) from None
            except ImportError as exc:
                if (extra := _missing_extra(exc)) is None:
                    raise
                raise fail(f"rungrade's optional '{extra}' packages are not installed "
                           f"({exc}): pip install 'rungrade[{extra}]' installs them (`make "
                           "run` does)", exit_codes.USAGE) from exc
            _output_failed()
            return done

        return app.command()(run)

    return register


@_command()
def grade(
    runs: Annotated[str, typer.Argument(metavar="RUNS", help="Folder or s3://bucket/prefix "
                                                            "holding run folders (found at "
                                                            "any depth).")],
    out_dir: Annotated[str, typer.Option("--out", "-o", help="Results folder or s3:// prefix.")]
    = "results",
    grader_id: Annotated[str | None, typer.Option(
        "--grader-id", parser=_word,
        help="Grader id to stamp on every row, '<name>.grader/v<N>' (default: the grader's "
             "own id).")] = None,
    grader_path: Annotated[Path | None, typer.Option(
        "--grader", parser=_file,
        help="Python file defining `grader` (a rungrade Grader) to use instead "
             "of the built-in contract grader.")] = None,
    ledger_grader_paths: Annotated[list[Path] | None, typer.Option(
        "--ledger-grader", parser=_file,
        help="Python file defining `ledger_graders = [LedgerGrader(...)]` "
             "for moltzap ledgers; each replaces the built-in grader of its "
             "scenario. Repeatable.")] = None,
    batch_size: Annotated[int, typer.Option(
        min=1, help="Runs per committed batch: a crash loses at most the batch in progress, "
                    "and memory grows with it.")] = 2000,
    workers: Annotated[int | None, typer.Option(
        min=1, help="Processes listing, reading and grading runs (default: one per core; "
                    "1 runs everything in this process).")] = None,
    compact_after: Annotated[int | None, typer.Option(
        "--compact-after", min=2, show_default=False,
        help="Then compact the results, as `rungrade compact` does, once this many batches "
             "were committed since the last compaction: a nightly job needs no other.")] = None,
    shard_runs: Annotated[int | None, typer.Option(
        "--shard-runs", min=1,
        help="Runs a worker reads and grades at once, at most (default 600; and at most a "
             "batch's share per worker): larger shards spend less CPU a run and hold more "
             "memory in each worker (see README, Performance).")] = None,
    engine: Annotated[str, typer.Option(
        "--engine", help="Where runs are read and graded: 'local' (processes on this "
                         "machine) or 'dask' (a Dask cluster: --scheduler, or a local one "
                         "of --workers processes).")] = "local",
    scheduler: Annotated[str | None, typer.Option(
        "--scheduler", parser=_word,
        help="With --engine dask: the address of a running Dask scheduler, e.g. "
             "tcp://10.0.0.5:8786.")] = None,
    full: Annotated[bool, typer.Option(
        "--full", help="Grade every run again, even those already graded under this grader "
                       "id with the same fingerprint (skipped by default).")] = False,
    validate: Annotated[bool, typer.Option(
        "--validate", help="Check every table against its pandera schema before writing.")]
    = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the summary as JSON.")] = False,
    endpoint_url: EndpointOpt = None,
    judge_cmd: Annotated[str | None, typer.Option(
        "--judge-cmd", rich_help_panel="Judge",
        help="Settle judgment clauses with this executable: JSON Lines requests on stdin, "
             "one JSON answer per line on stdout (see README, Judges).")] = None,
    judge_url: Annotated[str | None, typer.Option(
        "--judge-url", rich_help_panel="Judge",
        help="Settle judgment clauses with an OpenAI-compatible endpoint, e.g. "
             "https://api.openai.com/v1 (key from $RUNGRADE_JUDGE_API_KEY or "
             "$OPENAI_API_KEY).")] = None,
    judge_model: Annotated[str | None, typer.Option(
        "--judge-model", parser=_word, rich_help_panel="Judge",
        help="Model name for --judge-url.")] = None,
    judge_name: Annotated[str | None, typer.Option(
        "--judge-name", parser=_word, rich_help_panel="Judge",
        help="Judge id recorded on judged rows and in the grader id (default: the script's "
             "file stem, or the model name).")] = None,
    judge_api_key_env: Annotated[str | None, typer.Option(
        "--judge-api-key-env", parser=_word, rich_help_panel="Judge",
        help="Environment variable holding the API key for --judge-url.")] = None,
    judge_max_calls: Annotated[int | None, typer.Option(
        "--judge-max-calls", rich_help_panel="Judge",
        help="Send at most N requests to the judge (retries count); the rest stay "
             "undecided.")] = None,
    judge_timeout: Annotated[float, typer.Option(
        "--judge-timeout", rich_help_panel="Judge",
        help="Seconds one judge call may take (a --judge-cmd batch or one HTTP request).")]
    = 120.0,
    judge_concurrency: Annotated[int, typer.Option(
        "--judge-concurrency", rich_help_panel="Judge",
        help="Judge calls in flight at once.")] = 4,
    judge_batch_size: Annotated[int | None, typer.Option(
        "--judge-batch-size", rich_help_panel="Judge", show_default=False,
        help="Requests per --judge-cmd process (default: 16).")] = None,
    judge_retries: Annotated[int, typer.Option(
        "--judge-retries", rich_help_panel="Judge",
        help="Retries of a failed judge call, with exponential backoff.")] = 2,
) -> None:
    """Grade the new and changed runs under RUNS and write the results to --out.

    Runs are OpenProse run folders (era A or B) and moltzap ledger folders, at any depth.

    A run graded before under this grader id with the same fingerprint is skipped (--full: not).

    The fingerprint is the run's file names, sizes and mtimes.

    Every other run is graded or refused with a reason; the summary adds them up.

    Ledgers are graded by the grader of their scenario (built in, or from --ledger-grader).

    A judge (--judge-cmd, --judge-url) settles judgment clauses the checks leave undecided.

    Judged rows carry the grader id '<name>.judged-by-<judge>.grader/vN'.

    Results are committed batch by batch: a killed grade loses only the batch in progress.

    SIGTERM stops at the next batch boundary; rerun the same command to finish the job.

    --engine dask runs the same stages on Dask workers, with the same results (see README).

    Exit codes: 0 done; 1 unexpected failure; 2 bad arguments or input; 3 results locked.

    More exit codes: 4 a store failed (read-only, full, unreachable), or a folder under RUNS
    could not be listed (every run found is graded first); 130 Ctrl-C; 141 the summary's
    reader closed the pipe (the grade is committed); 143 stopped by SIGTERM.
    """
    # first: a SIGTERM that comes while the grading code loads stops the grade before its
    # first batch (the process ended by it, -15, where a script looks for 143)
    stop = _StopRequest()
    try:
        if out_dir.startswith("-"):  # `--out --json`: the option's value is the next option
            raise fail(f"--out {out_dir}: a results path starting with '-' reads as an option "
                       f"given where the path was expected; for a folder of that name, give "
                       f"./{out_dir}", exit_codes.USAGE)
        if engine == "local" and not (judge_cmd or judge_url):
            from .processes import start_early
            # the workers' imports then run while this process does its own
            start_early(runs, out_dir, full=full, workers=workers)
        from .checks import GraderError, default_grader
        from .engines import EngineError
        from .grade import (
            InterruptedAfterCommits,
            MisplacedFolder,
            default_ledger_graders,
            grade_runs,
        )
        from .judging import JudgeConfigError, make_judge
        from .store import ResultsLocked
        from .user_grader import load_grader, load_ledger_graders, stamped_as

        try:
            grader = load_grader(grader_path) if grader_path else default_grader()
            if grader_id:
                grader = stamped_as(grader, grader_id)
            ledger_graders = default_ledger_graders(tuple(
                g for path in ledger_grader_paths or [] for g in load_ledger_graders(path)))
            judge = make_judge(out_dir, command=judge_cmd, url=judge_url, model=judge_model,
                               name=judge_name, api_key_env=judge_api_key_env,
                               max_calls=judge_max_calls, timeout=judge_timeout,
                               concurrency=judge_concurrency, batch_size=judge_batch_size,
                               retries=judge_retries, endpoint_url=endpoint_url)
        except (GraderError, JudgeConfigError, FileNotFoundError, ImportError) as exc:
            raise fail(str(exc), exit_codes.USAGE) from exc

        if engine not in ("local", "dask"):
            raise fail(f"--engine must be 'local' or 'dask', not {engine!r}.", exit_codes.USAGE)
        if scheduler and engine != "dask":
            raise fail("--scheduler needs --engine dask.", exit_codes.USAGE)
        relative = [p for p in (runs, out_dir) if scheduler and "://" not in p
                    and not Path(p).is_absolute()]
        if relative:  # (a worker of that cluster reads and writes from a folder of its own)
            raise fail(f"with --scheduler, give RUNS and --out as absolute paths (or s3:// "
                       f"prefixes): the cluster's workers run in folders of their own, where "
                       f"{relative[0]} is another place", exit_codes.USAGE)
        if scheduler and workers:
            raise fail("give --scheduler (a running cluster) or --workers (a local cluster of N "
                       "processes), not both.", exit_codes.USAGE)
        engine_factory = None
        if engine == "dask":
            from .engines import DaskSpec
            engine_factory = DaskSpec(scheduler=scheduler, workers=workers)

        progress = _progress_bar() if sys.stderr.isatty() and not as_json else None
    except BaseException:
        stop.restore()
        raise
    options = dict(batch_size=batch_size, workers=workers, endpoint_url=endpoint_url,
                   validate=validate, full=full, ledger_graders=ledger_graders, judge=judge,
                   engine=engine_factory, should_stop=stop.is_set)
    if shard_runs is not None:
        options["shard_runs"] = shard_runs
    try:
        if progress:
            with progress as bar:
                task = bar.add_task("discovering runs", total=None)

                def on_progress(stage: str, done: int, total: int | None) -> None:
                    bar.update(task, description=stage, completed=done, total=total)

                summary = grade_runs(runs, out_dir, grader, progress=on_progress, **options)
        else:
            summary = grade_runs(runs, out_dir, grader, **options)
    except MisplacedFolder as exc:
        raise fail(f"{exc}.", exit_codes.USAGE) from exc
    except GraderError as exc:  # (a check reading a column the clause frame lacks)
        raise fail(str(exc), exit_codes.USAGE) from exc
    except FileNotFoundError as exc:
        raise fail(f"{exc}. Check the path (or bucket and --endpoint-url).",
                   exit_codes.USAGE) from exc
    except ResultsLocked as exc:
        raise fail(str(exc), exit_codes.LOCKED) from exc
    except EngineError as exc:
        raise fail(str(exc), exit_codes.USAGE) from exc
    except (KeyboardInterrupt, Exception) as exc:  # (Ctrl-C in a query: DuckDB's error)
        from .catalog import interrupted

        if isinstance(exc, InterruptedAfterCommits):
            raise fail(f"interrupted (Ctrl-C) after every batch was committed, while the "
                       f"catalog was written: the results in {out_dir} are whole and "
                       f"`rungrade sql` reads them; catalog.duckdb lags behind them until the "
                       f"next grade or `rungrade catalog {out_dir}`.",
                       exit_codes.INTERRUPTED) from None
        if interrupted(exc):
            raise fail(f"interrupted (Ctrl-C): the batch in progress was abandoned; the "
                       f"batches committed before stand in {out_dir}. Rerun the same command "
                       "to finish.", exit_codes.INTERRUPTED) from None
        if not _store_failed(exc):
            raise
        if _damaged(exc):  # (says what to do)
            raise fail(f"{exc}. The batches this grade committed, if any, stand.",
                       exit_codes.STORAGE) from exc
        raise fail(f"a store failed while grading: {exc}. Batches committed in {out_dir} are "
                   "intact and nothing half-published is visible; fix the cause (space, "
                   "permissions, credentials, endpoint) and rerun the same command.",
                   exit_codes.STORAGE) from exc
    finally:
        stop.restore()
    if compact_after and not summary.stopped and summary.uncompacted >= compact_after:
        from .compact import compact as compact_results
        from .store import ResultStore

        store = ResultStore(out_dir, endpoint_url)
        unfinished = ("the compaction after the grade (--compact-after) did not finish{}; the "
                      "grade's batches are committed")
        with contextlib.suppress(OSError):  # (said until it finishes: a kill leaves it said)
            store.amend_grade(summary.grade_id, error=unfinished.format(""))
        try:
            with _writing_results(None, "compacting after the grade", "The grade's batches "
                                  "are committed, and the results are as they were before "
                                  "compacting (or compacted, for the grader ids done)"):
                summary.compacted = compact_results(out_dir, endpoint_url).merged
        except typer.Exit as exc:  # the grade's summary all the same: its batches are committed
            with contextlib.suppress(OSError):  # (its record says why nothing was compacted)
                cause = f": {exc.__cause__}" if exc.__cause__ else ""
                store.amend_grade(summary.grade_id, error=unfinished.format(
                    f", exit {exc.exit_code}{cause}"))
            _print_summary(summary, as_json)
            raise
        summary.uncompacted = 0
        with contextlib.suppress(OSError):  # the grade's record says so too (a log, not data)
            store.amend_grade(summary.grade_id, uncompacted=0, compacted=summary.compacted,
                              error=None)
    if not summary.found and not summary.unlisted:
        _refuse_misplaced_root(runs, out_dir, endpoint_url, summary.grade_id)
    _print_summary(summary, as_json)
    if summary.stopped:
        raise fail(f"stopped by SIGTERM after {len(summary.batches)} committed batch(es); the "
                   "batch in progress was abandoned. Rerun the same command to finish.",
                   exit_codes.STOPPED)
    if not summary.found and not summary.unlisted:
        # (not an error: a bucket may hold no run yet) but a root of runs named otherwise
        # would pass every night unseen
        err.print(f"note: no run found under {runs}. A run folder is named like "
                  "20261112-031502-abc123 (date, time, suffix), at any depth; a moltzap ledger "
                  "folder holds records.ndjson or completion.json.", markup=False, soft_wrap=True)
    if summary.unlisted:
        count = len(summary.unlisted)
        shown = "; ".join(f"{path} ({why})" for path, why in summary.unlisted[:5])
        raise fail(f"{count} folder{'s' if count > 1 else ''} under {runs} could not be listed, "
                   f"so the runs in {'them' if count > 1 else 'it'} were not found: {shown}"
                   f"{'; …' if count > 5 else ''}. Every run found was graded or refused and "
                   "committed; fix the cause said beside each (permissions, the disk, a "
                   "symlink) and rerun the same command: runs graded already are skipped.",
                   exit_codes.STORAGE)


def _refuse_misplaced_root(runs: str, out_dir: str, endpoint_url: str | None,
                           grade_id: str) -> None:
    """Exit 2, before any summary, when a runs root in which no run was found is something
    else: results, or a run folder (`grade.misplaced_root`; a local one is refused before the
    grade starts, an S3 one once its listing found nothing). Its grade record says so: not
    `finished`."""
    from .grade import misplaced_root
    from .sources.bucket import Bucket
    from .store import ResultStore

    problem = misplaced_root(Bucket(runs, endpoint_url), runs, out_dir)
    if not problem:
        return
    with contextlib.suppress(OSError):  # (a log, not data: the answer is the exit code)
        ResultStore(out_dir, endpoint_url).amend_grade(grade_id, status="failed", error=problem)
    raise fail(f"{problem}.", exit_codes.USAGE)


def _store_failed(exc: Exception) -> bool:
    """Whether `exc` says the runs or results store failed (a file system error, DuckDB's
    I/O error, a store that stopped answering): exit 4, not a traceback."""
    from .sources.outage import is_outage, no_credentials

    duckdb = sys.modules.get("duckdb")  # (a store error can come from it only if loaded)
    store = sys.modules.get("pipeline.store")
    return isinstance(exc, OSError) or is_outage(exc) or no_credentials(exc) or (
        duckdb is not None and isinstance(exc, duckdb.IOException)) or (
        store is not None and isinstance(exc, store.ResultsUnreadable))


def _damaged(exc: Exception) -> bool:
    """Whether `exc` says committed results are damaged (`store.ResultsDamaged`), in words
    that say what to do."""
    store = sys.modules.get("pipeline.store")  # (raised only where it was loaded)
    return store is not None and isinstance(exc, store.ResultsDamaged)


def _print_summary(summary, as_json: bool) -> None:
    if as_json:  # (not rich's print_json: FORCE_COLOR would colour it in a pipe too)
        _write_stdout(json.dumps(summary.as_dict(), indent=2).encode() + b"\n")
    else:
        print_summary(summary)


@contextlib.contextmanager
def _writing_results(nothing: str | None, doing: str, left: str,
                     usage: tuple[type[Exception], ...] = (FileNotFoundError,)):
    """The exit codes of a command that writes to the results under their lock (or reads
    them, see `_reading_results`): 2 for `usage` errors (the message, then `nothing`), 3 when
    a grade or a compaction holds the lock, 4 when a store failed while `doing` (permissions,
    credentials, an endpoint that does not answer; `left` says what is left of the results),
    130 for Ctrl-C, each saying so rather than with a traceback."""
    from .store import ResultsLocked

    previous = None
    if threading.current_thread() is threading.main_thread():  # (SIGTERM ends the command
        # with its message and exit code, as a grade's does: it died silently by the signal)
        previous = signal.signal(signal.SIGTERM, _terminated)
    try:
        yield
    except usage as exc:
        raise fail(f"{exc}; {nothing}" if nothing else str(exc), exit_codes.USAGE) from exc
    except ResultsLocked as exc:
        raise fail(str(exc), exit_codes.LOCKED) from exc
    except (KeyboardInterrupt, _Terminated, Exception) as exc:
        # (a signal in a query: DuckDB raises its own error in place of the handler's)
        from .catalog import interrupted, query_interrupted

        if isinstance(exc, _Terminated) or (query_interrupted(exc) and _TERMINATED.is_set()):
            raise fail(f"stopped by SIGTERM while {doing}. {left}; rerun the same command.",
                       exit_codes.STOPPED) from None
        if interrupted(exc):
            raise fail(f"interrupted (Ctrl-C) while {doing}. {left}; rerun the same command.",
                       exit_codes.INTERRUPTED) from None
        if not _store_failed(exc):
            raise
        if _damaged(exc):  # (says what to do)
            raise fail(f"{exc}. {left}.", exit_codes.STORAGE) from exc
        raise fail(f"a store failed while {doing}: {exc}. {left}; fix the cause (permissions, "
                   "credentials, endpoint) and rerun the same command.",
                   exit_codes.STORAGE) from exc
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


class _Terminated(BaseException):
    """SIGTERM, raised where the command was (see `_writing_results`)."""


_TERMINATED = threading.Event()  # SIGTERM came: a query it stopped was stopped by it


def _terminated(*_) -> None:
    _TERMINATED.set()
    raise _Terminated


def _reading_results():
    """`_writing_results` for a command that only reads the results."""
    return _writing_results(None, "reading the results", "Nothing was changed")


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
    table.add_column(overflow="fold")  # (a long path folds: cut, it would name nothing)
    table.add_row("runs found", f"{data['found']}  (new {data['new']}, changed "
                  f"{data['changed']}, unchanged {data['unchanged']})")
    table.add_row("skipped", f"{data['skipped']}" + (
        "  (--full: unchanged runs graded again)" if data["full"] else
        "  (unchanged since graded under this grader id)" if data["skipped"] else ""))
    table.add_row("graded", str(data["graded"]))
    refused = ", ".join(f"{k} {v}" for k, v in data["refusals"].items())
    table.add_row("refused", f"{data['refused']}" + (f"  ({refused})" if refused else ""))
    if data["stopped"]:  # (found counts the runs found before the stop, not all RUNS holds)
        table.add_row("[red]not graded[/]", f"{data['not_graded']}  (found before SIGTERM "
                      "stopped the grade; the rerun grades them, and finds the runs not "
                      "reached)")
    score = summary.mean_score  # (shown from the mean itself: the 2 decimals of the JSON's,
    table.add_row("mean overall score", "—" if score is None  # rounded again, went astray)
                  else numbers.shown(score, 1))
    table.add_row("verdicts", ", ".join(f"{k} {v}" for k, v in data["verdicts"].items()) or "—")
    if data["ledger_verdicts"]:
        table.add_row("ledger verdicts",
                      ", ".join(f"{k} {v}" for k, v in data["ledger_verdicts"].items()))
    if "judge" in data:
        j = data["judge"]
        table.add_row(f"judge {j['judge_id']}",
                      f"asked {j['asked']} (answered {j['answered']}, failed {j['failed']}), "
                      f"answered from cache {j['from_cache']}"
                      + (f", not asked (budget) {j['over_budget']}" if j["over_budget"] else ""))
    read, seconds = data["graded"] + data["refused"], data["elapsed_s"]
    table.add_row("time", f"{seconds:.1f} s" + (
        f"  ({_rate(read / seconds)} runs a second, graded or refused)" if read and seconds
        else ""))
    table.add_row("results", f"{data['results']}  (reports/ holds one JSON report per run)")
    if data["unlisted"]:
        table.add_row("[red]not listed[/]", f"{len(data['unlisted'])} folder(s) under the runs "
                      "root: the runs in them were not found (see the error below)")
    from .compact import COMPACT_AFTER

    for grader_id, merged in data.get("compacted", {}).items():
        table.add_row("compacted", f"{grader_id}: {merged} batches → 1")
    if data["uncompacted"] >= COMPACT_AFTER:
        table.add_row("compaction", f"{data['uncompacted']} batches since the last: "
                      f"`rungrade compact {data['results']}` would make queries faster")
    out.print(table)
    if not data["stopped"] and data["found"] != data["skipped"] + data["graded"] + data["refused"]:
        err.print("[bold red]counts do not add up: found != skipped + graded + refused[/]")


# The most runs `synth` writes at once (about 20 files each: 200 million files), and the
# highest index it starts at (a run's time is 53 s a run after the first's, in 2026: run ids
# stay within four-digit years)
SYNTH_MAX_RUNS = 10_000_000
SYNTH_MAX_START = 100_000_000


@_command()
def synth(
    out_dir: Annotated[Path, typer.Argument(
        metavar="OUT", parser=_file,
        help="Folder to write the run folders into (created if missing).")],
    runs: Annotated[int, typer.Option(
        "--runs", "-n", min=1, max=SYNTH_MAX_RUNS, help="How many runs.")] = 100,
    seed: Annotated[int, typer.Option(help="Seed: the same seed writes the same bytes.")] = 0,
    start: Annotated[int, typer.Option(
        min=0, max=SYNTH_MAX_START, help="Index of the first run: grow a corpus by writing "
                                         "runs START… of the same seed.")] = 0,
    workers: Annotated[int | None, typer.Option(
        min=1, help="Processes writing runs (default: one per core).")] = None,
) -> None:
    """Write a synthetic corpus of OpenProse run folders, for tests and benchmarks.

    Four programs, bindings of realistic sizes, errors with __error.md, conditional ensures, era B.

    Some runs must be refused: no program.md or manifest.md, unfinished, no outputs.

    Runs land in OUT/{project}/.prose/runs/; the same seed always writes the same bytes.

    Exit codes: 0 done; 2 bad arguments; 4 OUT could not be written (permissions, a full
    disk).
    """
    from .synth import synthesize

    with _writing_to(out_dir):
        summary = synthesize(str(out_dir), runs, seed=seed, start=start, workers=workers)
    table = Table(title=f"rungrade synth · seed {seed}", show_header=False, box=None,
                  pad_edge=False)
    table.add_column(style="bold")
    table.add_column()
    table.add_row("runs", f"{summary.runs}  (indexes {start}…{start + runs - 1})")
    table.add_row("files", f"{summary.files}  ({summary.bytes / 1e6:.1f} MB)")
    table.add_row("outcomes", ", ".join(f"{k} {v}" for k, v in summary.outcomes.items()))
    table.add_row("written to", str(out_dir))
    out.print(table)


@_command()
def sql(
    words: Annotated[list[str], typer.Argument(
        metavar="[results] query", show_default=False,
        help="SQL over the result views, or a path to a .sql file, in quotes; beside it, the "
             "results folder or s3:// prefix (or give it with --results).")],
    results: Annotated[str | None, typer.Option(
        "--results", "-r", show_default=False,
        help="Results folder or s3:// prefix (default: results).")] = None,
    csv: Annotated[Path | None, typer.Option(
        parser=_out_file,
        help="Also write the result as CSV to this file; `-` writes it to stdout instead of "
             "the table, for scripts.")] = None,
    endpoint_url: EndpointOpt = None,
) -> None:
    """Run SQL against the committed results (every table is a view; see README).

    `rungrade sql RESULTS "QUERY"`, `rungrade sql "QUERY" RESULTS` and `rungrade sql "QUERY"
    --results RESULTS` are the same, and so is a query that opens with an SQL comment
    (`-- …`, on a line of its own).

    Exit codes: 0 done; 2 no committed results, or the query failed (DuckDB's error is shown);
    4 a store failed, or a part of the results could not be read.
    """
    import duckdb

    if len(words) > 2:
        raise fail(f"got {len(words)} arguments where one query was expected: put the query in "
                   "quotes, as one argument (`rungrade sql RESULTS \"select …\"`)",
                   exit_codes.USAGE)
    if len(words) == 2 and all(_a_query(w) and not _a_folder(w) for w in words):
        raise fail(f"got two queries ({words[0]!r} and {words[1]!r}) where one query and the "
                   "results were expected: give one query, beside the results folder or "
                   "s3:// prefix (`rungrade sql RESULTS \"select …\"`)", exit_codes.USAGE)
    if len(words) == 2 and not _a_folder(words[0]) and (
            _a_folder(words[1]) or _a_query(words[0]) or not words[0].strip()):
        words = words[::-1]  # (the results given after the query: a query is no folder)
    *before, query = words
    if not before and _a_folder(query) and not _a_query(query):
        raise fail(f"{query} is a folder, not a query: give the query beside it, in quotes "
                   f"(`rungrade sql {query} \"select * from run_scores\"`)", exit_codes.USAGE)
    if before and results is not None:
        raise fail(f"the results are given twice ({before[0]} and --results {results}): give "
                   "them once, beside the query or with --results", exit_codes.USAGE)
    results = before[0] if before else results or "results"
    if query.endswith(".sql") and not Path(query).is_file():
        raise fail(f"{query}: no such file (a query ending in .sql is read from that file)",
                   exit_codes.USAGE)
    try:
        text = Path(query).read_text(encoding="utf-8") if query.endswith(".sql") else query
    except (OSError, UnicodeDecodeError) as exc:
        why = "it is not UTF-8 text" if isinstance(exc, UnicodeDecodeError) else (
            exc.strerror or str(exc))
        raise fail(f"cannot read the query in {query}: {why}", exit_codes.USAGE) from exc
    if not text.strip():
        raise fail(f"the query {'in ' + query + ' ' if query.strip() else ''}is empty: give a "
                   "statement, e.g. `rungrade sql RESULTS \"select * from run_scores\"`",
                   exit_codes.USAGE)

    from .catalog import flat_columns

    def question(con):
        rows = con.sql(text)
        if rows is None:  # a statement that returns no rows (`set`, `create view`)
            return None
        if csv is None:
            answer = rows.pl()
        else:  # a CSV holds no lists, maps nor structs: those as JSON text
            answer = rows.select(flat_columns(dict(zip(rows.columns, map(str, rows.types),
                                                       strict=True)))).pl()
        # (DuckDB answers such a statement with an empty `Success` or `Count` column)
        return None if answer.is_empty() and answer.columns in (["Success"], ["Count"]) \
            else answer

    try:  # (a store's failure is the exit code of `_reading_results`, not a failed query)
        df = _ask(results, endpoint_url, question, ours=False)
    except duckdb.Error as exc:
        raise fail(f"the query failed: {exc}", exit_codes.USAGE) from exc
    if df is None:
        out.print("done: the statement returns no rows")
        return
    if csv == Path("-"):
        _write_stdout(df.write_csv().encode())
        return
    if csv:
        _write_frame(df, csv, csv=True)
    _print_frame(df)


def _rate(per_second: float) -> str:
    """A rate as people read one: whole numbers from 10 up, two figures below (0.25, 3.5)."""
    return f"{per_second:,.0f}" if per_second >= 10 else f"{per_second:.2g}"


def _a_folder(path: str) -> bool:
    if not path.strip():  # (`Path("")` is the working folder)
        return False
    try:  # (a query longer than a file name may be makes the file system refuse to look)
        return path.startswith("s3://") or Path(path).is_dir()
    except OSError:
        return False


_SQL_START = re.compile(r"(?is)\s*(?:(?:select|with|from|describe|show|summarize|pivot|unpivot|"
                        r"explain|table|values|create|set|pragma|copy)\b|\(|--|/\*)")


def _a_query(word: str) -> bool:
    """`word` reads as SQL (or names a .sql file), not as a results folder."""
    return word.endswith(".sql") or bool(_SQL_START.match(word))


def _cell(value) -> str:
    return "" if value is None else (numbers.shown(value, 2) if isinstance(value, float)
                                     else str(value))


WORD_WHOLE = 40  # a text column whose cells are single words at most this long never folds
TEXT_LEAST = 24  # the least width of a column of text, which folds at its spaces


def _print_frame(df, limit: int = 50, title: str | None = None,
                 rename: dict[str, str] | None = None) -> None:
    from rich import box
    from rich.text import Text

    rows = [[_cell(v) for v in row] for row in df.head(limit).iter_rows()]
    table = Table(show_lines=False, title=title, box=box.SIMPLE_HEAD, pad_edge=False,
                  collapse_padding=True)
    needed = 2 * (df.width - 1) + 2  # (the space between columns, and the table's edges)
    for i, (col, dtype) in enumerate(df.schema.items()):
        # numbers and dates never fold, nor words (ids, verdicts: a run id folded in two, in
        # a table at the 80 columns of cron's mail, named no run); text takes what is left
        whole = dtype.is_numeric() or dtype.is_temporal() or all(
            len(r[i]) <= WORD_WHOLE and not any(c.isspace() for c in r[i]) for r in rows)
        name = (rename or {}).get(col, col)
        widest = max((len(r[i]) for r in rows), default=1)
        # text keeps a column wide enough to read, folding at spaces, and to hold its words
        # of up to WORD_WHOLE whole (an id beside a longer text folded as "…/v1" and "8")
        words = max((len(w) for r in rows for w in r[i].split()), default=1)
        least = widest if whole else max(min(widest, TEXT_LEAST), min(words, WORD_WHOLE))
        # a column that never folds keeps its name whole, else it folds at spaces (counted
        # by its longest word, a name such as "count(DISTINCT run_uri)" left its values blank)
        least = max(least, len(name) if whole else max(map(len, name.split() or [""])))
        needed += least
        # cells and names as Text: what the results hold is never read as markup ("[1]",
        # "[x]" and "[bold]" were dropped from evidence, and a stray "[/b]" failed the query)
        table.add_column(Text(name), overflow="fold", no_wrap=whole,
                         justify="right" if dtype.is_numeric() else "left", min_width=least)
    for row in rows:
        table.add_row(*map(Text, row))
    # on a terminal too narrow for the numbers, wider than it (the terminal wraps the lines):
    # rich cut the columns at its edge, 86.11 showing as 86 and the last columns gone
    width = out.width
    out.width = max(needed, width)
    try:
        out.print(table)
    finally:
        out.width = width
    if df.height > limit:
        out.print(f"… {df.height - limit} more rows")


ResultsArg = Annotated[str, typer.Argument(help="Results folder or s3:// prefix written by "
                                                 "`rungrade grade`.")]
OutOpt = Annotated[Path | None, typer.Option(
    "--out", "-o", parser=_out_file, help="Also write the rows to this file: .csv or .parquet.")]


def _ask(results: str, endpoint_url: str | None, question, ours: bool = True):
    """`question(con)` on the views of `results` (`catalog.ask`: asked again on a new
    connection when a compaction or a grade changed the results under it), with the exit
    codes of a command that reads them: 2 for no committed results or a question they cannot
    answer (`ResultsQueryError`: an unknown grader id, a bad date), 4 when a store failed.
    `ours`: the question's SQL is rungrade's, so DuckDB failing it says the results cannot
    be read (exit 4; else the caller says what failed)."""
    import duckdb

    from .analysis import ResultsQueryError
    from .catalog import ask

    try:
        with _reading_results():
            return ask(results, question, endpoint_url)
    except ResultsQueryError as exc:
        raise fail(str(exc), exit_codes.USAGE) from exc
    except duckdb.Error as exc:
        if not ours:
            raise
        raise fail(f"the results in {results} could not be read: {exc}. Nothing was changed; "
                   "a part may be damaged: grade into fresh results, or restore the part.",
                   exit_codes.STORAGE) from exc


def _check_out(path: Path | None) -> None:
    if path is not None and path.suffix.lower() not in (".csv", ".parquet"):
        raise fail(f"--out {path}: give a file name ending in .csv or .parquet",
                   exit_codes.USAGE)


def _write_frame(df, path: Path | None, csv: bool | None = None) -> None:
    """Write `df` to `path` (CSV when `csv`, by default when it ends in .csv, else Parquet);
    a path that cannot be written is a bad argument (exit 2), a disk that fails it exit 4,
    each told as such; written whole or not at all (`_replacing`)."""
    if path is None:
        return
    # written through a file opened once here: polars opens a path it is given twice, and a
    # pipe's reader took the first close for the end of the rows while the second open
    # waited for a reader that had gone
    with _replacing(path) as part, open(part, "wb") as file:
        if csv if csv is not None else path.suffix.lower() == ".csv":
            df.write_csv(file)
        else:
            df.write_parquet(file)
    err.print(f"wrote {df.height} rows to {escape(str(path))}")


@contextlib.contextmanager
def _replacing(path: Path):
    """A file beside `path` to write, which then replaces `path` whole: a write that fails
    midway (a full disk) leaves the file that was there as it was, not cut short. Failing,
    it exits as `_writing_to` says."""
    with _writing_to(path, replacing=True):
        if path.is_dir():  # (said as such, before a file is made beside it)
            raise IsADirectoryError(errno.EISDIR, "Is a directory", str(path))
        if path.exists() and not path.is_file():  # a device or a pipe (`/dev/null`,
            yield path  # `/dev/stdout`): written to, never replaced (v20 made a file of it)
            return
        # a link to a file is written through: its file is replaced, the link kept
        path = Path(os.path.realpath(path)) if path.is_symlink() else path
        path.parent.mkdir(parents=True, exist_ok=True)
        part = path.with_name(f".{path.name}.tmp-{os.getpid()}")
        try:
            yield part
            os.replace(part, path)
        finally:
            with contextlib.suppress(OSError):
                part.unlink()


# Errors of a file the user named that the disk, not the path, is to blame for: exit 4.
_DISK_ERRORS = (errno.ENOSPC, errno.EDQUOT, errno.EIO, errno.EROFS, errno.EFBIG)


@contextlib.contextmanager
def _writing_to(path: Path | str, replacing: bool = False):
    """Exit 2 with what to do when `path` (a file the user named) cannot be written: a folder
    there, a file where a folder of its path should be, no permission; exit 4 when the disk
    failed it (full, read-only, an I/O error). `replacing`: it is written by `_replacing`."""
    try:
        yield
    except IsADirectoryError as exc:
        raise fail(f"{path} is a folder: give the path of a file to write", exit_codes.USAGE
                   ) from exc
    except (FileExistsError, NotADirectoryError) as exc:
        raise fail(f"cannot write {path}: a file stands where a folder of its path should "
                   f"be ({exc.filename or exc})", exit_codes.USAGE) from exc
    except OSError as exc:
        # (polars' writers raise an OSError whose message alone holds the code: "(os error 28)")
        code = exc.errno or next((int(n) for n in re.findall(r"\(os error (\d+)\)", str(exc))),
                                 None)
        if code in _DISK_ERRORS:
            kept = "; a file that was there is as it was" if replacing else ""
            raise fail(f"cannot write {path}: {exc.strerror or exc}{kept}. Free space (or fix "
                       "the disk) and rerun the same command.", exit_codes.STORAGE) from exc
        raise fail(f"cannot write {path}: {exc.strerror or exc}", exit_codes.USAGE) from exc


@_command()
def grades(
    results: ResultsArg = "results",
    last: Annotated[int, typer.Option(min=1, help="Show the last N grades.")] = 14,
    out_file: Annotated[Path | None, typer.Option(
        "--out", "-o", parser=_out_file,
        help="Also write every grade's record to this file: .csv or .parquet "
             "(.parquet keeps the lists and maps whole).")] = None,
    endpoint_url: EndpointOpt = None,
) -> None:
    """The grade log: when each `rungrade grade` on RESULTS ran, and whether it finished.

    What each grade found, skipped, graded, refused and could not list (the `grades` view),
    and each that ran with other library versions than the grade before it.

    A grade killed outright (or whose machine was lost) shows `interrupted` once no process
    holds the results lock; its record says `running` until the next grade or compaction.

    Exit codes: 0 done; 2 RESULTS holds no grade log; 4 a store failed (or no S3 credentials).
    """
    import polars as pl

    from .analysis import recent_grades, version_changes
    from .catalog import read_grades
    from .store import GRADES

    _check_out(out_file)
    damaged: list[str] = []
    with _reading_results():
        log = read_grades(results, endpoint_url, damaged=damaged)
    if damaged:
        more = ", …" if len(damaged) > 5 else ""
        err.print(f"{len(damaged)} grade record(s) of {results} are damaged (not a grade's "
                  f"JSON record: cut short?) and left out: {', '.join(damaged[:5])}{more}. "
                  f"Remove them from {GRADES}/ (or restore them) to see the log whole.",
                  soft_wrap=True, markup=False)
    shown = recent_grades(log, last)  # (narrow enough for a terminal)
    _print_frame(shown, limit=last, title=f"the last {shown.height} of {log.height} grades "
                                          f"on {results}")
    for row in log.tail(last).filter(pl.col("error").is_not_null()).iter_rows(named=True):
        # (a finished grade's error is its --compact-after's: the grade itself did not fail)
        said = "failed" if row["status"] != "finished" else "finished, but"
        err.print(f"{row['grade_id']} {said}: {row['error']}", soft_wrap=True, markup=False)
    ended = {"stopped": "was stopped by SIGTERM at a batch boundary",
             "interrupted": "was interrupted (Ctrl-C, or killed)"}
    latest = log["grade_id"][-1] if log.height else None
    for row in log.tail(last).filter(pl.col("status").is_in(list(ended))).iter_rows(named=True):
        # (once a later grade ran, the rest was that grade's to do: no advice that is stale)
        then = ("the next grade of the same runs grades the rest" if row["grade_id"] == latest
                else "a later grade has run since")
        err.print(f"{row['grade_id']} {ended[row['status']]}: the batches it committed stand; "
                  f"{then}", soft_wrap=True, markup=False)
    for row in log.tail(last).filter(pl.col("unlisted").list.len() > 0).iter_rows(named=True):
        err.print(f"{row['grade_id']} could not list: " + "; ".join(
            f"{u['path']} ({u['error']})" for u in row["unlisted"]), soft_wrap=True, markup=False)
    for grade_id, moved in version_changes(log, last):
        err.print(f"{grade_id} ran with other versions than the grade before it: {moved}; its "
                  "verdicts may differ from earlier ones under the same grader id (`make` "
                  "installs the versions of constraints.txt)", soft_wrap=True, markup=False)
    if out_file is not None:  # CSV holds no lists nor maps: JSON text there
        _write_frame(read_grades(results, endpoint_url, flat=True)
                     if out_file.suffix.lower() == ".csv" else log, out_file)


@_command()
def compact(
    results: ResultsArg = "results",
    everything: Annotated[bool, typer.Option(
        "--all", help="Rewrite all of each grader id's batches as one, the batches compacted "
                      "before too (default: only those graded since its last compaction).")]
    = False,
    endpoint_url: EndpointOpt = None,
) -> None:
    """Rewrite each grader id's batches graded since its last compaction as one batch.

    One part per table: every view shows the same rows; queries open a few files, not thousands.

    Run it now and then (weekly, say) on results that grow every night; --all now and then too.

    It holds the results lock, as a grade does; a kill leaves every view as it was.

    Exit codes: 0 done; 2 no committed results; 3 the results locked; 4 a store failed.
    """
    from .compact import compact as compact_results

    bar = _progress_bar() if sys.stderr.isatty() else None
    with _writing_results("nothing to compact.", "compacting", "The results are as they were "
                          "(or compacted, for the grader ids done)"):
        if bar is not None:
            with bar:
                task = bar.add_task("reading the commits", total=None)
                done = compact_results(results, endpoint_url, everything, lambda what, n, of:
                                       bar.update(task, description=what, completed=n,
                                                  total=of))
        else:
            done = compact_results(results, endpoint_url, everything)
    if not done.batches:
        out.print(f"nothing to compact: no grader id of {results} has two batches "
                  f"{'' if everything else 'since its last compaction '}to merge")
        return
    for grader_id, merged in done.merged.items():
        out.print(f"{grader_id}: {merged} batches → 1")
    out.print(f"{done.files_before} Parquet files → {done.files_after} in "
              f"{done.elapsed_s:.1f} s; every view shows the same rows")


@_command()
def catalog(results: ResultsArg = "results", endpoint_url: EndpointOpt = None) -> None:
    """Write RESULTS/catalog.duckdb again, for the folder where it is now.

    Its views read the Parquet parts by the folder's absolute path; every grade writes it.

    After a copy of the results folder, its catalog's queries stop: "read from another place".

    After a move, they find no files where the folder was. This writes it for the folder given.

    Exit codes: 0 written; 2 nothing committed there, or S3; 3 results locked; 4 a store failed.
    """
    from .catalog import rewrite_catalog

    del endpoint_url  # (taken as by every command: results on S3 have no catalog file)

    with _writing_results("no catalog written.", "writing the catalog",
                          "The results are as they were", usage=(FileNotFoundError, ValueError)):
        path = rewrite_catalog(results)
    out.print(f"wrote {escape(path)}: its views read the results in {escape(results)}",
              soft_wrap=True)


TREND_ROWS = 1000  # days shown per grader id by `rungrade trend`: the newest


@_command()
def trend(
    results: ResultsArg = "results",
    program: Annotated[str | None, typer.Option(help="Only this program.")] = None,
    since: Annotated[str | None, typer.Option(help="Only days on or after this date, "
                                                   "YYYY-MM-DD.")] = None,
    grader_id: Annotated[str | None, typer.Option("--grader-id", parser=_word,
                                                  help="Only this grader id.")] = None,
    out_file: OutOpt = None,
    endpoint_url: EndpointOpt = None,
) -> None:
    """Runs, scores and verdicts per grader id × program × day (the `trends` mart).

    A run's day is the date its run id starts with.

    Exit codes: 0 done (also when no day matches); 2 no results, unknown id or bad date;
    4 a store failed, or a part of the results could not be read.
    """
    import polars as pl

    from .analysis import trends

    _check_out(out_file)
    df = _ask(results, endpoint_url,
              lambda con: trends(con, program=program, since=since, grader_id=grader_id))
    if df.is_empty():
        err.print("no runs match these filters")
    # one table per grader id, verdict counts in one column: narrow enough for a terminal
    def counts(*verdicts: str) -> pl.Expr:
        return pl.concat_str(
            [pl.when(pl.col(v) > 0).then(pl.format("{} {}", pl.col(v), pl.lit(v.replace("_", " "))))
             for v in verdicts], separator=", ", ignore_nulls=True)

    shown = df.select(
        "grader_id", *([] if program else [pl.col("program").fill_null("(unknown)")]), "day",
        "runs", "refused",
        pl.col("mean_overall_score").alias("mean"), pl.col("median_overall_score").alias("median"),
        counts("satisfied", "partial", "violated", "not_evaluable").alias("run verdicts"),
        counts("passed", "failed", "undecided").alias("outcomes"))
    for (grader,), part in shown.partition_by("grader_id", as_dict=True,
                                              maintain_order=True).items():
        # the newest days: a longer history is cut at its oldest end, not its newest
        _print_frame(part.drop("grader_id").tail(TREND_ROWS), limit=TREND_ROWS,
                     title=f"{grader}: runs per day")
        if part.height > TREND_ROWS:
            out.print(f"… and {part.height - TREND_ROWS} earlier rows, left out (all of them: "
                      "--out FILE; or narrow the days with --since)")
    _write_frame(df, out_file)


ResultsAndIds = Annotated[list[str] | None, typer.Argument(
    metavar="[results] [base head]", show_default=False,
    help="Results folder or s3:// prefix written by `rungrade grade` (default: results); "
         "after it, the two grader ids to compare may be given as --base and --head give them.")]


def _results_and_ids(words: list[str] | None, base: str | None, head: str | None
                     ) -> tuple[str, str | None, str | None]:
    """(results, base, head) from the words of `rungrade diff` or `report`: the results,
    then two grader ids (or none: --base and --head, or the defaults)."""
    from .checks.grader import GRADER_ID

    words = words or []
    ids = [w for w in words if GRADER_ID.match(w)]
    others = [w for w in words if not GRADER_ID.match(w)]
    if len(others) > 1 or len(ids) not in (0, 2):
        raise fail(f"expected the results and two grader ids, base then head, as in "
                   f"`RESULTS prose.contract.grader/v15 prose.contract.grader/v16`; got "
                   f"{' '.join(words)}", exit_codes.USAGE)
    if ids and (base or head):
        raise fail("the grader ids are given twice: give them after the results or with "
                   "--base and --head, not both", exit_codes.USAGE)
    return (others[0] if others else "results", *(ids or (base, head)))


@_command()
def diff(
    words: ResultsAndIds = None,
    base: Annotated[str | None, typer.Option(
        parser=_word,
        help="Grader id to compare from (default: an earlier version of the head's grader "
             "that graded some of its runs from the same files, else the newest other id "
             "that did).")] = None,
    head: Annotated[str | None, typer.Option(
        parser=_word,
        help="Grader id to compare to (default: the newest grader id that can be compared "
             "with another).")] = None,
    limit: Annotated[int, typer.Option(min=0, help="Rows to show per table.")] = 20,
    out_file: Annotated[Path | None, typer.Option(
        "--out", "-o", parser=_out_file,
        help="Also write every paired clause (base and head verdicts, `flipped`) to this "
             "file: .csv or .parquet.")] = None,
    endpoint_url: EndpointOpt = None,
) -> None:
    """What changed between two grader ids on the runs both graded from the same files.

    Shows the paired mean score delta (95% CI), verdict flips, runs that moved, flipped clauses.

    "Most recent" grader id = the one whose first committed batch is newest.

    Exit codes: 0 done; 2 no results, an unknown grader id, or fewer than two grader ids;
    4 a store failed, or a part of the results could not be read.
    """
    import polars as pl

    from .analysis import version_diff

    results, base, head = _results_and_ids(words, base, head)
    _check_out(out_file)
    d = _ask(results, endpoint_url, lambda con: version_diff(con, base, head))
    s = d.summary
    facts = Table(title=f"{d.base} → {d.head}", show_header=False, box=None, pad_edge=False)
    facts.add_column(style="bold")
    facts.add_column()
    facts.add_row("runs compared", f"{s['shared_runs']} (graded by both from the same files)")
    if s["changed_runs"]:  # (a grader is compared with another on the same files only)
        facts.add_row("runs not compared", f"{s['changed_runs']} (graded by both, their files "
                      "changed between the two grades: grade the runs again under both ids, "
                      "each grade skipping the runs unchanged since, to compare them)")
    if s["mean_score_delta"] is None:
        facts.add_row("mean score delta", "— (no run has a score under both)")
    else:
        # (to 2 decimals, as the tables: -0.04 is short of zero, where -0.0 read as touching
        # it, and a mean of 0.01 shown 0.0 sat off the middle of its interval)
        ci = ("" if s["ci95_low"] is None else f"  (95% CI {numbers.shown(s['ci95_low'], 2, True)}"
              f" to {numbers.shown(s['ci95_high'], 2, True)})")
        facts.add_row("mean score delta", f"{numbers.shown(s['mean_score_delta'], 2, True)}{ci} "
                      f"over {s['runs_paired']} runs")
    facts.add_row("runs whose verdict changed", str(s["runs_verdict_changed"]))
    facts.add_row("runs whose outcome changed", f"{s['runs_outcome_changed']} (failed > "
                  "undecided > passed over the run's checks: a ledger's own verdict)")
    facts.add_row("clauses flipped", f"{s['clauses_flipped']} of {s['clauses_paired']} paired")
    if s["clauses_only_base"] or s["clauses_only_head"]:
        facts.add_row("clauses under one id only",
                      f"{s['clauses_only_base']} base, {s['clauses_only_head']} head")
    out.print(facts)
    flips = d.flips.filter(pl.col("flipped")).select("from_verdict", "to_verdict", "clauses")
    if flips.is_empty():
        out.print("no clause changed its verdict")
    else:
        _print_frame(flips, title="Verdict flips")
    moved = d.moved
    if not moved.is_empty():
        def moved_from(base: str, head: str, changed: str) -> pl.Expr:
            return pl.when(pl.col(changed)).then(pl.format("{}→{}", base, head)).otherwise(head)

        _print_frame(moved.select("run_id", "program", pl.col("base_score").alias("base"),
                                  pl.col("head_score").alias("head"),
                                  pl.col("score_delta").alias("delta"),
                                  moved_from("base_verdict", "head_verdict",
                                             "verdict_changed").alias("run verdict"),
                                  moved_from("base_outcome", "head_outcome",
                                             "outcome_changed").alias("outcome")),
                     limit=limit, title="Runs whose score or verdict moved (largest first)")
    if not d.flipped.is_empty():
        _print_frame(d.flipped.select("run_id", "service", "text", "flip"), limit=limit,
                     title="Flipped clauses")
    _write_frame(d.clauses.select(pl.lit(d.base).alias("base_grader_id"),
                                  pl.lit(d.head).alias("head_grader_id"), pl.all()), out_file)


@_command()
def report(
    words: ResultsAndIds = None,
    html_out: Annotated[Path, typer.Option("--html", "--out", "-o", parser=_out_file,
                                           help="Write the HTML page here.")]
    = Path("report.html"),
    base: Annotated[str | None, typer.Option(
        parser=_word,
        help="Grader id the flip matrix compares from (default: as `rungrade diff` picks "
             "it).")] = None,
    head: Annotated[str | None, typer.Option(
        parser=_word,
        help="Grader id the flip matrix compares to (default: as `rungrade diff` picks "
             "it).")] = None,
    endpoint_url: EndpointOpt = None,
) -> None:
    """Write one offline HTML page: score distribution, trends, flip matrix of two grader ids.

    Charts are embedded as PNG images; the page loads nothing from the network.

    Exit codes: 0 done; 2 no results or an unknown grader id; 4 a store failed, or a part of
    the results could not be read.
    """
    from .html_report import build_report

    results, base, head = _results_and_ids(words, base, head)
    page = _ask(results, endpoint_url,
                lambda con: build_report(con, results, base, head, endpoint_url))
    with _replacing(html_out) as part:
        part.write_text(page, encoding="utf-8")
    out.print(f"wrote {escape(str(html_out))} ({len(page) // 1024} KiB)")


class _HelpConsole(_Console):
    """typer's console for `--help` and usage errors, which click prints before any command
    runs: help whose reader closed the pipe (`rungrade --help | head -1`) exits 141, not
    rich's 1, and help on a full disk exits 4 with a line, not a traceback (see
    `_output_failed`); a usage error that cannot be said keeps its exit code, 2."""

    def on_broken_pipe(self) -> None:
        super().on_broken_pipe()
        if not self.stderr:
            raise SystemExit(exit_codes.PIPE_CLOSED)

    def could_not_write(self, exc: OSError) -> None:
        super().could_not_write(exc)
        if not self.stderr:
            with contextlib.suppress(OSError):
                sys.stderr.write(f"error: the help could not be written "
                                 f"({exc.strerror or exc}).\n")
            raise SystemExit(exit_codes.STORAGE) from None


def _comments_first(args: list[str]) -> list[str]:
    """`rungrade sql`'s `args` with a query that opens with an SQL comment (`-- …`) moved
    after `--`, where it reads as the query, not as an option no command has ("No such
    option: -- top…" before). No option's name holds a space or a line break; such a query
    does. Its other arguments and options keep their order; those after a `--` already given
    stay after it."""
    if not args or args[0] != "sql":
        return args
    given = args.index("--") if "--" in args else len(args)
    queries = [w for w in args[1:given] if w.startswith("--") and any(c.isspace() for c in w)]
    if not queries:
        return args
    return [*(w for w in args[:given] if w not in queries), "--", *queries, *args[given + 1:]]


def main() -> None:
    """The console entry point (`rungrade`): the app, its help printed by `_HelpConsole`."""
    from typer import rich_utils

    rich_utils.Console = _HelpConsole  # (the class typer makes its consoles of)
    try:
        app(args=_comments_first(sys.argv[1:]))
    except SystemExit as exc:
        # typer ends a Ctrl-C while it reads the arguments with 130 and not a word; once a
        # command's code runs, `_command` says what the Ctrl-C left
        if exc.code == exit_codes.INTERRUPTED and not _COMMAND_STARTED:
            sys.stderr.write(exit_codes.INTERRUPTED_EARLY)
        raise
