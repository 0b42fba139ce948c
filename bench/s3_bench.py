"""Benchmark `rungrade grade` over S3, against simply reading the same keys (`make bench`).

A real S3 server (moto, on loopback) answers every request after a fixed delay, as a bucket
across a network does (--latency-ms, 30 by default; moto alone answers in a few ms, which
hides the round trips a grade waits on). One run of this script reports, for a synthetic
corpus of --runs runs:
  - plain read: one process listing the corpus and reading every key in one concurrent
    request batch (s3fs `cat`), on as many connections as rungrade's client keeps
  - rungrade grade: wall time of the command from the bucket into results in the same bucket
    (runs and results both on S3, as a nightly job keeps them), its ratio to
    the plain read, the object reads it made per run and the most requests the server had in
    hand at once
  - the no-change rerun of the same command, and its share of the grade
  - rungrade's discovery of the runs alone (what a rerun lists) against one flat listing of
    the same keys, from the root and from the runs folder of one program (its run folders are
    listed in ranges); from the root also the CPU each spends per 1,000 keys listed (pages
    are read in the grading process, so this bounds how fast one process lists a bucket)
  - the same corpus graded from the local disk, and how many times that the S3 grade takes
  - what an analyst does next: open the views of the S3 results, count a table, read a mart,
    read the grade log (each timed, and the requests the server answered for them by method)
The server runs in this process, the plain read and the grade in processes of their own. The
figures are printed, not asserted.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import NamedTuple

RUNGRADE = str(Path(sys.executable).parent / "rungrade")
BUCKET = "rungrade-bench"
# One listing, then every key in one concurrent `cat` on as many connections as rungrade uses.
PLAIN_READ = """
import sys, s3fs
from pipeline.sources.bucket import POOL_CONNECTIONS
fs = s3fs.S3FileSystem(endpoint_url=sys.argv[1], use_listings_cache=False,
                       config_kwargs={"max_pool_connections": POOL_CONNECTIONS})
keys = fs.find(sys.argv[2])
print(sum(len(data) for data in fs.cat(keys).values()))
"""
# Listing only, timed inside the process (imports and each client's making excluded): one
# flat listing of every key (s3fs, botocore as it comes), then rungrade's discovery of the
# runs under the same prefix; wall and CPU seconds of each (CPU: every thread of the process).
LISTINGS = """
import sys, time, s3fs
from pipeline.sources.bucket import Bucket
fs = s3fs.S3FileSystem(endpoint_url=sys.argv[1], use_listings_cache=False)
fs.exists(sys.argv[2])
started, cpu = time.perf_counter(), time.process_time()
keys = len(fs.find(sys.argv[2]))
flat, flat_cpu = time.perf_counter() - started, time.process_time() - cpu
bucket = Bucket("s3://" + sys.argv[2], sys.argv[1])
bucket.exists()
started, cpu = time.perf_counter(), time.process_time()
runs = sum(1 for _ in bucket.discover())
print(flat, time.perf_counter() - started, keys, runs, flat_cpu, time.process_time() - cpu)
"""


# What an analyst does the next morning, timed inside the process (imports excluded): open
# the views, count a table, read a mart (several tables in one query), read the grade log.
QUERIES = """
import sys, time
from pipeline.catalog import connect, read_grades
started = time.perf_counter()
con = connect(sys.argv[2], sys.argv[1])
opened = time.perf_counter()
con.sql("select count(*) from run_scores").fetchall()
table = time.perf_counter()
con.sql("select * from version_summary").fetchall()
mart = time.perf_counter()
read_grades(sys.argv[2], sys.argv[1])
print(opened - started, table - opened, mart - table, time.perf_counter() - mart)
"""


def slow_s3_server(latency: float):
    """A moto S3 server on a free loopback port that answers each request after `latency`
    seconds; `server.reads` counts the object reads it served, `server.peak` the most
    requests it had in hand at once, `server.methods` the requests by HTTP method."""
    from moto.moto_server.threaded_moto_server import ThreadedMotoServer
    from moto.moto_server.werkzeug_app import MotoRequestHandler, create_backend_app
    from werkzeug.serving import make_server

    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # one line per request otherwise
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]

    class SlowS3Server(ThreadedMotoServer):
        reads = in_flight = peak = 0
        lock = threading.Lock()

        def _server_entry(self) -> None:
            # S3's application alone: moto's own server works out which AWS service each
            # request asks for, under a lock all requests share (tests/moto_s3.py)
            app = create_backend_app("s3")

            def delayed(environ, start_response):
                read = (environ["REQUEST_METHOD"] == "GET"
                        and "/runs/" in environ.get("PATH_INFO", ""))
                with self.lock:
                    self.reads += read
                    self.methods[environ["REQUEST_METHOD"]] += 1
                    self.in_flight += 1
                    self.peak = max(self.peak, self.in_flight)
                try:
                    time.sleep(latency)
                    return app(environ, start_response)
                finally:
                    with self.lock:
                        self.in_flight -= 1

            self._server = make_server(self._ip_address, self._port, delayed, threaded=True,
                                       request_handler=MotoRequestHandler)
            self._server_ready_event.set()
            self._server.serve_forever()

    server = SlowS3Server("127.0.0.1", port, verbose=False)
    server.methods = Counter()
    server.start()
    server.endpoint = f"http://127.0.0.1:{port}"
    return server


def upload(local: Path) -> int:
    """Put every file under `local` into the bucket under `runs/`, through moto's own store
    (the grade reads over HTTP; thousands of uploads over HTTP would only slow the bench)."""
    from moto.core import DEFAULT_ACCOUNT_ID
    from moto.s3.models import s3_backends

    backend = s3_backends[DEFAULT_ACCOUNT_ID]["aws"]
    backend.create_bucket(BUCKET, "us-east-1")
    count = 0
    for path in sorted(local.rglob("*")):
        if path.is_file():
            backend.put_object(BUCKET, f"runs/{path.relative_to(local)}", path.read_bytes())
            count += 1
    return count


class Listed(NamedTuple):
    """One flat listing against rungrade's discovery, under one prefix (see LISTINGS)."""

    flat_s: float
    discover_s: float
    keys: int
    runs: int
    flat_cpu_s: float
    discover_cpu_s: float


