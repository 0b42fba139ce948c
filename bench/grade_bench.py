"""Benchmark `rungrade grade` against simply reading the same files (`make bench`).

One run of this script reports, for a synthetic corpus of --runs runs (about 19 files each):
  - plain read: wall time of one process walking the corpus and reading every file
  - rungrade grade: wall time of the command, its ratio to the plain read, runs/s, MB/s, and
    the CPU seconds of both (all the command's processes, read every 0.2 s; the plain read's
    own), steadier than wall time on a shared machine
  - known clauses: wall and CPU time of the command into fresh results that hold only the
    clause readings the full run kept (`_readings/`): a night's grade of new runs of programs
    graded before, which reads no clause again
  - one worker: wall time of the known-clauses grade with `--workers 1`, and how much faster
    the grade with the workers given (default: one per core) is; through both, Amdahl's law
    estimates the part of a grade that does not divide, and the time on twice the workers (an
    estimate: the plain read is one process, so more cores lower the ratio)
  - no-change rerun: wall time of the same command again, its share of the full run, and its
    ratio to one process checking every file and folder with one `lstat` each (the least an
    exact change check does: a binding rewritten in place moves no folder's mtime)
  - peak memory: a third grade into fresh results, sampled every 50 ms (RSS of the largest
    process, and PSS summed over the process tree); the timed runs are not sampled
  - dask engine: wall time of `rungrade grade --engine dask --workers N` (a LocalCluster of N
    worker processes, started by the command and counted in its time) on the same corpus into
    fresh results, and its ratio to the local engine's time (--no-dask skips it)
and the peak RSS of grading --big-runs runs (100,000 by default; 0 skips it). That corpus
takes about 15 GB of disk with its results (small files: 135 KB a run on ext4), and minutes
to write and grade; where the disk has less room free it is skipped, saying so.

Both timings run with a warm page cache (the plain read runs once before anything is timed).
Every grade writes into a results folder of its own, and results are deleted only after the
last timing (leftovers of an earlier bench too): a nightly grade writes into results that
nobody has just wiped. On a file system without a journal (ext4 on these machines), a file
created where thousands were deleted in the last minutes costs the inode allocator a scan
past every one of them (it skips recently freed inodes). Grading into a folder emptied the
moment before took 18.2–22.7 CPU-seconds, into a fresh one 17.8–18.9 (eight runs of each,
taking turns): a cost of the bench's own cleanup, not of grading, and one that made single
timings vary by a fifth.
Every timing is repeated --repeat times (default 3), the plain read and the full grade taking
turns, and the fastest of each is reported with the spread: on a shared machine a run can lose
a tenth of its speed to a neighbour, and the fastest run is the one least disturbed.
The corpus is written by `rungrade synth` (pipeline/synth.py) and deleted afterwards unless
--keep; --dir reuses a folder, so a corpus written once can be benchmarked many times.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import psutil

RUNGRADE = str(Path(sys.executable).parent / "rungrade")
CORPUS = re.compile(r"corpus-\d+-seed\d+")  # a corpus folder's name (see `corpus`)


def corpus(folder: Path, runs: int, seed: int, workers: int | None) -> Path:
    """The corpus of `runs` runs for `seed` in `folder`, written only if not there yet.
    Exits with a message when `folder` is itself such a corpus: one written inside it would
    add its runs to every later bench of that corpus."""
    from pipeline.synth import synthesize

    if CORPUS.fullmatch(folder.name) and folder.with_name(f"{folder.name}.complete").exists():
        raise SystemExit(f"--dir {folder} is a corpus; give the folder that holds it "
                         f"({folder.parent}), where each corpus is kept by its size and seed")
    root = folder / f"corpus-{runs}-seed{seed}"
    stamp = folder / f"corpus-{runs}-seed{seed}.complete"
    if not stamp.exists():
        shutil.rmtree(root, ignore_errors=True)
        started = time.perf_counter()
        made = synthesize(str(root), runs, seed=seed, workers=workers)
        stamp.write_text(json.dumps({"files": made.files, "bytes": made.bytes}))
        print(f"synthesized {runs} runs ({made.files} files, {made.bytes / 1e6:.0f} MB) in "
              f"{time.perf_counter() - started:.1f} s", file=sys.stderr)
    return root


DISK_PER_RUN = 150_000  # bytes a synthetic run and its results take on disk (ext4: 135 KB a run)


def _short_of_room(folder: Path, runs: int, seed: int) -> str | None:
    """Why the corpus of `runs` runs cannot be written in `folder` and graded there (too little
    disk free), or None: there is room, or it is written already."""
    if (folder / f"corpus-{runs}-seed{seed}.complete").exists():
        return None
    needed, free = runs * DISK_PER_RUN, shutil.disk_usage(folder).free
    if free >= needed:
        return None
    return (f"it needs about {needed / 1e9:.0f} GB free in {folder}, and {free / 1e9:.0f} GB "
            "are; give --dir a roomier folder, or --big-runs 0")


def plain_read(root: Path) -> tuple[float, int, int, float]:
    """(seconds, files, bytes, CPU seconds) of one process reading every file under `root`."""
    started, cpu = time.perf_counter(), time.process_time()
    files = size = 0
    for folder, _, names in os.walk(root):
        for name in names:
            with open(os.path.join(folder, name), "rb") as handle:
                size += len(handle.read())
            files += 1
    return time.perf_counter() - started, files, size, time.process_time() - cpu


def every_path(root: Path) -> list[str]:
    """Every file and folder under `root` (not timed: a rerun has them from its listings)."""
    paths = []
    for folder, names, files in os.walk(root):
        paths += [os.path.join(folder, name) for name in (*names, *files)]
    return paths


def plain_stat(paths: list[str]) -> float:
    """Seconds one process takes to `lstat` every path."""
    started = time.perf_counter()
    for path in paths:
        os.lstat(path)
    return time.perf_counter() - started


def _memory(proc: psutil.Process) -> tuple[int, int] | None:
    """(RSS, PSS) of a process. On Linux from /proc/PID/smaps_rollup, which the kernel sums
    itself: psutil's full memory info parses every mapping, and sampling it every few tens of
    milliseconds would take CPU from the command being timed."""
    try:
        with open(f"/proc/{proc.pid}/smaps_rollup", "rb") as handle:
            fields = dict(line.split(b":", 1) for line in handle.read().splitlines()
                          if line[:4] in (b"Rss:", b"Pss:"))
        return int(fields[b"Rss"].split()[0]) * 1024, int(fields[b"Pss"].split()[0]) * 1024
    except (OSError, KeyError, ValueError):
        pass
    try:
        info = proc.memory_full_info()
    except psutil.Error:
        return None
    return info.rss, getattr(info, "pss", info.rss)


class TreeSampler:
    """Calls `sample` with a process and all its descendants every `every` seconds, in a thread,
    until `stop`."""

    def __init__(self, pid: int, every: float):
        self.root = psutil.Process(pid)
        self.every = every
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def sample(self, procs: list[psutil.Process]) -> None:
        raise NotImplementedError

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                procs = [self.root, *self.root.children(recursive=True)]
            except psutil.Error:
                return
            self.sample(procs)
            self._stop.wait(self.every)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


class PeakRSS(TreeSampler):
    """Samples memory of a process and all its descendants until stopped.

    `largest` is the peak RSS of any one process; `total` the peak sum of proportional set
    sizes (PSS: a page shared by n processes counts 1/n in each), so pages that workers share
    with the process they were forked from are not counted twice.
    """

    def __init__(self, pid: int, every: float = 0.05):
        self.largest = self.total = 0
        super().__init__(pid, every)

    def sample(self, procs: list[psutil.Process]) -> None:
        rss, pss = [], []
        for proc in procs:
            sizes = _memory(proc)
            if sizes:
                rss.append(sizes[0])
                pss.append(sizes[1])
        if rss:
            self.largest = max(self.largest, *rss)
            self.total = max(self.total, sum(pss))


class CPUTime(TreeSampler):
    """The CPU time (user + system) of a process and all its descendants, each read every
    `every` seconds: `seconds`, after `stop`, misses at most the last `every` seconds of each
    process. (`getrusage` of the bench's children saw a twentieth of it: the grade's workers are
    not children of the command but of its fork server, whose time reaches nobody.) One sample
    reads /proc for every process, about a millisecond."""

    def __init__(self, pid: int, every: float = 0.2):
        self.seen: dict[int, float] = {}
        super().__init__(pid, every)

    def sample(self, procs: list[psutil.Process]) -> None:
        for proc in procs:
            try:
                times = proc.cpu_times()
            except psutil.Error:
                continue
            self.seen[proc.pid] = times.user + times.system

    @property
    def seconds(self) -> float:
        return sum(self.seen.values())


def options(workers: int | None, batch_size: int | None, shard_runs: int | None) -> list[str]:
    """The `rungrade grade` options the bench was given (none: rungrade's defaults)."""
    return [flag for name, value in (("--workers", workers), ("--batch-size", batch_size),
                                     ("--shard-runs", shard_runs)) if value
            for flag in (name, str(value))]


def grade(runs: Path, out: Path, opts: list[str], engine: str = "local",
          sample: bool = False) -> dict:
    """Run `rungrade grade` once; return its summary, wall time and (with `sample`) peak RSS.

    Timed runs are not sampled: reading the memory of every process fifty times a second
    takes CPU from the command on a small machine. Memory is measured on runs of its own.
    """
    cmd = [RUNGRADE, "grade", str(runs), "--out", str(out), "--json", "--engine", engine, *opts]
    started = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    peak = PeakRSS(proc.pid) if sample else None
    cpu = CPUTime(proc.pid)
    stdout, stderr = proc.communicate()
    wall = time.perf_counter() - started
    cpu.stop()
    if peak:
        peak.stop()
    if proc.returncode != 0:
        raise SystemExit(f"rungrade grade failed ({proc.returncode}):\n{stderr}")
    return {"wall": wall, "cpu": cpu.seconds, "summary": json.loads(stdout),
            "rss_largest": peak.largest if peak else None,
            "rss_total": peak.total if peak else None}


def mib(n: int) -> str:
    return f"{n / 2**20:.0f} MiB"


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10_000, help="runs in the main corpus")
    parser.add_argument("--big-runs", type=int, default=100_000,
                        help="also measure peak RSS on a corpus this large (0: skip)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--workers", type=int, default=None, help="rungrade --workers")
    parser.add_argument("--batch-size", type=int, default=None, help="rungrade --batch-size")
    parser.add_argument("--shard-runs", type=int, default=None, help="rungrade --shard-runs")
    parser.add_argument("--dask-workers", type=int, default=2,
                        help="worker processes of the Dask engine's LocalCluster")
    parser.add_argument("--no-dask", action="store_true", help="skip the Dask engine")
    parser.add_argument("--dir", type=Path, default=None,
                        help="folder that holds the corpora, each in corpus-RUNS-seedSEED/, "
                             "and the results (default: a temporary one)")
    parser.add_argument("--keep", action="store_true",
                        help="keep the corpora and the latest results of each kind")
    parser.add_argument("--repeat", type=int, default=3,
                        help="times each timing is taken; the fastest is reported")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args(argv)

    folder = args.dir or Path(tempfile.mkdtemp(prefix="rungrade-bench-"))
    folder.mkdir(parents=True, exist_ok=True)
    made: dict[str, Path] = {}  # kind of results -> its latest folder

    def fresh(kind: str) -> Path:
        """A results folder nothing was ever written to (see the module docstring)."""
        path = Path(tempfile.mkdtemp(prefix=f"{kind}.", dir=folder))
        made[kind] = path
        return path
    opts = options(args.workers, args.batch_size, args.shard_runs)
    figures: dict = {"runs": args.runs, "cores": os.cpu_count(), "workers": args.workers,
                     "options": opts}
    try:
        runs = corpus(folder, args.runs, args.seed, args.workers)
        plain_read(runs)  # warm the page cache, so both timings read from memory
        paths = every_path(runs)
        reads, read_cpus, stats, fulls, reruns, knowns, ones = [], [], [], [], [], [], []
        workers = args.workers or os.cpu_count() or 1  # what the timed grades run on
        for _ in range(max(1, args.repeat)):  # taking turns: a slow spell hits both
            read_s, files, size, read_cpu = plain_read(runs)
            reads.append(read_s)
            read_cpus.append(read_cpu)
            stats.append(plain_stat(paths))
            results = fresh(f"results-{args.runs}")
            fulls.append(grade(runs, results, opts))
            reruns.append(grade(runs, results, opts))
            assert reruns[-1]["summary"]["skipped"] == fulls[-1]["summary"]["found"], \
                reruns[-1]["summary"]
            kept = [fresh(f"results-known-{args.runs}")]
            if workers > 1:  # and the same on one worker
                kept.append(fresh(f"results-one-{args.runs}"))
            for folder_kept in kept:
                if (results / "_readings").is_dir():
                    shutil.copytree(results / "_readings", folder_kept / "_readings")
            knowns.append(grade(runs, kept[0], opts))
            if workers > 1:
                ones.append(grade(runs, kept[1], options(1, args.batch_size, args.shard_runs)))
        read_s = min(reads)
        full = min(fulls, key=lambda r: r["wall"])
        rerun = min(reruns, key=lambda r: r["wall"])
        memory = grade(runs, fresh(f"results-{args.runs}"), opts, sample=True)
        figures.update({
            "files": files, "bytes": size, "plain_read_s": round(read_s, 3),
            "plain_read_all_s": [round(r, 3) for r in reads],
            "grade_s": round(full["wall"], 3),
            "grade_all_s": [round(r["wall"], 3) for r in fulls],
            "grade_over_read": round(full["wall"] / read_s, 2),
            # CPU seconds: steadier than wall time on a shared machine (a neighbour takes
            # turns on the cores, not work from the command); the least of each is reported
            "plain_read_cpu_s": round(min(read_cpus), 3),
            "grade_cpu_s": round(min(r["cpu"] for r in fulls), 2),
            "grade_cpu_all_s": [round(r["cpu"], 2) for r in fulls],
            "grade_cpu_over_read_cpu": round(min(r["cpu"] for r in fulls) / min(read_cpus), 2),
            "rerun_cpu_s": round(min(r["cpu"] for r in reruns), 2),
            "known_grade_s": round(min(r["wall"] for r in knowns), 3),
            "known_grade_all_s": [round(r["wall"], 3) for r in knowns],
            "known_over_read": round(min(r["wall"] for r in knowns) / read_s, 2),
            "known_cpu_s": round(min(r["cpu"] for r in knowns), 2),
            "runs_per_s": round(args.runs / full["wall"], 1),
            "mb_per_s": round(size / 1e6 / full["wall"], 1),
            "grade_peak_rss_largest": memory["rss_largest"],
            "grade_peak_rss_total": memory["rss_total"],
            "rerun_s": round(rerun["wall"], 3),
            "rerun_all_s": [round(r["wall"], 3) for r in reruns],
            "rerun_share_of_full": round(rerun["wall"] / full["wall"], 4),
            "paths": len(paths), "plain_stat_s": round(min(stats), 3),
            "plain_stat_all_s": [round(t, 3) for t in stats],
            "rerun_over_stat": round(rerun["wall"] / min(stats), 2),
            "graded": full["summary"]["graded"], "refused": full["summary"]["refused"],
        })
        if ones:
            many, alone = min(r["wall"] for r in knowns), min(r["wall"] for r in ones)
            # Amdahl: T(n) = serial + (T(1) - serial) / n, through T(1) and T(workers)
            serial = max(0.0, (workers * many - alone) / (workers - 1))
            twice = serial + (alone - serial) / (2 * workers)
            figures.update({
                "one_worker_s": round(alone, 3), "one_worker_all_s": [round(r["wall"], 3)
                                                                      for r in ones],
                "speedup": round(alone / many, 2), "speedup_workers": workers,
                "serial_s": round(serial, 2), "twice_workers_s": round(twice, 2),
                "twice_workers_over_read": round(twice / read_s, 2),
            })
        if not args.no_dask:
            dasks = []
            for _ in range(max(1, args.repeat)):
                dasks.append(grade(runs, fresh(f"results-dask-{args.runs}"),
                                   options(args.dask_workers, args.batch_size,
                                           args.shard_runs), "dask"))
            dask = min(dasks, key=lambda r: r["wall"])
            same = ("found", "graded", "refused", "refusals", "verdicts", "mean_overall_score")
            assert all(dask["summary"][k] == full["summary"][k] for k in same), dask["summary"]
            figures.update({
                "dask_workers": args.dask_workers, "dask_grade_s": round(dask["wall"], 3),
                "dask_grade_all_s": [round(r["wall"], 3) for r in dasks],
                "dask_over_local": round(dask["wall"] / full["wall"], 2),
            })
        short = args.big_runs and _short_of_room(folder, args.big_runs, args.seed)
        if short:
            print(f"peak memory at {args.big_runs} runs skipped: {short}", file=sys.stderr)
            figures["big_skipped"] = {"big_runs": args.big_runs, "why": short}
        elif args.big_runs:
            big = corpus(folder, args.big_runs, args.seed, args.workers)
            graded = grade(big, fresh(f"results-{args.big_runs}"), opts, sample=True)
            figures.update({
                "big_runs": args.big_runs, "big_grade_s": round(graded["wall"], 1),
                "big_runs_per_s": round(args.big_runs / graded["wall"], 1),
                "big_peak_rss_largest": graded["rss_largest"],
                "big_peak_rss_total": graded["rss_total"],
            })
    finally:
        if not args.keep and args.dir is None:
            shutil.rmtree(folder, ignore_errors=True)
        else:  # the last results of each kind stay with --keep; earlier ones go
            kept = set(made.values()) if args.keep else set()
            for old in sorted(folder.glob("results-*")):
                if old not in kept:
                    shutil.rmtree(old, ignore_errors=True)
    report(figures, as_json=args.json)
    return figures


