"""Every refusal reason, each on a real run folder; a refusal is never a verdict."""

import os
import shutil
from pathlib import Path

import polars as pl
import pytest
from run_folders import MANIFEST, PROGRAM, RESEARCHER, STATE, WRITER, write_run

from pipeline.checks import default_grader
from pipeline.grade import grade_tables, read_runs, source_tables
from pipeline.sources.bucket import Bucket, group_runs
from pipeline.tables import REFUSAL_REASONS

STATE_END = STATE.rsplit("---end ", 1)[1].strip()  # when the written runs end


def grade_folder(root):
    bucket = Bucket(str(root))
    refs = group_runs(bucket, bucket.walk())
    rows = read_runs(str(root), refs)
    tables, _ = grade_tables(source_tables(rows), default_grader())
    return refs, tables


def refusal_of(root):
    refs, tables = grade_folder(root)
    assert len(refs) == 1
    assert tables["runs"].height == 1
    assert tables["run_scores"].is_empty(), "a refused run must not get a verdict"
    assert tables["clause_verdicts"].is_empty()
    (row,) = tables["refusals"].to_dicts()
    assert row["reason"] in REFUSAL_REASONS
    assert tables["runs"]["status"].to_list() == ["refused"]
    return row


@pytest.mark.parametrize(
    ("reason", "kwargs"),
    [
        ("missing-program", {"drop": ("program.md",)}),
        ("missing-manifest", {"drop": ("manifest.md", "services")}),
        ("no-outputs", {"drop": ("bindings/researcher", "bindings/writer")}),
        ("incomplete-run", {"drop": ("state.md",)}),
        ("incomplete-run", {"files": {"state.md": "# run:x brief\n1→ researcher ✓\n"}}),
        ("no-ensures", {"files": {
            "program.md": "---\nname: brief\nkind: program\n---\n# Brief\n",
            "services/researcher.md": "### Requires\n- `question`: q\n",
            "services/writer.md": "### Requires\n- `findings`: f\n"}}),
        # era B is read like era A: with no manifest.run.md it lacks its services list
        ("missing-manifest", {"drop": ("program.md",), "files": {"root.prose.md": "# x\n",
                                                                  "vm.log.md": "x\n"}}),
    ],
)
def test_each_refusal_reason(make_run, run_root, reason, kwargs):
    make_run(**kwargs)
    row = refusal_of(run_root)
    assert row["reason"] == reason
    assert row["detail"]


def test_a_run_without_a_manifest_keeps_its_programs_name(make_run, run_root):
    # the refusal came before program.md was read: trends counted it under "(unknown)"
    make_run(drop=("manifest.md",))
    row = refusal_of(run_root)
    _, tables = grade_folder(run_root)
    assert row["reason"] == "missing-manifest"
    assert tables["runs"]["program"].to_list() == ["brief"]


@pytest.mark.parametrize("dropped", ["program.md", "manifest.md"])
def test_a_run_refused_before_its_log_still_says_when_it_ended(make_run, run_root, dropped):
    # the log was read after these two refusals only: completed and ended_at stayed null,
    # and a run without its program went unnamed though its log names it
    make_run(drop=(dropped,))
    row = refusal_of(run_root)
    _, tables = grade_folder(run_root)
    run = tables["runs"].row(0, named=True)
    assert row["reason"] == f"missing-{dropped.removesuffix('.md')}"
    assert run["completed"] is True
    assert run["ended_at"] == STATE_END
    assert run["program"] == "brief"


@pytest.mark.parametrize("dropped", [("program.md", "state.md"), ("state.md",)])
def test_a_run_without_a_log_did_not_complete(make_run, run_root, dropped):
    make_run(drop=dropped)
    refusal_of(run_root)
    _, tables = grade_folder(run_root)
    assert tables["runs"].select("completed", "ended_at").row(0) == (False, None)


def test_a_run_refused_early_with_an_unreadable_log_keeps_its_refusal(make_run, run_root):
    run = make_run(drop=("program.md", "state.md"))
    os.mkfifo(run / "state.md")  # no file to read: the run's end stays unknown
    row = refusal_of(run_root)
    _, tables = grade_folder(run_root)
    assert row["reason"] == "missing-program"
    assert tables["runs"]["completed"].to_list() == [None]