def listings(endpoint: str, prefix: str) -> Listed:
    """A flat listing and rungrade's discovery of the runs under `prefix` (`bucket/key`),
    timed in a process of their own (see LISTINGS)."""
    done = subprocess.run([sys.executable, "-c", LISTINGS, endpoint, prefix], check=True,
                          capture_output=True, text=True)
    flat_s, discover_s, keys, runs, flat_cpu, discover_cpu = done.stdout.split()[:6]
    return Listed(float(flat_s), float(discover_s), int(keys), int(runs), float(flat_cpu),
                  float(discover_cpu))


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=300, help="runs in the corpus")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--latency-ms", type=float, default=30.0,
                        help="delay before the server answers each request")
    parser.add_argument("--workers", type=int, default=None, help="rungrade --workers")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args(argv)

    from pipeline.synth import synthesize

    os.environ.update({"AWS_ACCESS_KEY_ID": "bench", "AWS_SECRET_ACCESS_KEY": "bench",
                       "AWS_DEFAULT_REGION": "us-east-1"})
    os.environ.pop("AWS_ENDPOINT_URL", None)
    server = slow_s3_server(args.latency_ms / 1000)
    with tempfile.TemporaryDirectory(prefix="rungrade-s3-bench-") as folder:
        local = Path(folder) / "runs"
        synthesize(str(local), args.runs, seed=args.seed, workers=args.workers)
        files = upload(local)

        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", PLAIN_READ, server.endpoint, f"{BUCKET}/runs"],
                       check=True, capture_output=True)
        read_s = time.perf_counter() - started

        extra = ["--json", *(["--workers", str(args.workers)] if args.workers else [])]
        cmd = [RUNGRADE, "grade", f"s3://{BUCKET}/runs", "--out", f"s3://{BUCKET}/results",
               "--endpoint-url", server.endpoint, *extra]
        local_cmd = [RUNGRADE, "grade", str(local), "--out", str(Path(folder) / "local-results"),
                     *extra]
        server.reads = server.peak = 0
        started = time.perf_counter()
        done = subprocess.run(cmd, capture_output=True, text=True)
        grade_s = time.perf_counter() - started
        if done.returncode != 0:
            raise SystemExit(f"rungrade grade failed ({done.returncode}):\n{done.stderr}")
        summary = json.loads(done.stdout)
        started = time.perf_counter()
        again = json.loads(subprocess.run(cmd, check=True, capture_output=True,
                                          text=True).stdout)
        rerun_s = time.perf_counter() - started
        assert again["skipped"] == summary["found"], again
        server.methods.clear()
        queried = subprocess.run([sys.executable, "-c", QUERIES, server.endpoint,
                                  f"s3://{BUCKET}/results"], check=True, capture_output=True,
                                 text=True)
        open_s, table_s, mart_s, log_s = map(float, queried.stdout.split()[:4])
        asked = dict(server.methods)
        listed = listings(server.endpoint, f"{BUCKET}/runs")
        pages = listed.keys / 1000  # (a page holds 1,000 keys)
        # a root at one program's runs folder (the biggest): its run folders, listed in ranges
        program = max((p for p in local.iterdir() if (p / ".prose" / "runs").is_dir()),
                      key=lambda p: sum(1 for _ in (p / ".prose" / "runs").iterdir()))
        one = listings(server.endpoint, f"{BUCKET}/runs/{program.name}/.prose/runs")
        started = time.perf_counter()
        subprocess.run(local_cmd, check=True, capture_output=True)
        local_s = time.perf_counter() - started
    server.stop()
    figures = {
        "runs": args.runs, "files": files, "latency_ms": args.latency_ms,
        "plain_read_s": round(read_s, 2), "grade_s": round(grade_s, 2),
        "grade_over_read": round(grade_s / read_s, 3),
        "reads_per_run": round(server.reads / args.runs, 1), "peak_in_flight": server.peak,
        "local_grade_s": round(local_s, 2), "s3_over_local": round(grade_s / local_s, 2),
        "rerun_s": round(rerun_s, 2), "rerun_share": round(rerun_s / grade_s, 3),
        "flat_listing_s": round(listed.flat_s, 2), "discover_s": round(listed.discover_s, 2),
        "discover_over_listing": round(listed.discover_s / listed.flat_s, 2),
        "flat_cpu_ms_per_1000_keys": round(1000 * listed.flat_cpu_s / pages, 1),
        "discover_cpu_ms_per_1000_keys": round(1000 * listed.discover_cpu_s / pages, 1),
        "program_runs": one.runs, "program_discover_s": round(one.discover_s, 2),
        "program_discover_over_listing": round(one.discover_s / one.flat_s, 2),
        "views_open_s": round(open_s, 2), "table_query_s": round(table_s, 2),
        "mart_query_s": round(mart_s, 2), "grade_log_s": round(log_s, 2),
        "analyst_requests": asked, "batches": len(summary["batches"]),
        "graded": summary["graded"], "refused": summary["refused"],
    }
    if args.json:
        print(json.dumps(figures, indent=1))
    else:
        rows = [
            ("S3 corpus", f"{args.runs} runs, {files} keys; {args.latency_ms:.0f} ms per request"),
            ("plain read (1 process, every key at once)", f"{read_s:.1f} s"),
            ("rungrade grade from S3", f"{grade_s:.1f} s = {grade_s / read_s:.2f}× plain read; "
                                       f"{figures['reads_per_run']} object reads per run, "
                                       f"at most {server.peak} requests in flight"),
            ("no-change rerun from S3", f"{rerun_s:.1f} s = {100 * rerun_s / grade_s:.0f}% of "
                                        "the grade"),
            ("discovery of the runs from S3", f"{listed.discover_s:.1f} s = "
                                              f"{figures['discover_over_listing']:.2f}× one flat "
                                              f"listing of the same keys "
                                              f"({listed.flat_s:.1f} s); CPU "
                                              f"{figures['discover_cpu_ms_per_1000_keys']} ms "
                                              f"per 1,000 keys, the flat listing "
                                              f"{figures['flat_cpu_ms_per_1000_keys']} ms"),
            ("discovery under one program's runs", f"{one.discover_s:.1f} s for {one.runs} runs "
                                                   f"= {one.discover_s / one.flat_s:.2f}× one "
                                                   f"flat listing ({one.flat_s:.1f} s)"),
            ("the same corpus from local disk", f"{local_s:.1f} s; S3 takes "
                                                f"{grade_s / local_s:.1f}× this"),
            ("analysts' queries on the S3 results", f"views opened {open_s:.2f} s, a table "
                                                    f"{table_s:.2f} s, a mart {mart_s:.2f} s, "
                                                    f"the grade log {log_s:.2f} s ("
                                                    f"{figures['batches']} "
                                                    + ("batch" if figures["batches"] == 1
                                                       else "batches") + "; requests: "
                                                    + ", ".join(f"{n} {m}" for m, n in
                                                                sorted(asked.items())) + ")"),
        ]
        width = max(len(name) for name, _ in rows)
        for name, value in rows:
            print(f"{name:<{width}}  {value}")
    return figures


if __name__ == "__main__":
    main()
