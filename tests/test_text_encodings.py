"""Files as other tools write them: a byte-order mark before the text, names spelled with
decomposed accents (as macOS writes folder names), and a long run's log past a megabyte. Each
run is graded as the same run written plainly is."""

from __future__ import annotations

import unicodedata

import polars as pl
import pytest
from check_runs import grade_folder
from run_folders import BINDINGS, MANIFEST, PROGRAM, RESEARCHER, STATE, WRITER, write_run

from pipeline.sources.prose import LOG_CAP

RUN = "20261112-031502-abc123"
BOM = "\ufeff"
# the researcher promises one JSON output more
RESEARCHER_JSON = RESEARCHER.replace("### Errors", "- `data`: a JSON object\n\n### Errors")


def outcome(root) -> tuple[list[tuple], list[tuple]]:
    """(clause verdicts with their reasons, service scores) of the one run under `root`, by
    service and clause text: what must not change with how the files were written."""
    tables, _ = grade_folder(root)
    assert tables["refusals"].is_empty(), tables["refusals"].to_dicts()
    verdicts = (tables["clause_verdicts"]
                .join(tables["clauses"].select("clause_id", "text"), on="clause_id")
                .select("service", "text", "verdict", "confidence", "evidence", "reason")
                .sort("service", "text").rows())
    scores = tables["service_scores"].select("service", "service_score").sort("service").rows()
    return verdicts, scores


def test_a_byte_order_mark_opening_any_file_is_no_part_of_its_text(tmp_path):
    files = {"program.md": PROGRAM, "manifest.md": MANIFEST,
             "services/researcher.md": RESEARCHER_JSON, "services/writer.md": WRITER,
             "state.md": STATE.format(run_id=RUN), **BINDINGS,
             "bindings/researcher/data.json": '{"rows": 3}'}
    plain = write_run(tmp_path / "plain", RUN, files=files)
    marked = write_run(tmp_path / "marked", RUN,
                       files={rel: BOM + text for rel, text in files.items()})
    expected = outcome(plain.parent)
    # (front matter, the first heading, the JSON document and the log's header all start
    # after the mark: before, the program went unnamed and the JSON output was "not JSON")
    assert outcome(marked.parent) == expected
    assert ("researcher", "`data`: a JSON object", "satisfied") in [
        row[:3] for row in expected[0]]
    assert (marked / "program.md").read_bytes().startswith(b"\xef\xbb\xbf")


@pytest.mark.parametrize("written", [
    # UTF-16 with its mark, as PowerShell and Notepad write it (v15 read the bytes as UTF-8:
    # a service's contract gave no ensures and the service left its run's score)
    lambda text: text.encode("utf-16"), lambda text: text.encode("utf-16-be").join(
        [b"\xfe\xff", b""]),
    lambda text: text.encode("utf-32"),
    # lines ended by `\r` alone, as classic Mac editors end them (v15 read an output's list
    # as one line: "at least 3 findings" failed)
    lambda text: text.replace("\n", "\r").encode(),
    # `\r\r\n`, what Windows' text mode writes of "\r\n" (a blank line after each line
    # while v16 was being written)
    lambda text: text.replace("\n", "\r\r\n").encode(),
], ids=["utf-16-le", "utf-16-be", "utf-32", "cr-only", "cr-cr-lf"])
def test_a_file_in_another_unicode_encoding_or_line_end_reads_as_the_same_text(tmp_path,
                                                                               written):
    files = {"program.md": PROGRAM, "manifest.md": MANIFEST,
             "services/researcher.md": RESEARCHER_JSON, "services/writer.md": WRITER,
             "state.md": STATE.format(run_id=RUN), **BINDINGS,
             "bindings/researcher/data.json": '{"rows": 3}'}
    plain = write_run(tmp_path / "plain", RUN, files=files)
    other = write_run(tmp_path / "other", RUN, files=files)
    for rel, text in files.items():
        (other / rel).write_bytes(written(text))
    assert outcome(other.parent) == outcome(plain.parent)
    tables, _ = grade_folder(other.parent)
    assert not tables["bindings"]["decode_errors"].any()


def test_names_with_decomposed_accents_are_the_names_with_composed_ones(tmp_path):
    composed, decomposed = "résumé", unicodedata.normalize("NFD", "résumé")
    assert composed != decomposed

    def write(root, manifest_name: str, folder_name: str) -> None:
        # the manifest names the service one way; its folders (and the log) spell it the other
        write_run(root, RUN, files={
            "manifest.md": MANIFEST.replace("writer", manifest_name),
            f"services/{manifest_name}.md": WRITER.replace("writer", manifest_name),
            "program.md": PROGRAM.replace("writer", manifest_name),
            "state.md": STATE.format(run_id=RUN).replace("writer", folder_name),
            **{rel.replace("writer", folder_name): text for rel, text in BINDINGS.items()}},
            drop=("services/writer.md", "bindings/writer/"))

    write(tmp_path / "same", composed, composed)
    write(tmp_path / "mixed", composed, decomposed)
    expected = outcome(tmp_path / "same")
    assert outcome(tmp_path / "mixed") == expected
    # the service's outputs were found: its clauses are judged, not "not published"
    assert {v for service, _, v, *_ in expected[0] if service == composed} == {"satisfied"}


def test_a_log_past_a_megabyte_is_read_to_its_end(tmp_path):
    step = "2→ researcher ✓ (" + "x" * 200 + ")\n"
    long_log = STATE.format(run_id=RUN).replace("2→ researcher ✓\n", step * 6000)
    assert len(long_log.encode()) > 1 << 20
    write_run(tmp_path / "long", RUN, files={"state.md": long_log})
    write_run(tmp_path / "short", RUN)
    # (v14 refused it incomplete-run: its '---end' line was past the 1 MB it read)
    assert outcome(tmp_path / "long") == outcome(tmp_path / "short")


def test_a_log_longer_than_what_is_read_of_it_says_so(tmp_path):
    step = ("2→ researcher ✓ (" + "x" * 4000 + ")\n").encode()
    path = write_run(tmp_path, RUN) / "state.md"
    with path.open("wb") as f:
        f.write(f"# run:{RUN} brief\n".encode())
        f.write(step * (LOG_CAP // len(step) + 1))
        f.write(b"---end 2026-11-12T03:20:11Z\n")
    tables, _ = grade_folder(tmp_path)
    refusal = tables["refusals"].row(0, named=True)
    assert refusal["reason"] == "incomplete-run"
    assert refusal["detail"].startswith(f"state.md is longer than the {LOG_CAP >> 20} MB this "
                                        "grader reads of it"), refusal["detail"]
    assert tables["runs"].filter(pl.col("status") == "graded").is_empty()


def test_a_log_whose_read_start_ends_on_its_end_line_is_still_cut(tmp_path):
    # blank lines past the cap after '---end', then the run went on and failed: v19 took the
    # '---end' the start closes on for the last line, and graded the run complete
    path = write_run(tmp_path, RUN) / "state.md"
    text = path.read_bytes()
    with path.open("wb") as f:
        f.write(text)
        f.write(b"\n" * LOG_CAP)
        f.write("---resume\n6→ writer ✗ crashed\n---error 2026-11-12T04:00:00Z\n".encode())
    tables, _ = grade_folder(tmp_path)
    assert tables["refusals"]["reason"].to_list() == ["incomplete-run"]
    assert tables["runs"].select("completed", "ended_at").rows() == [(False, None)]