@pytest.mark.parametrize("rel", ["services/writer.md", "manifest.md", "program.md"])
def test_a_contract_longer_than_the_read_is_refused_not_graded_on_its_head(make_run, run_root,
                                                                         rel):
    # cut at 1 MiB and read silently: clauses past the cut (one failing) went ungraded, and
    # the run was satisfied at 100
    padding = "".join(f"- `tldr`: at most 50 words (note {i} of many)\n" for i in range(30_000))
    text = {"services/writer.md": WRITER + padding, "program.md": PROGRAM + "\n" + padding,
            "manifest.md": MANIFEST + "\n## Notes\n" + padding}[rel]
    make_run(files={rel: text})
    row = refusal_of(run_root)
    assert row["reason"] == "unreadable-file"
    assert row["detail"] == (f"{rel} is longer than the 1 MB this grader reads of a contract, "
                             "manifest or error file: what follows would be left ungraded")


def test_a_folder_mixing_eras_is_refused_saying_so(make_run, run_root):
    make_run(drop=("manifest.md",), files={"manifest.run.md": "# x\n", "vm.log.md": "x\n"})
    row = refusal_of(run_root)
    assert row["reason"] == "missing-manifest"
    assert row["detail"].endswith(
        "(the folder mixes eras: it also holds manifest.run.md, vm.log.md, files of prose-b; "
        "it is read as prose-a because it holds program.md)")


def test_symlink_out_of_root_is_refused_and_not_followed(make_run, run_root, tmp_path):
    secret = tmp_path / "secret.md"
    secret.write_text("TOP SECRET CONTENT\n")
    run = make_run()
    os.remove(run / "bindings/writer/report.md")
    os.symlink(secret, run / "bindings/writer/report.md")
    row = refusal_of(run_root)
    assert row["reason"] == "unsafe-path"
    _, tables = grade_folder(run_root)
    assert "TOP SECRET" not in str(tables["bindings"].to_dicts())


def test_a_run_of_era_b_refused_for_a_link_out_of_the_root_is_counted_under_its_era(
        run_root, tmp_path):
    # refused before its era was read, it was stored as prose-a
    newsroom = Path(__file__).resolve().parent.parent / "data/runs/newsroom/.prose/runs"
    run = run_root / "20261115-070500-kq7"
    shutil.copytree(newsroom / run.name, run)
    (tmp_path / "secret.md").write_text("outside\n")
    binding = next((run / "bindings").glob("*/*.md"))
    binding.unlink()
    binding.symlink_to(tmp_path / "secret.md")
    _, tables = grade_folder(run_root)
    assert tables["refusals"]["reason"].to_list() == ["unsafe-path"]
    assert tables["runs"]["layout"].to_list() == ["prose-b"]


def test_a_folder_named_like_a_run_that_holds_runs_says_they_are_not_found(run_root):
    # a night's folder named by its time: refused missing-program, its runs never found,
    # and nothing said of them (exit 0)
    night = run_root / "20261204-031500-nightly"
    for n in range(3):
        write_run(night / "acme" / ".prose" / "runs", f"20261204-03{n:02d}00-r{n}")
    _, tables = grade_folder(run_root)
    assert tables["runs"]["run_id"].to_list() == ["20261204-031500-nightly"]
    detail = tables["refusals"]["detail"].item()
    assert detail.startswith("no program.md in the run folder; it holds 3 folder(s) named like "
                             "runs (20261204-030000-r0, 20261204-030100-r1, "
                             "20261204-030200-r2), not looked for inside"), detail


@pytest.mark.parametrize("outside", [True, False])
def test_a_run_folder_that_is_a_symlink_is_refused_saying_so(run_root, tmp_path, outside):
    # one to a folder outside the root was refused "'. links outside the runs root'"
    target = write_run(tmp_path / "elsewhere" if outside else run_root / "kept",
                       "20261112-031502-real")
    (run_root / "20261112-031502-abc123").symlink_to(target)
    _, tables = grade_folder(run_root)
    details = dict(tables["refusals"].select("run_id", "detail").rows())
    assert details["20261112-031502-abc123"] == "the run folder itself is a symlink" + (
        ", to a folder outside the runs root" if outside else "") + ": never followed"