def _spread(times: list[float]) -> str:
    """' (fastest of 3; slowest 10.41 s)' for repeated timings, '' for one."""
    if len(times) < 2:
        return ""
    return f" (fastest of {len(times)}; slowest {max(times):.2f} s)"


def report(f: dict, as_json: bool = False) -> None:
    if as_json:
        print(json.dumps(f, indent=1))
        return
    rows = [
        ("corpus", f"{f['runs']} runs, {f['files']} files, {f['bytes'] / 1e6:.0f} MB; "
                   f"{f['cores']} cores"),
        *([("rungrade options", " ".join(f["options"]))] if f.get("options") else []),
        ("plain read (1 process)", f"{f['plain_read_s']:.2f} s{_spread(f['plain_read_all_s'])}"),
        ("rungrade grade", f"{f['grade_s']:.2f} s{_spread(f['grade_all_s'])}  = "
                           f"{f['grade_over_read']:.2f}× plain read  (target ≤ 2×)"),
        ("CPU seconds", f"grade {f['grade_cpu_s']:.1f} s (all processes), plain read "
                        f"{f['plain_read_cpu_s']:.1f} s: {f['grade_cpu_over_read_cpu']:.2f}×; "
                        f"rerun {f['rerun_cpu_s']:.1f} s"),
        ("throughput", f"{f['runs_per_s']:.0f} runs/s, {f['mb_per_s']:.1f} MB/s"),
        ("clauses known (kept readings)",
         f"{f['known_grade_s']:.2f} s{_spread(f['known_grade_all_s'])}  = "
         f"{f['known_over_read']:.2f}× plain read; CPU {f['known_cpu_s']:.1f} s"),
        *([("one worker (kept readings)",
            f"{f['one_worker_s']:.2f} s{_spread(f['one_worker_all_s'])}; "
            f"{f['speedup_workers']} workers {f['speedup']:.2f}× faster; by Amdahl's law "
            f"({f['serial_s']:.1f} s serial) {2 * f['speedup_workers']} workers would take "
            f"{f['twice_workers_s']:.2f} s = {f['twice_workers_over_read']:.2f}× plain read")]
          if "one_worker_s" in f else []),
        ("peak memory (own run)", f"RSS {mib(f['grade_peak_rss_largest'])} largest process; "
                        f"PSS {mib(f['grade_peak_rss_total'])} all processes"),
        ("no-change rerun", f"{f['rerun_s']:.2f} s{_spread(f['rerun_all_s'])}  = "
                            f"{100 * f['rerun_share_of_full']:.1f}% of the full run  "
                            f"(target ≤ 5%)"),
        ("lstat every path (1 process)",
         f"{f['plain_stat_s']:.2f} s for {f['paths']} files and folders"
         f"{_spread(f['plain_stat_all_s'])}; the rerun is {f['rerun_over_stat']:.2f}× this"),
    ]
    if "dask_grade_s" in f:
        rows.append((f"dask engine ({f['dask_workers']} workers)",
                     f"{f['dask_grade_s']:.2f} s{_spread(f['dask_grade_all_s'])}  = "
                     f"{f['dask_over_local']:.2f}× the local engine  (target ≤ 1.3×)"))
    if "big_skipped" in f:
        rows.append((f"{f['big_skipped']['big_runs']} runs", f"skipped: {f['big_skipped']['why']}"))
    if "big_runs" in f:
        rows.append((f"{f['big_runs']} runs", f"{f['big_grade_s']:.0f} s "
                     f"({f['big_runs_per_s']:.0f} runs/s); peak RSS "
                     f"{mib(f['big_peak_rss_largest'])} largest process; PSS "
                     f"{mib(f['big_peak_rss_total'])} all processes  (target ≤ 1 GiB)"))
    width = max(len(name) for name, _ in rows)
    for name, value in rows:
        print(f"{name:<{width}}  {value}")


if __name__ == "__main__":
    main()
