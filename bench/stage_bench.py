"""Where a grading worker's CPU goes, stage by stage (`make bench`).

Grades shards of a synthetic corpus in this one process exactly as a grading worker does
(`grade._grade_task` after `grade._init_worker`, polars on one thread), after a first shard
that warms the process as a worker's first shard does (imports, regex compiles, clause
readings), and reports the CPU milliseconds each stage takes per shard and per run, its share
of the task, and the CPU of one process simply reading every file of the same runs.

Two shard sizes are timed, taking turns (by default 500 runs, as a grade cuts a 2,000-run batch,
and 1 run): what a 1-run shard costs is the part of each stage that does not depend on the
shard's size, paid once per shard. The stages are found by wrapping the functions a worker
calls (`measure` runs inside `run_checks`; "checks" is the rest of `run_checks`).

With --breakdown, two more tables for the larger size: the CPU of each measure family (what
`output measures` spends measuring, apart from joining the measures to the clauses), and the
CPU of each check's query (`judged_rows`) run by itself on the same shards' measured clause
frames, after the timings (in a grade they run as one query, then masked, sorted and typed).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import pickle
import shutil
import signal
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

os.environ.setdefault("POLARS_MAX_THREADS", "1")  # as in a grading worker (processes.py)

sys.path.insert(0, str(Path(__file__).resolve().parent))
from grade_bench import corpus, plain_read

from pipeline import grade
from pipeline.checks import default_grader, output_analysis
from pipeline.checks import grader as grader_module
from pipeline.sources.bucket import Bucket
from pipeline.sources.prose import DEFAULT_BINDING_CAP
from pipeline.store import ResultStore
from pipeline.tables import collect

# (label, module, function): in the order a worker calls them
STAGES = (
    ("list and read runs", Bucket, "list_run"),  # (three functions, one stage)
    ("list and read runs", grade, "read_run"),
    ("list and read runs", grade, "read_ledger"),
    ("source tables", grade, "source_tables"),
    ("clause frame", grade, "clause_frame"),
    ("output measures", grader_module, "measure"),
    ("checks", grade, "run_checks"),
    ("ledger checks", grade, "run_ledger_checks"),
    ("clause verdicts", grade, "clause_verdicts"),
    ("scores (DuckDB)", grade, "run_models"),
    ("reports", grade, "build_reports"),
    ("Parquet parts staged", ResultStore, "stage_part"),
)
INSIDE = {"checks": "output measures"}  # a stage timed inside another: reported apart


class Stages:
    """CPU seconds spent in each wrapped function, by label (process time: this process)."""

    def __init__(self) -> None:
        self.cpu: dict[str, float] = defaultdict(float)
        self.families: dict[str, float] = defaultdict(float)  # inside "output measures"
        for label, owner, name in STAGES:
            setattr(owner, name, self._timed(self.cpu, label, getattr(owner, name)))
        families = tuple(dataclasses.replace(f, compute=self._timed(self.families, f.name,
                                                                    f.compute))
                         for f in output_analysis.FAMILIES)
        output_analysis.FAMILIES = families
        output_analysis.FAMILY.update({f.name: f for f in families})

    @staticmethod
    def _timed(into: dict[str, float], label: str, function):
        def timed(*args, **kwargs):
            started = time.process_time()
            try:
                return function(*args, **kwargs)
            finally:
                into[label] += time.process_time() - started
        return timed

    def take(self) -> tuple[dict[str, float], dict[str, float]]:
        """(CPU seconds by stage, by measure family) since the last take."""
        out, families = dict(self.cpu), dict(self.families)
        for outer, inner in INSIDE.items():
            out[outer] = out.get(outer, 0.0) - out.get(inner, 0.0)
        self.cpu.clear()
        self.families.clear()
        return out, families


def checks_alone(grader, frames: list) -> dict[str, float]:
    """CPU seconds of each check's query (`judged_rows`) run by itself on each measured clause
    frame in `frames`, for the checks of `grader` that judge a row of it (as `run_checks`)."""
    cpu: dict[str, float] = defaultdict(float)
    for frame in frames:
        live = grader_module._live(grader.checks, frame)
        for order, check in enumerate(grader.checks):
            if order in live:
                started = time.process_time()
                collect(grader_module.judged_rows(frame, check, order))
                cpu[check.name] += time.process_time() - started
    return cpu


def plain_read_cpu(refs: list) -> float:
    """CPU seconds of reading every file of the runs once, in this process (grade_bench's
    plain read, run folder by run folder)."""
    return sum(plain_read(Path(ref.path))[3] for ref in refs)


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="500,1",
                        help="shard sizes to time, comma-separated (runs per shard)")
    parser.add_argument("--shards", type=int, default=5, help="shards timed of each size")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--dir", type=Path, default=None,
                        help="folder that holds the corpus, in corpus-RUNS-seedSEED/ (default: a "
                             "temporary one, deleted)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--breakdown", action="store_true",
                        help="also time each measure family and each check (larger size)")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    warm = max(sizes)
    needed = warm + args.shards * sum(sizes)

    folder = args.dir or Path(tempfile.mkdtemp(prefix="rungrade-stages-"))
    folder.mkdir(parents=True, exist_ok=True)
    results = Path(tempfile.mkdtemp(prefix="results-stages.", dir=folder))
    try:
        root = corpus(folder, needed, args.seed, None)
        refs = list(Bucket(str(root)).discover())
        plain_read_cpu(refs)  # the page cache warm, as for the timings of grade_bench.py
        graders = (default_grader(), grade.default_ledger_graders())
        grade._init_worker(pickle.dumps(graders), [], os.getpid(), {})
        signal.signal(signal.SIGINT, signal.default_int_handler)  # a worker ignores it
        job = grade.Job(str(root), str(results), None, DEFAULT_BINDING_CAP, False, False)
        stages = Stages()
        big, measured = max(sizes), []  # the measured clause frames of the larger size's shards
        capture = [False]
        timed_measure = grader_module.measure

        def measure(checks, frame):
            out = timed_measure(checks, frame)
            if capture[0]:
                measured.append(out)
            return out

        if args.breakdown:
            grader_module.measure = measure
        # the first shard takes runs from all over the corpus, so it meets every program's
        # clauses: no timed shard reads a clause (a grade keeps its readings, see README)
        stride = max(1, len(refs) // warm)
        first = refs[::stride][:warm]
        chosen = {id(ref) for ref in first}
        taken = iter(first + [ref for ref in refs if id(ref) not in chosen])

        def task(size: int, part: int) -> tuple[float, tuple[dict, dict], float, int]:
            shard = [next(taken) for _ in range(size)]
            started = time.process_time()
            grade._grade_task(job, "stages", part, shard)
            total = time.process_time() - started
            return total, stages.take(), plain_read_cpu(shard), len(shard)

        task(warm, 0)
        totals = {size: defaultdict(float) for size in sizes}
        families: dict[str, float] = defaultdict(float)  # of the larger size's shards
        for k in range(args.shards):  # the sizes take turns: a slow spell hits each
            for size in sizes:
                capture[0] = size == big
                total, (cpu, by_family), read, runs = task(
                    size, 1 + k * len(sizes) + sizes.index(size))
                capture[0] = False
                sums = totals[size]
                sums["task"] += total
                sums["plain read"] += read
                sums["runs"] += runs
                for label, seconds in cpu.items():
                    sums[label] += seconds
                if size == big:
                    for name, seconds in by_family.items():
                        families[name] += seconds
        alone = checks_alone(graders[0], measured) if args.breakdown else {}
    finally:
        shutil.rmtree(results, ignore_errors=True)
        if args.dir is None:
            shutil.rmtree(folder, ignore_errors=True)

    figures: dict = {"shards": args.shards, "sizes": {}}
    for size, sums in totals.items():
        per_shard = {label: 1000 * sums[label] / args.shards
                     for label, *_ in STAGES if label in sums}
        per_shard["other"] = 1000 * sums["task"] / args.shards - sum(per_shard.values())
        figures["sizes"][size] = {
            "stages_ms": {k: round(v, 1) for k, v in per_shard.items()},
            "task_ms": round(1000 * sums["task"] / args.shards, 1),
            "plain_read_ms": round(1000 * sums["plain read"] / args.shards, 1),
            "runs": sums["runs"] / args.shards,
        }
    if args.breakdown:
        figures["breakdown"] = {"size": big, **{
            key: {name: round(1000 * seconds / args.shards, 1) for name, seconds in
                  sorted(found.items(), key=lambda item: -item[1])}
            for key, found in (("families_ms", families), ("checks_alone_ms", alone))}}
    if args.json:
        print(json.dumps(figures, indent=2))
    else:
        print(report(figures))
    return figures


def report(figures: dict) -> str:
    sizes = figures["sizes"]
    big = max(sizes, key=int)
    lines = [f"CPU per shard, mean of {figures['shards']} shards of each size after a first "
             "that warms the worker", ""]
    head = f"{'stage':<24}" + "".join(
        f"{f'{size}-run shard':>14}{'per run':>10}{'share':>8}" if size == big
        else f"{f'{size}-run shard':>14}" for size in sizes)
    lines += [head, "-" * len(head)]
    for label in [*dict.fromkeys(s[0] for s in STAGES), "other"]:
        row = f"{label:<24}"
        for size in sizes:
            ms = sizes[size]["stages_ms"].get(label, 0.0)
            row += f"{ms:>11.1f} ms"
            if size == big:
                row += (f"{ms / sizes[size]['runs']:>7.2f} ms"
                        f"{100 * ms / sizes[size]['task_ms']:>7.0f}%")
        lines.append(row)
    lines.append("-" * len(head))
    for label, key in (("whole task", "task_ms"), ("plain read, same files", "plain_read_ms")):
        row = f"{label:<24}"
        for size in sizes:
            ms = sizes[size][key]
            row += f"{ms:>11.1f} ms"
            if size == big:
                row += f"{ms / sizes[size]['runs']:>7.2f} ms{'':>8}"
        lines.append(row)
    b = sizes[big]
    lines += ["", f"a {big}-run shard costs {b['task_ms'] / b['plain_read_ms']:.1f}× the CPU "
              "of reading its files"]
    if len(sizes) > 1:
        small = min(sizes, key=int)
        fixed = sizes[small]["task_ms"]
        lines.append(f"the same for any size (a {small}-run shard): {fixed:.0f} ms, "
                     f"{100 * fixed / b['task_ms']:.0f}% of a {big}-run shard")
    breakdown = figures.get("breakdown")
    if breakdown:
        families, alone = breakdown["families_ms"], breakdown["checks_alone_ms"]
        lines += ["", f"output measures by family, CPU per {breakdown['size']}-run shard "
                  f"(measuring only, {sum(families.values()):.0f} ms: the rest of the stage "
                  "joins the measures to the clauses)"]
        lines += [f"  {name:<24}{ms:>8.1f} ms" for name, ms in families.items()]
        lines += ["", f"each check's query run by itself on the same shards' measured clauses, "
                  f"CPU per shard ({sum(alone.values()):.0f} ms in all; the checks stage runs "
                  "them as one query, then masks, sorts and types their rows)"]
        lines += [f"  {name:<24}{ms:>8.1f} ms" for name, ms in alone.items()]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