@pytest.mark.parametrize(("link", "target"), [
    ("services", "../20261112-031502-kept/services"),
    ("bindings/writer", "../../20261112-031502-kept/bindings/writer"),
    ("bindings/writer/tldr.md", "summary.md"),
])
def test_a_link_inside_the_root_where_the_grader_reads_is_refused(make_run, run_root, link,
                                                                  target):
    # never followed, it was read as absent: outputs "not published" (violated), contracts
    # "not in it", and with every service unscored the run was satisfied at 100
    make_run("20261112-031502-kept")
    run = make_run()
    path = run / link
    shutil.rmtree(path) if path.is_dir() else path.unlink()
    path.symlink_to(target)
    _, tables = grade_folder(run_root)
    refused = tables["refusals"].select("run_id", "reason", "detail").rows()
    assert refused == [("20261112-031502-abc123", "unsafe-path", f"{link} is a symlink (never "
                        "followed): an output or a contract is graded as a file of the run "
                        "itself")]


@pytest.mark.parametrize(("link", "target"), [
    ("bindings/caller/again.md", "question.md"),  # the caller's inputs are not graded
    ("services/old-writer.md", "writer.md"),  # a contract no service is wired to
    ("bindings/NOTES.md", "writer/tldr.md"),  # a file beside the services' folders
])
def test_a_link_the_grader_never_reads_is_left_alone(make_run, run_root, link, target):
    run = make_run()
    (run / link).symlink_to(target)
    _, tables = grade_folder(run_root)
    assert tables["refusals"].is_empty() and tables["runs"]["status"].to_list() == ["graded"]


def test_unreadable_file_is_refused(make_run, run_root):
    # A file listed but gone (or unreadable) when read: the run is refused, the batch goes on.
    run = make_run()
    bucket = Bucket(str(run_root))
    refs = group_runs(bucket, bucket.walk())
    os.remove(run / "manifest.md")
    rows = read_runs(str(run_root), refs)
    assert [r["reason"] for r in rows.refusals] == ["unreadable-file"]
    assert "manifest.md" in rows.refusals[0]["detail"]


def test_internal_error_keeps_the_run(make_run, run_root, monkeypatch):
    # A parser bug must refuse the run with a traceback, never drop it.
    import pipeline.sources.prose as prose

    make_run()

    def broken(text):
        raise RuntimeError("parser exploded")

    monkeypatch.setattr(prose, "parse_state_log", broken)
    row = refusal_of(run_root)
    assert row["reason"] == "internal-error" and "parser exploded" in row["detail"]


def test_found_equals_graded_plus_refused(make_run, run_root):
    make_run("20261112-031502-ok1")
    make_run("20261112-031503-nomanifest", drop=("manifest.md",))
    make_run("20261112-031504-noprog", drop=("program.md",))
    (run_root / "not-a-run").mkdir()
    refs, tables = grade_folder(run_root)
    runs = tables["runs"]
    assert len(refs) == runs.height == 3
    graded = runs.filter(pl.col("status") == "graded").height
    assert graded + tables["refusals"].height == len(refs)
    assert graded == 1



@pytest.mark.parametrize(("state", "said"), [
    # (a log longer than what is read of it: tests/test_text_encodings.py)
    ("# run:x brief\n1→ researcher ✓\n---end\n\n", "ends with '---end' and no time"),
    ("# run:x brief\n1→ researcher ✓\n", "does not end with a '---end' line"),
])
def test_an_incomplete_run_says_why_its_log_does_not_show_it_complete(make_run, run_root,
                                                                         state, said):
    make_run(files={"state.md": state})
    row = refusal_of(run_root)
    assert row["reason"] == "incomplete-run"
    assert row["detail"].startswith("state.md ") and said in row["detail"], row["detail"]


@pytest.mark.parametrize("heading", ["## Ensures", "**Ensures**", "#### Ensures:",
                                     "Ensures\n-------"])
def test_an_ensures_heading_of_another_form_is_named_by_its_refusal(make_run, run_root,
                                                                    heading):
    # the refusal said only that no ensures clause is declared, beside an Ensures heading
    make_run(files={"services/researcher.md": RESEARCHER.replace("### Ensures", heading),
                    "services/writer.md": WRITER.replace("ensures:", "notes:"),
                    "program.md": PROGRAM.replace("### Ensures", "### Notes")})
    row = refusal_of(run_root)
    assert row["reason"] == "no-ensures"
    assert row["detail"] == (
        "no service or program declares an ensures clause; services/researcher.md has an "
        f"ensures heading this grader does not read, “{' '.join(heading.split())}”: ensures "
        "are read under a `### Ensures` heading or an `ensures:` block")
