"""The judge of a grade: settles judgeable undecided checks, asking only what is not cached.

`Judge.settle(checks, clauses, runs)` is the one step `grade_tables` adds between the code
checks and the clause verdicts. It looks every request up in the cache, sends the rest to
the judge client in batches over a bounded thread pool (timeouts, retries with exponential
backoff, a call budget), stores new answers as they arrive, and fills the answered rows.
A judge that fails, times out or answers malformed JSON never fails a check: the row stays
undecided and its detail says why.
"""

from __future__ import annotations

import contextlib
import queue
import threading
from collections.abc import Callable
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Protocol

import polars as pl

from ..checks.grader import Grader
from .answers import Answer, Failure
from .cache import JudgmentCache
from .cache import empty as empty_cache
from .identity import judged_grader_id
from .prompt import PromptTemplate, load_template
from .questions import judgment_requests, settled_checks

BUDGET_EXHAUSTED = Failure("judge call budget exhausted", retryable=False)
STOPPED = Failure("the grade was stopped", retryable=False)
# Ends the committed fingerprint of a run the judge left a question of unanswered (it failed,
# timed out, answered nothing readable): matching no listing, the run is graded again by the
# next grade, which asks that question again (the answers it holds come from the cache)
UNANSWERED = "~unjudged"
RESULT_SCHEMA = {"id": pl.String, "status": pl.String, "outcome": pl.String,
                 "confidence": pl.Int64, "evidence": pl.String, "rationale": pl.String,
                 "reason": pl.String}


def _waited(done: queue.SimpleQueue, stopping: Callable[[], bool]):
    """The next item of `done`, or None once `stopping()`: waited for in turns of 0.2 s,
    between which Python runs a signal's handler. A wait with no end, with the judge's threads
    reading their sockets, was not woken by a Ctrl-C, and the grade stopped only once a call
    under way had ended (minutes with a slow judge)."""
    while True:
        with contextlib.suppress(queue.Empty):
            return done.get(timeout=0.2)
        if stopping():
            return None


class JudgeClient(Protocol):
    """What the judge asks: a command (command.py) or a chat endpoint (openai_compat.py)."""

    name: str
    kind: str
    batch_size: int

    def check_ready(self) -> None: ...

    def ask(self, requests: list[dict], timeout: float) -> dict[str, Answer | Failure]: ...


@dataclass
class JudgeStats:
    """Distinct judgments: asked (sent at least once) = answered + failed; from_cache were
    not sent; over_budget were not sent because the call budget ran out. `calls` counts
    requests sent, retries included."""

    judge_id: str
    template_version: str
    asked: int = 0
    answered: int = 0
    failed: int = 0
    from_cache: int = 0
    over_budget: int = 0
    calls: int = 0

    def as_dict(self) -> dict:
        return asdict(self)


class CallBudget:
    """At most `limit` requests sent over a judge's life (None: no limit); thread-safe."""

    def __init__(self, limit: int | None):
        self.limit = limit
        self.used = 0
        self._lock = threading.Lock()

    def take(self, n: int) -> int:
        with self._lock:
            granted = n if self.limit is None else max(0, min(n, self.limit - self.used))
            self.used += granted
            return granted


