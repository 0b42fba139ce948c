"""The fork server that worker processes come from (kept free of heavy imports).

Grading workers (and `rungrade synth`'s writers) are forked from a clean server process, never
from the calling one: polars' and DuckDB's thread pools are never inherited mid-use (a fork
of a process that has used polars can deadlock, and a forked pytest process once crashed in
garbage collection). The server imports the grading code once; every worker forked from it
starts with it loaded. `start_early` starts the server before the command imports polars
itself, so the two imports run side by side.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import pickle
import signal
import sys
import threading
import traceback
from collections.abc import Iterator

# What grading workers run with: polars on one thread (one worker per core: a pool of its own
# in each would only compete with the other workers for the same cores), and polars'
# allocator (jemalloc) with one arena instead of four per core, so a worker's few threads
# reuse the pages one another freed: the 10,000-run grade peaked at 665-687 MiB PSS against
# 692-732 (each worker about 20 MiB less RSS), its CPU unchanged. What the user set is kept.
ONE_ARENA = "narenas:1"


def worker_environment() -> dict[str, str]:
    """The variables grading workers start with (see ONE_ARENA). polars itself sets
    `_RJEM_MALLOC_CONF` as it is imported (its own decay times, then the value it found), so
    the arena count is added to whatever is there, unless that names one already."""
    conf = os.environ.get("_RJEM_MALLOC_CONF", "")
    if "narenas:" not in conf:
        conf = f"{conf},{ONE_ARENA}" if conf else ONE_ARENA
    return {"POLARS_MAX_THREADS": os.environ.get("POLARS_MAX_THREADS", "1"),
            "_RJEM_MALLOC_CONF": conf}


@contextlib.contextmanager
def environ_set(values: dict[str, str]) -> Iterator[dict[str, str]]:
    """This process's environment with `values` (which it yields) while processes are
    started (they inherit it), then left as it was."""
    before = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield values
    finally:
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def worker_environ() -> contextlib.AbstractContextManager[dict[str, str]]:
    """`environ_set` with `worker_environment`, while workers are started."""
    return environ_set(worker_environment())


def process_context():
    """The multiprocessing context of grading workers, with its fork server running."""
    ctx = multiprocessing.get_context("forkserver")
    _socket_folder()
    # DuckDB and pyarrow too (DuckDB reads polars frames through pyarrow): the grading code
    # imports them on first use, which in a worker is its first shard
    ctx.set_forkserver_preload(["pipeline.fork_server", "pipeline.grade", "duckdb", "pyarrow"])
    if threading.current_thread() is threading.main_thread():
        from multiprocessing import forkserver

        # (a Ctrl-C in those milliseconds was lost, ignored, and the grade went on to its end)
        with stops_held_while_starting(), worker_environ():  # (the server's, for its workers)
            forkserver.ensure_running()
    return ctx


STOPS = (signal.SIGTERM, signal.SIGINT)


@contextlib.contextmanager
def stops_held_while_starting() -> Iterator[None]:
    """Processes started inside (by this thread, or by threads started inside) are born with
    SIGTERM and SIGINT blocked, and keep them so (a mask survives fork and exec): a stop
    sent to the whole process group is this process's alone to answer. This process holds
    one that comes meanwhile, and answers it as the block ends, with its own handler.

    Before, the two were ignored meanwhile (ignored signals survive exec too), and one that
    came was lost: the grade went on to its end. Blocking them here alone was not enough:
    the kernel gives a stop to any thread that does not block it (polars' own threads, say),
    and that thread dropped an ignored one. Here they keep a handler that any thread may
    run, which notes the stop; the main thread answers it once the block ends. In the main
    thread only (handlers are set there); elsewhere nothing is changed."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    start_resource_tracker()  # (its start unblocks these signals: started first)
    came: list[int] = []
    previous = [signal.signal(stop, lambda signum, _: came.append(signum)) for stop in STOPS]
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, STOPS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
        for stop, handler in zip(STOPS, previous, strict=True):
            signal.signal(stop, handler)
        for stop in dict.fromkeys(came):  # (each once, in the order they came)
            signal.raise_signal(stop)


# The resource tracker's warnings (a filter's message holds no colon: "resource_tracker"
# opens each of them, that of resources left behind among them)
LEAKED = "ignore:resource_tracker:UserWarning:multiprocessing.resource_tracker"


def start_resource_tracker() -> None:
    """multiprocessing's resource tracker, started if it is not running, so that it never
    warns of the semaphores of this process's pools that it removes when this process is
    killed (`kill -9`, the OOM killer): a kill leaves the removal to it, and its warning
    ("There appear to be 5 leaked semaphore objects to clean up at shutdown", with the line
    of code that warned) came on standard error after the process had gone, under a
    shell's prompt. It reads the filter from the environment it starts with."""
    from multiprocessing import resource_tracker

    before = os.environ.get("PYTHONWARNINGS")
    with environ_set({"PYTHONWARNINGS": f"{before},{LEAKED}" if before else LEAKED}):
        resource_tracker.ensure_running()


SOCKET_PATH_MAX = 107  # bytes of a Unix socket's path (sun_path holds 108, with a final NUL)
SOCKET_NAME = len("/pymp-12345678/listener-12345678")  # what multiprocessing adds to it


def _socket_folder() -> None:
    """Have multiprocessing keep this process's sockets (the fork server's) in /tmp when the
    temporary folder's path is too long for one: under a TMPDIR of more than 75 bytes the
    grade ended with a traceback (`AF_UNIX path too long`) before it graded anything. The
    folder is taken once per process (`multiprocessing.util.get_temp_dir`): taken here first.
    """
    import tempfile
    from multiprocessing import util

    if (len(os.fsencode(tempfile.gettempdir())) + SOCKET_NAME <= SOCKET_PATH_MAX
            or not os.access("/tmp", os.W_OK | os.X_OK)):
        return
    previous, tempfile.tempdir = tempfile.tempdir, "/tmp"
    try:
        util.get_temp_dir()
    finally:
        tempfile.tempdir = previous


# What a worker forked from the server raises while it reads what the process that asked for
# it sends (the process object, its locks), when that process went away or let go of them
# mid-start: a Ctrl-C or a kill while workers start. The server printed each such traceback
# under the grade's own message ("interrupted (Ctrl-C) …"), the grade already ending.
ABANDONED_START = (EOFError, pickle.UnpicklingError, OSError)


def quiet_abandoned_starts() -> None:
    """Leave out, in this process (the fork server, see `pipeline.fork_server`) and the
    workers forked from it, the traceback of a worker start abandoned by the process that
    asked for it (ABANDONED_START, raised while `multiprocessing.spawn` reads what it sent).
    If that process is still there, it sees the worker end and says so itself; any other
    error is shown as before."""
    shown = sys.excepthook

    def hook(kind, value, tb):
        if issubclass(kind, ABANDONED_START) and any(
                frame.f_code.co_name == "_main"
                and frame.f_code.co_filename.endswith(os.path.join("multiprocessing", "spawn.py"))
                for frame, _ in traceback.walk_tb(tb)):
            return
        shown(kind, value, tb)

    sys.excepthook = hook


def start_early(runs: str, results: str, *, full: bool, workers: int | None) -> None:
    """Start the fork server now when this grade will surely grade runs in worker processes:
    more than one worker, runs to read, and `--full` or local results with nothing committed
    yet. A rerun that may find nothing to grade starts it only when it does (see
    grade._Engine)."""
    if (workers or os.cpu_count() or 1) <= 1 or ("://" not in runs and not os.path.isdir(runs)):
        return
    if full or ("://" not in results and not _has_commits(results)):
        process_context()


def _has_commits(results: str) -> bool:
    try:
        with os.scandir(os.path.join(results, "_commits")) as entries:
            return any(True for _ in entries)
    except OSError:
        return False
