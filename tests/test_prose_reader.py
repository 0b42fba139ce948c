"""Reading run folders into source tables: how contracts and outputs are located."""

import polars as pl
from run_folders import MANIFEST
from test_refusals import grade_folder


def test_manifest_source_pointing_at_program_md_reads_the_inline_component(make_run, run_root):
    program = ("---\nname: brief\nkind: program\n---\n# Brief\n\n### Ensures\n- `report`: a brief\n"
               "\n## writer\n\n### Ensures\n- `summary`: a summary\n- `tldr`: one sentence\n")
    manifest = MANIFEST.replace("source: services/writer.md", "source: program.md")
    make_run(files={"program.md": program, "manifest.md": manifest}, drop=("services/writer.md",))
    _, tables = grade_folder(run_root)
    services = {r["service"]: r["contract_source"] for r in tables["services"].to_dicts()}
    assert services["writer"] == "program.md#writer"
    writer = tables["clauses"].filter(pl.col("service") == "writer")["output_name"].to_list()
    assert writer == ["summary", "tldr"]
