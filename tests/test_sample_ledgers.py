"""The sample ledgers and era-B runs grade as data/runs/moltzap-evals/README.md says."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import polars as pl
from typer.testing import CliRunner

from pipeline.cli import app

REPO = Path(__file__).resolve().parent.parent
LEDGERS = REPO / "data" / "runs" / "moltzap-evals" / "ledgers"
ERA_B = REPO / "data" / "runs" / "newsroom"


def test_sample_ledgers_are_exactly_what_the_builder_writes(tmp_path):
    spec = importlib.util.spec_from_file_location("build_samples",
                                                  REPO / "data" / "build_moltzap_samples.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.main(tmp_path / "ledgers")
    built = {p.relative_to(tmp_path / "ledgers"): p.read_bytes()
             for p in (tmp_path / "ledgers").rglob("*") if p.is_file()}
    committed = {p.relative_to(LEDGERS): p.read_bytes() for p in LEDGERS.rglob("*")
                 if p.is_file()}
    assert built == committed and len(built) == 9


def test_samples_grade_as_documented(tmp_path):
    out = tmp_path / "results"
    for root in (LEDGERS, ERA_B):
        result = CliRunner().invoke(app, ["grade", str(root), "--out", str(out), "--json",
                                          "--workers", "1"])
        assert result.exit_code == 0, result.output
        assert json.loads(result.output)["refused"] == 0
    reports = {p.stem: json.loads(p.read_text()) for p in (out / "reports").rglob("*.json")}
    assert {k: v.get("verdict") for k, v in reports.items() if "verdict" in v} == {
        "20261112-084000-recall": "passed", "20261112-091500-pwguard": "failed",
        "20261112-101000-advice": "undecided"}
    runs = pl.read_parquet(out / "runs" / "**" / "*.parquet")
    assert sorted(runs.filter(pl.col("layout") == "prose-b")["run_id"]) == [
        "20261115-070500-kq7", "20261116-070412-Wn_2"]
    summarizer = next(s for s in reports["20261116-070412-Wn_2"]["services"]
                      if s["name"] == "summarizer")
    assert [c["verdict"] for c in summarizer["ensures_clauses"]] == ["violated", "violated"]
