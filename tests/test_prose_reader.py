"""Reading run folders into source tables: how contracts and outputs are located."""

import polars as pl
from run_folders import BINDINGS, MANIFEST, WRITER
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


def test_services_the_manifest_leaves_out_are_graded_from_what_the_run_shows(make_run,
                                                                            run_root):
    # A manifest cut after its first service left the writer out: its clauses went
    # unaccounted for, and the run was satisfied at 100 with a failing service dropped.
    # A service the program names, or that publishes outputs, with no contract in the run
    # holds a missing-contract clause; a snapshot of a test, or of the program's own name's
    # outputs, is no service.
    cut = MANIFEST.split("### writer")[0]
    tester = "---\nname: smoke\nkind: test\n---\n### Ensures\n- `verdict`: passes\n"
    program = ("---\nname: brief\nkind: program\nservices: [researcher, writer, archivist]\n"
               "---\n# Brief\n\n### Ensures\n- `report`: a markdown brief for the caller\n")
    make_run(files={"manifest.md": cut, "program.md": program, "services/smoke.md": tester,
                    "bindings/writer/tldr.md": "Short light scatters more. Long light does "
                                               "not.\n",
                    "bindings/indexer/index.md": "- a\n", "bindings/brief/notes.md": "n\n"})
    _, tables = grade_folder(run_root)
    services = tables["services"].sort("position")
    assert services.select("service", "contract_source").rows() == [
        ("brief (program)", "program.md"), ("researcher", "services/researcher.md"),
        ("writer", "services/writer.md"), ("archivist", None), ("indexer", None)]
    verdicts = tables["clause_verdicts"]
    writer = verdicts.filter(pl.col("service") == "writer")
    assert writer.height == 2 and "violated" in writer["verdict"].to_list()  # (two sentences)
    missing = tables["clauses"].filter(pl.col("kind") == "missing_contract")
    assert sorted(missing["service"].to_list()) == ["archivist", "indexer"]
    (run,) = tables["run_scores"].to_dicts()
    assert run["overall_verdict"] != "satisfied" and run["overall_score"] < 100


def test_a_snapshot_or_folder_a_listed_service_is_wired_to_is_no_service_of_its_own(make_run,
                                                                                   run_root):
    # the manifest wires the writer to services/writer-v2.md, publishing into bindings/out/
    manifest = (MANIFEST.replace("source: services/writer.md", "source: services/writer-v2.md")
                .replace("bindings/writer/", "bindings/out/"))
    files = {"manifest.md": manifest, "services/writer-v2.md": WRITER}
    files |= {rel.replace("bindings/writer/", "bindings/out/"): text
              for rel, text in BINDINGS.items() if rel.startswith("bindings/writer/")}
    make_run(files=files, drop=("services/writer.md", "bindings/writer"))
    _, tables = grade_folder(run_root)
    assert tables["services"].sort("position").select("service", "contract_source").rows() == [
        ("brief", "program.md"), ("researcher", "services/researcher.md"),
        ("writer", "services/writer-v2.md")]
