"""One in-memory DuckDB connection per process and thread, for queries over polars frames.

Opening a connection costs 10-20 ms; a worker grades shard after shard, so it keeps one.
`scratch(frames)` registers the frames for the duration of a `with` block and drops them
(and any temp table the block created) afterwards, so nothing leaks from one shard to the
next. A connection is never carried across a fork: a child process opens its own.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING

import polars as pl

if TYPE_CHECKING:
    import duckdb

_LOCAL = threading.local()
# Threads of each new connection; None: DuckDB's default (one per core). Grade workers, one
# per core, set 1 (see grade._init_worker): more would only compete for the same cores.
THREADS: int | None = None


def connect() -> duckdb.DuckDBPyConnection:
    """This process's and thread's connection, opened on first use."""
    import duckdb  # imported here: a grade that finds nothing to do never needs it

    held = getattr(_LOCAL, "held", None)
    if held is None or held[0] != os.getpid():
        config = {"threads": THREADS} if THREADS else {}
        held = _LOCAL.held = (os.getpid(), duckdb.connect(config=config))
    return held[1]


@contextmanager
def scratch(frames: Mapping[str, pl.DataFrame]) -> Iterator[duckdb.DuckDBPyConnection]:
    """This thread's connection with `frames` registered as views under their names."""
    import duckdb  # loaded by connect()

    con = connect()
    for name, df in frames.items():
        con.register(name, df)
    try:
        yield con
    finally:
        try:
            temp = con.sql("select table_name from duckdb_tables() where temporary").fetchall()
            for (name,) in temp:
                con.execute(f'drop table if exists "{name}"')
            for name in frames:
                con.unregister(name)
        except duckdb.Error:  # a broken connection is replaced rather than reused
            _LOCAL.held = None
