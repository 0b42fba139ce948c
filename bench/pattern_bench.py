"""Benchmark checks whose regex differs per row, as contracts name more fields (`make bench`).

A clause that names fields (`required_field`) or forbidden phrases (`forbidden_literal`) is
judged with a regex built from each name. Polars keeps the last 32 compiled patterns of a
thread, so a batch whose clauses name more distinct fields than that must not cycle through
them row by row (it once did: every row then compiled its regex again, about a millisecond
each). This script grades two corpora of the same size and shape, one drawing the names from
--few distinct ones, one from --many, and reports the time per judged row of each and their
ratio (figures printed, not asserted). One process, polars on one thread, warm page cache.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("POLARS_MAX_THREADS", "1")  # as in a grading worker
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from check_runs import grade_folder, write_service_run

WORDS = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "theta", "kappa", "lambda",
         "sigma", "omega", "report", "review", "status", "metric", "value", "owner", "region"]


def corpus(root: Path, runs: int, distinct: int, seed: int) -> None:
    """`runs` one-service runs whose clauses name 8 fields and 2 forbidden phrases, drawn from
    `distinct` names, over an output of about 900 words that mentions a few of them."""
    rng = random.Random(seed)
    names = [f"metric_{k}" for k in range(distinct)]
    for i in range(runs):
        fields = rng.sample(names, min(8, distinct))
        phrases = rng.sample(names, min(2, distinct))
        details = "\n".join(f"  - `{name}`: a value" for name in fields)
        forbidden = "\n".join(f'- `out`: a summary that never mentions "{phrase}"'
                              for phrase in phrases)
        text = " ".join(rng.choice(WORDS) for _ in range(900))
        write_service_run(
            root, f"20260101-000000-b{i:05d}",
            ensures=f"- `out`: a report with fields:\n{details}\n{forbidden}",
            outputs={"out.md": f"{text} {' '.join(fields[:3])} {phrases[0]}"})


def timed(root: Path, repeat: int) -> tuple[float, int]:
    """(fastest seconds to grade `root`, judged rows of the per-row-pattern checks)."""
    grade_folder(root)  # first grade: clause readings and the regex engines warm up
    best, rows = float("inf"), 0
    for _ in range(max(1, repeat)):
        started = time.perf_counter()
        tables, _ = grade_folder(root)
        best = min(best, time.perf_counter() - started)
        checks = tables["checks"]
        rows = checks.filter(checks["check"].is_in(["required_field", "forbidden_literal"]))
        rows = len(rows)
    return best, rows


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=400, help="runs per corpus (one shard)")
    parser.add_argument("--few", type=int, default=8, help="distinct names, small pool")
    parser.add_argument("--many", type=int, default=64, help="distinct names, large pool")
    parser.add_argument("--repeat", type=int, default=3, help="timings per corpus; fastest kept")
    parser.add_argument("--seed", type=int, default=11)
    args = parser.parse_args(argv)
    figures: dict = {"runs": args.runs}
    with tempfile.TemporaryDirectory(prefix="rungrade-pattern-bench-") as folder:
        for label, distinct in (("few", args.few), ("many", args.many)):
            root = Path(folder) / label
            corpus(root, args.runs, distinct, args.seed)
            seconds, rows = timed(root, args.repeat)
            figures[label] = {"distinct": distinct, "seconds": round(seconds, 3), "rows": rows,
                              "ms_per_row": round(1000 * seconds / max(rows, 1), 3)}
    ratio = figures["many"]["ms_per_row"] / max(figures["few"]["ms_per_row"], 1e-9)
    figures["many_over_few"] = round(ratio, 2)
    for label in ("few", "many"):
        f = figures[label]
        print(f"{f['distinct']:>3} distinct names  {f['seconds']:.2f} s for {args.runs} runs, "
              f"{f['rows']} per-row-pattern rows ({f['ms_per_row']:.3f} ms per row, whole "
              "grade)")
    print(f"many / few  {ratio:.2f}× per row  (cycling through the patterns row by row: "
          "about 15×)")
    return figures


if __name__ == "__main__":
    main()
