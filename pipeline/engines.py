"""Where the grade's tasks run: worker processes on this machine, or a Dask cluster.

`grade_runs` discovers runs, cuts them into shards and publishes batches itself; an engine only
decides where each task (`_list_task`, `_grade_task` in pipeline/grade.py) runs. The local
engine (`grade._Engine`) uses process pools; `DaskEngine` submits the same tasks to a Dask
cluster, either one at `scheduler` or a LocalCluster it starts on loopback. Dask is imported
only when a Dask engine starts, so the plain install does not need it.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from .processes import stops_held_while_starting, worker_environ

if TYPE_CHECKING:
    from .checks.grader import Grader
    from .checks.ledger import LedgerGrader
    from .judging import Judge

TASK_RETRIES = 2  # a task that raises (a flaky store) runs again before the grade fails
# Settings of the LocalCluster the engine starts (a cluster of your own, --scheduler, keeps
# its own): the workers' sampling profiler and their event loops' 20 ms tick and 100 ms
# memory check take the GIL from the grading task many times a second, for a dashboard
# nobody watches here (6-8% of a grade on two cores together).
LOCAL_CLUSTER_CONFIG = {
    "distributed.worker.profile.enabled": False,
    "distributed.admin.tick.interval": "1s",
    "distributed.worker.memory.monitor-interval": "1s",
}
# How a worker's log begins what it says when its heartbeat finds the scheduler gone, or not
# knowing it (distributed.worker.Worker.heartbeat)
HEARTBEAT_LOST = ("Failed to communicate with scheduler during heartbeat",
                  "Scheduler was unaware of this worker")
DASK_INSTALL_HINT = "install the Dask extra: pip install 'rungrade[dask]'"


class TaskFuture(Protocol):
    def result(self, timeout: float | None = None) -> Any: ...


class Engine(Protocol):
    """What `grade_runs` asks of an engine: run a task somewhere, hand back its future."""

    workers: int  # tasks that run at once; shards are sized from it
    generation: int  # counts recoveries: a task's failure after one is an old death

    def submit_list(self, fn: Callable, *args) -> TaskFuture: ...

    def submit_grade(self, fn: Callable, *args) -> TaskFuture: ...

    def recover(self) -> None:
        """Make the engine usable again after a worker died mid-task."""

    def recover_lists(self) -> None:
        """Make listing usable again after a worker died mid-listing."""

    def close(self, cancel: bool = False) -> None: ...


EngineFactory = Callable[[int, "Grader", "tuple[LedgerGrader, ...]", "Judge | None"], Engine]


class EngineError(RuntimeError):
    """The engine could not start: Dask missing, or its scheduler unreachable."""


@dataclass(frozen=True)
class DaskSpec:
    """A Dask engine to start: on the cluster at `scheduler`, or on a LocalCluster of `workers`
    processes (one per core when None). Call it like an `EngineFactory`."""

    scheduler: str | None = None
    workers: int | None = None

    def __call__(self, workers: int, grader: Grader, ledger_graders: tuple[LedgerGrader, ...],
                 judge: Judge | None) -> DaskEngine:
        return DaskEngine(self, grader, ledger_graders, judge)


def _user_modules() -> list[tuple[str, str, str]]:
    """(name, file, source) of the user grader modules loaded here, to load on each worker:
    a worker on another machine may not have the file."""
    found = []
    for name, module in list(sys.modules.items()):
        path = getattr(module, "__file__", None)
        if name.startswith("rungrade_user_grader_") and path and os.path.exists(path):
            with open(path, encoding="utf-8") as handle:
                found.append((name, path, handle.read()))
    return found


_LOADED: dict[str, tuple] = {}  # per worker process: the graders of each grade, by its token


def _with_graders(token: str, payload: tuple[list[tuple[str, str, str]], bytes],
                  fn: Callable, *args):
    """On a Dask worker: make this grade's graders current, then run `fn(*args)`."""
    import types

    from . import grade, scratch

    graders = _LOADED.get(token)
    if graders is None:
        modules, blob = payload
        for name, path, source in modules:
            if name not in sys.modules:  # the user's own --grader file, as the local engine does
                module = types.ModuleType(name)
                module.__file__ = path
                sys.modules[name] = module
                exec(compile(source, path, "exec"), module.__dict__)
        if len(_LOADED) >= 4:  # a long-lived worker serves many grades: keep the recent ones
            _LOADED.clear()
        graders = _LOADED[token] = pickle.loads(blob)
    grade._WORKER.update(grader=graders[0], ledger_graders=graders[1], judge=None)
    scratch.THREADS = 1  # each task's DuckDB on one thread: a worker thread runs one task
    return fn(*args)


