"""Property over whole generated run folders: every run ends graded or refused, and every
top-level ensures clause of a graded run gets exactly one verdict.

Each example writes a few run folders to a fresh temporary root (valid templates, damaged
templates, syntax soup, arbitrary bytes), then reads and grades them with the real pipeline.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import polars as pl
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from run_folders import BINDINGS, MANIFEST, PROGRAM, RESEARCHER, STATE, WRITER
from test_parser_properties import (
    CONTRACT_HEADERS,
    CONTRACT_LINES,
    MANIFEST_HEADERS,
    MANIFEST_LINES,
    STATE_HEADERS,
    STATE_LINES,
    document,
    syntax_text,
)

from pipeline.checks import default_grader
from pipeline.grade import grade_tables, read_runs, source_tables
from pipeline.sources.bucket import Bucket, group_runs
from pipeline.sources.contract import parse_contract
from pipeline.tables import REFUSAL_REASONS

NAMES = ["researcher", "writer", "wri ter", "résumé", "a..b", "brief", "Writer", "x"]
GRADER = default_grader()


def _damaged(text: str) -> st.SearchStrategy[str]:
    """The template with one span cut out or one line repeated."""
    lines = text.splitlines()
    return st.one_of(
        st.tuples(st.integers(0, len(lines)), st.integers(0, 6)).map(
            lambda ab: "\n".join(lines[: ab[0]] + lines[ab[0] + ab[1]:])),
        st.integers(0, max(0, len(lines) - 1)).map(
            lambda i: "\n".join(lines[: i + 1] + lines[i:])),
    )


def content(template: str, headers: list[str], lines: list[str]) -> st.SearchStrategy[bytes]:
    text = st.one_of(st.just(template), _damaged(template), document(headers, lines),
                     syntax_text(lines), st.text(max_size=200))
    return st.one_of(text.map(str.encode), st.binary(max_size=200),
                     text.map(lambda t: t.encode("latin-1", errors="replace")))


@st.composite
def manifests(draw) -> bytes:
    names = draw(st.lists(st.sampled_from(NAMES), max_size=5))
    blocks = []
    for name in names:
        outputs = draw(st.lists(st.sampled_from(["findings", "summary", "tldr", "report", "x"]),
                                max_size=3))
        blocks.append(f"### {name}\nsource: services/{draw(st.sampled_from(NAMES))}.md\n"
                      "outputs:\n" + "".join(f"- (public) {o} → bindings/{name}/{o}.md\n"
                                             for o in outputs)
                      + "errors:\n- no-results\n")
    order = "".join(f"{i + 1}. {n}\n" for i, n in enumerate(draw(st.lists(
        st.sampled_from(NAMES), max_size=4))))
    made = f"# Manifest: {draw(st.sampled_from(NAMES))}\n\n## Graph\n\n" + "\n".join(blocks) + (
        f"\n---\n\n## Execution Order\n{order}")
    return draw(st.one_of(st.just(made.encode()),
                          content(MANIFEST, MANIFEST_HEADERS, MANIFEST_LINES)))


@st.composite
def run_folders(draw) -> dict[str, bytes]:
    files: dict[str, bytes] = {}
    optional = st.booleans()
    if draw(st.integers(0, 9)) > 0:
        prog = draw(st.one_of(
            st.sampled_from(NAMES).map(lambda n: PROGRAM.replace("name: brief", f"name: {n}")),
            st.just(PROGRAM)))
        files["program.md"] = draw(content(prog, CONTRACT_HEADERS, CONTRACT_LINES))
    if draw(st.integers(0, 9)) > 0:
        files["manifest.md"] = draw(manifests())
    for name in draw(st.lists(st.sampled_from(NAMES), max_size=4, unique=True)):
        template = draw(st.sampled_from([RESEARCHER, WRITER]))
        files[f"services/{name}.md"] = draw(content(template, CONTRACT_HEADERS, CONTRACT_LINES))
    if draw(st.integers(0, 9)) > 0:
        state = STATE.format(run_id="x")
        files["state.md"] = draw(st.one_of(st.just(state.encode()),
                                           content(state, STATE_HEADERS, STATE_LINES)))
    for rel, text in BINDINGS.items():
        if draw(optional):
            files[rel] = draw(st.one_of(st.just(text.encode()), st.binary(max_size=300)))
    for _ in range(draw(st.integers(0, 3))):
        svc, out = draw(st.sampled_from(NAMES)), draw(st.sampled_from(["findings", "report", "x"]))
        ext = draw(st.sampled_from(["md", "json", "txt", ""]))
        files[f"bindings/{svc}/{out}{'.' + ext if ext else ''}"] = draw(st.binary(max_size=300))
    if draw(optional):
        files[f"workspace/{draw(st.sampled_from(NAMES))}/__error.md"] = draw(st.one_of(
            st.just(b"# Error: no-results\n\nnothing found\n"), st.binary(max_size=100)))
    # a folder with no file at all is no run yet (object stores have no empty folders)
    return files or {"agents/memory.md": b""}


def write(root: Path, run_id: str, files: dict[str, bytes]) -> None:
    for rel, data in files.items():
        path = root / run_id / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)


@settings(max_examples=int(os.environ.get("HYPOTHESIS_RUNS", 50)), deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.lists(run_folders(), min_size=1, max_size=4))
def test_every_run_is_graded_or_refused_and_every_clause_judged_once(runs):
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for i, files in enumerate(runs):
            write(root, f"20261112-0315{i:02d}-p{i}", files)
        bucket = Bucket(str(root))
        refs = group_runs(bucket, bucket.walk())
        assert len(refs) == len(runs)
        tables, _ = grade_tables(source_tables(read_runs(str(root), refs)), GRADER)

        runs_t, refusals = tables["runs"], tables["refusals"]
        assert runs_t.height == len(refs) and runs_t["run_uri"].n_unique() == len(refs)
        graded = runs_t.filter(pl.col("status") == "graded")["run_uri"].to_list()
        refused = runs_t.filter(pl.col("status") == "refused")["run_uri"].to_list()
        assert len(graded) + len(refused) == len(refs)
        assert sorted(refusals["run_uri"].to_list()) == sorted(refused)
        bad = refusals.filter(~pl.col("reason").is_in(list(REFUSAL_REASONS))
                              | (pl.col("reason") == "internal-error"))
        assert bad.is_empty(), bad.to_dicts()

        verdicts = tables["clause_verdicts"]
        keys = ["run_uri", "service", "clause_id"]
        assert not verdicts.select(keys).is_duplicated().any(), "a clause judged twice"
        top = tables["clauses"].filter(pl.col("kind") != "detail").select(keys)
        assert sorted(top.rows()) == sorted(verdicts.select(keys).rows())
        assert set(verdicts["run_uri"].to_list()) <= set(graded)
        assert set(tables["run_scores"]["run_uri"].to_list()) == set(graded)

        # Independently of the clauses table: top-level ensures of each contract file used.
        for svc in tables["services"].filter(pl.col("kind") == "service").iter_rows(named=True):
            source = svc["contract_source"]
            if source is None or "#" in source:
                continue
            text = (Path(svc["run_uri"]) / source).read_bytes().decode("utf-8", "replace")
            expected = sum(1 for i in parse_contract(text).main.items("ensures")
                           if i.parent_position is None)
            got = verdicts.filter((pl.col("run_uri") == svc["run_uri"])
                                  & (pl.col("service") == svc["service"])).height
            assert got == expected, (svc["service"], source)
