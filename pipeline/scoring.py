"""Run the SQL models of `sql/` in DuckDB over the stage tables.

Each model is one file; its name is the file's stem and later models may read earlier ones.
The same files run unchanged in the duckdb CLI against `RESULTS/catalog.duckdb`.
"""

from __future__ import annotations

from pathlib import Path

import duckdb
import polars as pl

SQL_DIR = Path(__file__).resolve().parent.parent / "sql"
SCORE_MODELS = ("scores/service_scores", "scores/run_scores")


def model_sql(model: str) -> str:
    path = SQL_DIR / f"{model}.sql"
    if not path.exists():
        raise FileNotFoundError(f"SQL model {path} is missing; is the project checkout whole?")
    return path.read_text()


def run_models(tables: dict[str, pl.DataFrame], models: tuple[str, ...] = SCORE_MODELS,
               con: duckdb.DuckDBPyConnection | None = None) -> dict[str, pl.DataFrame]:
    """Register `tables`, materialise each model in order, return the models as frames."""
    con = con or duckdb.connect()
    for name, df in tables.items():
        con.register(name, df)
    out = {}
    for model in models:
        name = Path(model).name
        con.execute(f"create or replace temp table {name} as {model_sql(model)}")
        out[name] = con.sql(f"select * from {name}").pl()
    return out