class DaskEngine:
    """Tasks as Dask tasks; a judge, which keeps one budget and cache per grade, keeps the
    grading in this process (as the local engine does)."""

    def __init__(self, spec: DaskSpec, grader: Grader,
                 ledger_graders: tuple[LedgerGrader, ...], judge: Judge | None):
        try:
            import distributed  # noqa: F401
        except ImportError as exc:
            raise EngineError(f"--engine dask needs Dask: {DASK_INSTALL_HINT}") from exc
        self.cluster = None
        try:
            self._start(spec, grader, ledger_graders, judge)
        except BaseException:  # (a Ctrl-C held while the cluster started comes right after)
            self.close()
            raise

    def _start(self, spec: DaskSpec, grader: Grader, ledger_graders: tuple[LedgerGrader, ...],
               judge: Judge | None) -> None:
        from distributed import Client, LocalCluster

        if spec.scheduler:
            try:
                self.client = Client(spec.scheduler, timeout="20s")
            except ValueError as exc:  # ("missing port number in address ...")
                raise EngineError(
                    f"--scheduler {spec.scheduler} is not a scheduler's address ({exc}): give "
                    "it as `dask scheduler` prints it, e.g. tcp://10.0.0.5:8786") from exc
            except (OSError, TimeoutError) as exc:
                raise EngineError(
                    f"could not reach the Dask scheduler at {spec.scheduler} ({exc}). Check "
                    "the address `dask scheduler` printed, and that this machine can reach "
                    "it.") from exc
        else:
            import dask

            # One task at a time per worker process, with the environment of the local
            # engine's workers (`worker_environment`: polars on one thread, its allocator
            # with one arena). Set before the worker process starts: a worker imports polars
            # before `env` would apply, and its pool would then have a thread per core. A
            # nanny takes each variable its config names from this process's environment if
            # it is there (polars has set its allocator's), as it is made, for every start
            # of its worker.
            with stops_held_while_starting(), worker_environ() as environ, dask.config.set(
                    {**LOCAL_CLUSTER_CONFIG,
                     **{f"distributed.nanny.pre-spawn-environ.{name}": value
                        for name, value in environ.items()}}):
                self.cluster = LocalCluster(
                    n_workers=spec.workers or os.cpu_count() or 1, threads_per_worker=1,
                    processes=True, host="127.0.0.1", dashboard_address=":0")
            self.client = Client(self.cluster)
            # (after the cluster starts: a worker a nanny starts again gets it too)
            self.client.register_plugin(_stop_signals_ignored_on_workers(), name="rungrade-stop")
        self.workers = max(1, sum(self.client.nthreads().values()))
        self.grade_inline = judge is not None
        if self.grade_inline:
            from . import grade

            grade._WORKER.update(grader=grader, ledger_graders=ledger_graders, judge=judge)
            self.graders = None
        else:
            self.payload = (_user_modules(), pickle.dumps((grader, ledger_graders)))
            [self.graders] = self.client.scatter([self.payload], broadcast=True, hash=False)
        self.token = os.urandom(8).hex()
        self.generation = 0  # counts recoveries after workers died

    def recover(self) -> None:
        """After workers died: scatter the graders again (the copies they held are gone, and
        tasks that need them would be cancelled for lost dependencies)."""
        if not self.grade_inline:
            [self.graders] = self.client.scatter([self.payload], broadcast=True, hash=False)
        self.generation += 1

    def recover_lists(self) -> None:
        """Nothing to do: Dask replaces a dead worker itself (its listing task, retried
        there TASK_RETRIES times, is listed in the grading process after that)."""

    def submit_list(self, fn: Callable, *args) -> TaskFuture:
        return self.client.submit(fn, *args, pure=False, retries=TASK_RETRIES)

    def submit_grade(self, fn: Callable, *args) -> TaskFuture:
        if self.grade_inline:
            from .grade import _Engine

            return _Engine._submit(None, fn, args)
        return self.client.submit(_with_graders, self.token, self.graders, fn, *args,
                                  pure=False, retries=TASK_RETRIES)

    def close(self, cancel: bool = False) -> None:
        # closing the client releases its futures: the scheduler drops tasks nobody wants
        with contextlib.suppress(Exception):
            self.client.close()
        if self.cluster is not None:
            with contextlib.suppress(Exception):
                self.cluster.close()


def _stop_signals_ignored_on_workers():
    """A worker plugin that makes the LocalCluster's workers ignore SIGINT once more after
    polars is imported: polars installs its own handler when imported, whatever was ignored
    before, and turns a Ctrl-C into a KeyboardInterrupt inside the task it is running (each
    worker printed its traceback, a hundred lines or more, before the grade's one-line
    message). Its `setup` runs on the worker's main thread, where signal handlers are set.
    The tasks a stopped grade leaves are cancelled: a worker's warning for each that ended so
    is left out. So is a worker's heartbeat that meets the scheduler gone, when the grade
    closes the cluster between the worker's heartbeat and its answer (a traceback of forty
    lines under a finished grade's summary, now and then): the grading process sees a worker
    lost while it grades for itself."""
    from distributed import WorkerPlugin

    from .grade import _ignore_stop_signals

    class StopSignalsIgnored(WorkerPlugin):
        def setup(self, worker) -> None:
            import logging

            import polars  # noqa: F401  (its handler set first, then replaced)

            _ignore_stop_signals()
            logging.getLogger("distributed.worker.state_machine").setLevel(logging.ERROR)
            logging.getLogger("distributed.worker").addFilter(
                lambda record: not record.getMessage().startswith(HEARTBEAT_LOST))

    return StopSignalsIgnored()
