"""notebooks/compare_grader_versions.ipynb runs top to bottom in a real kernel on real results."""

from __future__ import annotations

from pathlib import Path

import nbformat
from analyst_runs import BASE_ID, HEAD_ID, grade, grade_two_versions
from conftest import SAMPLE_RUNS
from nbclient import NotebookClient

NOTEBOOK = Path(__file__).resolve().parent.parent / "notebooks" / "compare_grader_versions.ipynb"


def test_notebook_is_committed_without_outputs():
    nb = nbformat.read(NOTEBOOK, as_version=4)
    nbformat.validate(nb)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code and all(c.outputs == [] and c.execution_count is None for c in code)


def _text(outputs) -> str:
    parts = []
    for out in outputs:
        parts.append(out.get("text", ""))
        parts.extend(str(v) for v in out.get("data", {}).values())
    return "\n".join(parts)


def _executed(results: Path, folder: Path, monkeypatch) -> tuple[str, int]:
    """Run the notebook on `results` in a real kernel: (its outputs' text, its PNG charts)."""
    monkeypatch.setenv("RUNGRADE_RESULTS", str(results))
    monkeypatch.delenv("RUNGRADE_BASE", raising=False)
    monkeypatch.delenv("RUNGRADE_HEAD", raising=False)
    nb = nbformat.read(NOTEBOOK, as_version=4)
    client = NotebookClient(nb, kernel_name="python3", timeout=180,
                            resources={"metadata": {"path": str(folder)}})
    client.execute()  # raises CellExecutionError on the first failing cell

    outputs = [out for cell in nb.cells if cell.cell_type == "code" for out in cell.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    text = _text(outputs)
    assert "https://" not in text and "http://" not in text  # nothing loads from the network
    return text, len([o for o in outputs if "image/png" in o.get("data", {})])


def test_notebook_executes_against_fresh_results(tmp_path, monkeypatch):
    text, charts = _executed(grade_two_versions(tmp_path)["results"], tmp_path, monkeypatch)
    assert f"base {BASE_ID} → head {HEAD_ID}" in text
    assert "satisfied→violated" in text  # the flipped clauses are on show
    assert charts == 3, "trend, distribution and flip charts, rendered locally"


def test_notebook_executes_against_the_sample_results(tmp_path, monkeypatch):
    # `make run`'s results: the contract grader's id and three ledger graders' ids, no two
    # of which graded the same run; the notebook says there is nothing to diff. In a folder
    # whose name holds a quote, which rungrade takes (the raw Parquet cell pasted it into SQL
    # as it was: a ParserException)
    results = tmp_path / "team's results"
    grade(SAMPLE_RUNS, results)
    text, charts = _executed(results, tmp_path, monkeypatch)
    assert "no diff: a diff needs results of two grader ids that graded the same runs" in text
    assert charts == 2, "trend and distribution charts; no flip chart without a pair"


def test_notebook_reads_its_folder_from_the_environment():
    source = "".join(c.source for c in nbformat.read(NOTEBOOK, as_version=4).cells)
    assert 'os.environ.get("RUNGRADE_RESULTS", str(Path("..") / "results"))' in source