class Judge:
    """A judge client with its cache, budget and limits. One per `rungrade grade`."""

    def __init__(self, client: JudgeClient, cache: JudgmentCache | None = None, *,
                 template: PromptTemplate | None = None, max_calls: int | None = None,
                 timeout: float = 120.0, concurrency: int = 4, retries: int = 2,
                 backoff: float = 1.0, flush_every: int = 200):
        self.client = client
        self.cache = cache
        self.template = template or load_template()
        self.timeout = timeout
        self.concurrency = max(1, concurrency)
        self.retries = max(0, retries)
        self.backoff = backoff
        self.flush_every = max(1, flush_every)
        self.budget = CallBudget(max_calls)
        self.stats = JudgeStats(self.judge_id, self.template.version)
        self._memory = empty_cache()  # answers of this judge when no cache folder is given
        # The runs of the last `settle` with a question the judge was asked and did not answer
        self.unanswered: frozenset[str] = frozenset()
        # Asked while the answers are awaited: true once the grade is to stop (SIGTERM), which
        # abandons the batch in hand, so the calls not yet sent are not sent
        self.should_stop: Callable[[], bool] = lambda: False
        # Told (requests answered or failed so far, requests to ask) as the judge's answers
        # come in: a grade shows it as a progress bar.
        self.on_progress: Callable[[int, int], None] | None = None

    @property
    def judge_id(self) -> str:
        return self.client.name

    def grader(self, grader: Grader) -> Grader:
        """`grader` under the grader id that says it was graded with this judge."""
        return grader.with_id(judged_grader_id(grader.grader_id, self.judge_id))

    # -- the step in grade_tables ----------------------------------------------------------
    def settle(self, checks: pl.DataFrame, clauses: pl.DataFrame,
               runs: pl.DataFrame | None = None) -> pl.DataFrame:
        """`checks` with its judgeable undecided rows settled by the judge or the cache."""
        self.unanswered = frozenset()
        if "judgeable" not in checks.columns or checks.is_empty():
            return checks
        requests = judgment_requests(checks, clauses, runs)
        if requests.is_empty():
            return checks
        unique = requests.unique("id", keep="first", maintain_order=True)
        version = self.template.version
        known = self._known().filter(pl.col("template_version") == version)
        cached = unique.join(known, on=["clause_sha256", "output_sha256"], how="semi")
        cached = cached.select("id", "clause_sha256", "output_sha256").join(
            known, on=["clause_sha256", "output_sha256"], how="left"
        ).select("id", pl.lit("cached").alias("status"), "outcome", "confidence", "evidence",
                 "rationale", pl.lit(None, pl.String).alias("reason"))
        to_ask = unique.join(known, on=["clause_sha256", "output_sha256"], how="anti")
        asked = self._ask_all(to_ask)
        results = pl.concat([cached, asked], how="vertical_relaxed")
        self.stats.from_cache += cached.height
        failed = results.filter(pl.col("status") == "failed").select("id")
        rows = requests.join(failed, on="id", how="semi")["_row"]  # (its row in `checks`)
        self.unanswered = frozenset(checks["run_uri"].gather(rows))
        return settled_checks(checks, requests, results, self.judge_id)

    # -- asking ----------------------------------------------------------------------------
    def _known(self) -> pl.DataFrame:
        return self.cache.known(self.judge_id) if self.cache else self._memory

    def _ask_all(self, to_ask: pl.DataFrame) -> pl.DataFrame:
        """Ask every row of `to_ask`; one result row per request id."""
        if to_ask.is_empty():
            return pl.DataFrame(schema=RESULT_SCHEMA)
        keys = {r["id"]: r for r in to_ask.select("id", "clause_sha256", "output_sha256")
                .to_dicts()}
        requests = [self._request(r) for r in to_ask.drop(
            "_row", "clause_sha256", "output_sha256").to_dicts()]
        size = max(1, self.client.batch_size)
        batches = [requests[i:i + size] for i in range(0, len(requests), size)]
        outcomes: dict[str, Answer | Failure] = {}
        unsaved: list[dict] = []
        todo: queue.SimpleQueue[list[dict]] = queue.SimpleQueue()
        done: queue.SimpleQueue[dict | BaseException] = queue.SimpleQueue()
        for batch in batches:
            todo.put(batch)
        # Set when these calls are to end (Ctrl-C, SIGTERM, an error): this call's own, so a
        # next one (the batch graded again run by run after an error) asks as ever
        stopped = threading.Event()

        def asker() -> None:
            while not stopped.is_set() and not self.should_stop():
                try:
                    batch = todo.get_nowait()
                except queue.Empty:
                    return
                try:
                    done.put(self._ask_batch(batch, stopped))
                except BaseException as exc:  # raised again where the answers are read
                    done.put(exc)

        def stop() -> None:  # no further call or retry; the calls under way are dropped
            stopped.set()
            if cancel := getattr(self.client, "cancel", None):
                cancel()

        # Daemon threads: a Ctrl-C leaves at once, where a pool's threads held the exit until
        # every call under way had ended, retries and all (minutes with a slow judge)
        for n in range(min(self.concurrency, len(batches))):
            threading.Thread(target=asker, name=f"judge-{n}", daemon=True).start()
        try:
            if self.on_progress:
                self.on_progress(0, len(requests))
            for _ in batches:
                got = _waited(done, self.should_stop)
                if got is None:  # the batch is to be abandoned: no more calls, no wait
                    stop()
                    outcomes.update({r["id"]: STOPPED for r in requests
                                     if r["id"] not in outcomes})
                    break
                if isinstance(got, BaseException):
                    raise got
                outcomes.update(got)
                if self.on_progress:
                    self.on_progress(len(outcomes), len(requests))
                unsaved += [self._cache_row(keys[rid], a) for rid, a in got.items()
                            if isinstance(a, Answer)]
                if len(unsaved) >= self.flush_every:
                    self._save(unsaved)
                    unsaved = []
        except BaseException:
            # Ctrl-C or an error: no further call or retry is sent, and the calls under way
            # are dropped; the answers in hand are kept for the next grade
            stop()
            with contextlib.suppress(Exception):
                self._save(unsaved)
            raise
        self._save(unsaved)
        self.stats.calls = self.budget.used  # every granted request was sent
        rows = []
        for rid, got in outcomes.items():
            if isinstance(got, Answer):
                self.stats.asked += 1
                self.stats.answered += 1
                rows.append({"id": rid, "status": "answered", **asdict(got), "reason": None})
            elif got == STOPPED:  # not asked; were its batch committed, asked next grade
                rows.append({"id": rid, "status": "failed", "reason": got.reason})
            elif got == BUDGET_EXHAUSTED:
                self.stats.over_budget += 1
                rows.append({"id": rid, "status": "over_budget", "reason": got.reason})
            else:
                self.stats.asked += 1
                self.stats.failed += 1
                rows.append({"id": rid, "status": "failed", "reason": got.reason})
        return pl.DataFrame(rows, schema=RESULT_SCHEMA)

    def _request(self, row: dict) -> dict:
        """The JSON request of one judgment (README, "Judges": the request format)."""
        return {**row, "template_version": self.template.version,
                "messages": self.template.messages(row)}

    def _ask_batch(self, batch: list[dict], stopped: threading.Event
                   ) -> dict[str, Answer | Failure]:
        """Ask one batch, retrying retryable failures with backoff while the budget lasts,
        until `stopped`."""
        out: dict[str, Answer | Failure] = {}
        pending = batch
        for attempt in range(self.retries + 1):
            if attempt and stopped.wait(self.backoff * 2 ** (attempt - 1)):
                break  # (stopped during the backoff: no retry)
            if stopped.is_set():
                out.update({r["id"]: out.get(r["id"], STOPPED) for r in pending})
                break
            granted = self.budget.take(len(pending))
            for r in pending[granted:]:
                before = out.get(r["id"])
                out[r["id"]] = BUDGET_EXHAUSTED if before is None else Failure(
                    f"{before.reason}; not retried: judge call budget exhausted", False)
            sending = pending[:granted]
            if not sending:
                break
            try:
                got = self.client.ask(sending, self.timeout)
            except Exception as exc:  # a judge client must never break the batch
                got = {r["id"]: Failure(f"judge call raised {type(exc).__name__}: {exc}")
                       for r in sending}
            for r in sending:
                out[r["id"]] = got.get(r["id"]) or Failure("judge returned nothing")
            pending = [r for r in sending
                       if isinstance(out[r["id"]], Failure) and out[r["id"]].retryable]
            if not pending:
                break
        return out

    def _cache_row(self, key: dict, answer: Answer) -> dict:
        return {"judge_id": self.judge_id, "template_version": self.template.version,
                "clause_sha256": key["clause_sha256"], "output_sha256": key["output_sha256"],
                **asdict(answer),
                "answered_at": datetime.now(UTC).isoformat(timespec="seconds")}

    def _save(self, rows: list[dict]) -> None:
        if not rows:
            return
        df = pl.DataFrame(rows, schema=empty_cache().schema)
        if self.cache:
            self.cache.save(self.judge_id, df)
        else:
            self._memory = pl.concat([self._memory, df])
