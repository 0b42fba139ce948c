"""Run the SQL models of `sql/` in DuckDB over the stage tables.

Each model is one file; its name is the file's stem and later models may read earlier ones.
The same files run unchanged in the duckdb CLI against `RESULTS/catalog.duckdb`.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

import polars as pl

from .scratch import scratch

if TYPE_CHECKING:
    import duckdb

SQL_DIR = Path(__file__).resolve().parent.parent / "sql"
SCORE_MODELS = ("scores/service_scores", "scores/run_scores")


@cache
def model_sql(model: str) -> str:
    path = SQL_DIR / f"{model}.sql"
    if not path.exists():
        raise FileNotFoundError(f"SQL model {path} is missing; is the project checkout whole?")
    return path.read_text()


def run_models(tables: dict[str, pl.DataFrame], models: tuple[str, ...] = SCORE_MODELS,
               con: duckdb.DuckDBPyConnection | None = None) -> dict[str, pl.DataFrame]:
    """Register `tables`, materialise each model in order, return the models as frames.

    Without `con`, the models run on this process's scratch connection (see scratch.py), with
    only the tables their SQL reads (after `from` or `join`) registered: handing a table to
    DuckDB has a cost, and a table's name may also be a column's (`clauses`, `services`).
    """
    if con is None:
        sql = " ".join(model_sql(model) for model in models)
        named = {name: df for name, df in tables.items()
                 if re.search(rf"\b(?:from|join)\s+{name}\b", sql, re.IGNORECASE)}
        with scratch(named) as own:
            return _materialise(own, models)
    for name, df in tables.items():
        con.register(name, df)
    return _materialise(con, models)


def _materialise(con: duckdb.DuckDBPyConnection, models: tuple[str, ...]
                 ) -> dict[str, pl.DataFrame]:
    out = {}
    for model in models:
        name = Path(model).name
        con.execute(f"create or replace temp table {name} as {model_sql(model)}")
        out[name] = con.sql(f"select * from {name}").pl()
    return out
