"""Reading run folders into source tables: how contracts and outputs are located."""

import shutil

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


def test_services_the_manifest_leaves_out_are_graded_from_their_snapshots(make_run, run_root):
    # A manifest cut after its first service left the writer out: its clauses went
    # unaccounted for, and the run was satisfied at 100 with a failing service dropped.
    # A snapshot of a test, or of a helper a listed service delegates to, is no service; nor
    # does a name the program's `services:` list holds, or a folder of outputs, make one
    # (a list goes stale, a folder may be a copy).
    cut = MANIFEST.split("### writer")[0].replace(
        "errors:\n- no-results", "errors:\n- no-results\ndelegates:\n- url-fetcher "
        "(services/url-fetcher.md)")
    tester = "---\nname: smoke\nkind: test\n---\n### Ensures\n- `verdict`: passes\n"
    helper = "---\nname: url-fetcher\n---\n### Ensures\n- `page`: the page's text\n"
    program = ("---\nname: brief\nkind: program\nservices: [researcher, writer, archivist]\n"
               "---\n# Brief\n\n### Ensures\n- `report`: a markdown brief for the caller\n")
    make_run(files={"manifest.md": cut, "program.md": program, "services/smoke.md": tester,
                    "services/url-fetcher.md": helper,
                    "bindings/writer/tldr.md": "Short light scatters more. Long light does "
                                               "not.\n",
                    "bindings/indexer/index.md": "- a\n"})
    _, tables = grade_folder(run_root)
    services = tables["services"].sort("position")
    assert services.select("service", "contract_source").rows() == [
        ("brief", "program.md"), ("researcher", "services/researcher.md"),
        ("writer", "services/writer.md")]
    writer = tables["clause_verdicts"].filter(pl.col("service") == "writer")
    assert writer.height == 2 and "violated" in writer["verdict"].to_list()  # (two sentences)
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


def test_a_contract_named_otherwise_than_the_manifest_names_it_is_found(make_run, run_root):
    # `### Writer_Svc` with no source, or a source spelled `writer-svc` for writer_svc.md:
    # the snapshot was looked up by its exact path, and the service got a missing contract
    for source in ("", "source: services/writer-svc.md\n"):
        manifest = MANIFEST.replace("### writer\nsource: services/writer.md\n",
                                    f"### Writer_Svc\n{source}").replace(
            "2. writer (", "2. Writer_Svc (")
        files = {"manifest.md": manifest, "services/writer_svc.md": WRITER}
        files |= {rel.replace("bindings/writer/", "bindings/Writer_Svc/"): text
                  for rel, text in BINDINGS.items() if rel.startswith("bindings/writer/")}
        run = make_run(files=files, drop=("services/writer.md", "bindings/writer"))
        _, tables = grade_folder(run_root)
        assert dict(tables["services"].select("service", "contract_source").rows()) == {
            "brief": "program.md", "researcher": "services/researcher.md",
            "Writer_Svc": "services/writer_svc.md"}
        shutil.rmtree(run)


def test_an_inline_component_the_manifest_wires_under_another_name_is_graded_once(make_run,
                                                                                   run_root):
    program = ("---\nname: brief\nkind: program\n---\n# Brief\n\n### Ensures\n- `report`: a "
               "brief\n\n## code-writer\n\n### Ensures\n- `summary`: a summary\n"
               "- `tldr`: one sentence\n")
    manifest = MANIFEST.replace("source: services/writer.md", "source: program.md#code-writer")
    make_run(files={"program.md": program, "manifest.md": manifest}, drop=("services/writer.md",))
    _, tables = grade_folder(run_root)
    assert dict(tables["services"].select("service", "contract_source").rows()) == {
        "brief": "program.md", "researcher": "services/researcher.md",
        "writer": "program.md#code-writer"}
