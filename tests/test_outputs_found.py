"""Which binding, log step and contract belong to a clause, as a run's authors write names:
optional outputs, an item naming its file's extension, service names in another case or
with other dashes, and a service whose contract the run does not hold."""

from __future__ import annotations

import json
import unicodedata
from pathlib import Path

import polars as pl
import pytest
from check_runs import grade_folder, run_id, write_service_run

from pipeline.grade import read_runs
from pipeline.names import REFUSED_MARK
from pipeline.reports import build_reports
from pipeline.sources.bucket import Bucket, group_runs
from pipeline.sources.prose import DEFAULT_BINDING_CAP


def reports(tables, frame) -> dict[str, dict]:
    return {json.loads(text)["run_id"]: json.loads(text)
            for name, text in build_reports(tables, frame).items()
            if not name.endswith(REFUSED_MARK)}


def verdicts(tables) -> dict[str, tuple[str, str | None]]:
    rows = tables["clause_verdicts"].join(tables["clauses"].select("clause_id", "text"),
                                          on="clause_id")
    return {text: (verdict, reason)
            for text, verdict, reason in rows.select("text", "verdict", "reason").rows()}


@pytest.mark.parametrize("mark", ["`{}` (optional): a JSON object",
                                  # after the colon, as contracts write it too (v18: held
                                  # against the service, "no binding")
                                  "`{}`: (optional) a JSON object",
                                  "`{}`: (Optional, when there are notes) a JSON object"])
def test_an_optional_output_not_published_is_not_held_against_its_service(tmp_path, mark):
    extra, notes = mark.format("extra"), mark.format("notes")
    write_service_run(tmp_path, run_id(1),
                      ensures=f"- `main`: a JSON object\n- {extra}\n- {notes}",
                      outputs={"main.json": '{"ok": true}', "notes.json": "[1, 2]"})
    tables, _ = grade_folder(tmp_path)
    found = verdicts(tables)
    assert found[extra] == (
        "not_evaluable", "optional output `extra` was not published: there is nothing of it "
        "to grade")
    # published, an optional output is graded as any other
    assert found[notes][0] == "partially_satisfied"
    assert found["`main`: a JSON object"][0] == "satisfied"
    # v13 violated `extra` (no binding): 2 of 3 clauses failed or partly failed
    assert tables["service_scores"]["service_score"].item() == 75.0


def test_an_item_naming_its_files_extension_finds_its_binding(tmp_path):
    write_service_run(tmp_path, run_id(1),
                      ensures="- `report.md`: at least 2 paragraphs\n- `data.json`: a JSON object",
                      outputs={"report.md": "One.\n\nTwo.", "data.json": '{"a": 1}'})
    tables, _ = grade_folder(tmp_path)
    assert {text: v for text, (v, _) in verdicts(tables).items()} == {
        "`report.md`: at least 2 paragraphs": "satisfied",
        "`data.json`: a JSON object": "satisfied"}


def write_two_service_run(root, *, ghost_contract: bool | str) -> None:
    """A run whose manifest names `Fact_Checker` (bindings/fact-checker/, workspace
    fact_checker/, log step `Fact-Checker`) and `ghost` (services/ghost.md when asked, or
    the text given)."""
    rid = run_id(1)
    files = {
        "program.md": "---\nname: demo\nkind: program\n---\n# Demo\n",
        "manifest.md": "# Manifest: demo\n\n## Graph\n\n### Fact_Checker\n"
                       "source: services/Fact_Checker.md\noutputs:\n"
                       "- (public) checks → bindings/fact-checker/checks.json\n\n### ghost\n"
                       "source: services/ghost.md\noutputs:\n- (public) y → bindings/ghost/y.md\n"
                       "\n## Execution Order\n1. Fact_Checker\n2. ghost\n",
        "services/Fact_Checker.md": "---\nname: Fact_Checker\n---\n### Ensures\n"
                                    "- `checks`: a JSON object\n"
                                    "- if no sources are found: `checks` stating \"none\"\n"
                                    "### Errors\n- `no-sources`: nothing to check against\n",
        "bindings/fact-checker/checks.json": "none",
        "workspace/fact_checker/__error.md": "# Error: no-sources\n\nThe index was empty.\n",
        "bindings/ghost/y.md": "not graded against anything",
        "state.md": f"# run:{rid} demo\nprogram: demo\n1→ Fact-Checker ✗ no-sources\n"
                    "2→ ghost ✓\n---end 2026-11-12T03:20:11Z\n",
    }
    if ghost_contract:
        files["services/ghost.md"] = (ghost_contract if isinstance(ghost_contract, str)
                                      else "### Ensures\n- `y`: at least 3 words\n")
    for rel, text in files.items():
        path = root / rid / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def test_a_service_name_compares_with_its_folders_and_log_as_output_names_do(tmp_path):
    # v13 matched the manifest's name exactly: no binding, no error, the log 'absent'
    write_two_service_run(tmp_path, ghost_contract=True)
    tables, _ = grade_folder(tmp_path)
    service = tables["services"].filter(pl.col("service") == "Fact_Checker").row(0, named=True)
    assert (service["errored"], service["error_name"], service["log_status"]) == (
        True, "no-sources", "errored")
    binding = tables["bindings"].filter(pl.col("name") == "checks").row(0, named=True)
    assert binding["service"] == "Fact_Checker"  # the manifest's name; its uri the folder's
    assert binding["uri"].endswith("/bindings/fact-checker/checks.json")
    found = verdicts(tables)
    assert found['if no sources are found: `checks` stating "none"'][0] == "satisfied"
    assert found["`checks`: a JSON object"][0] == "not_evaluable"  # its degraded path


def test_a_service_whose_contract_the_run_does_not_hold_is_reported(tmp_path):
    # v13 dropped such a service without a word: the run was satisfied at 100
    write_two_service_run(tmp_path, ghost_contract=False)
    tables, frame = grade_folder(tmp_path)
    ghost = tables["clauses"].filter(pl.col("service") == "ghost").row(0, named=True)
    assert (ghost["kind"], ghost["text"]) == ("missing_contract",
                                              "(the contract at services/ghost.md)")
    (report,) = reports(tables, frame).values()
    assert report["unevaluable_clauses"][-1] == {
        "clause": "(the contract at services/ghost.md)", "service": "ghost",
        "why": "the run holds no contract of `ghost` (services/ghost.md is not in it): its "
               "ensures clauses cannot be graded"}
    assert ("ghost: keep services/ghost.md in the run: the wiring phase copies each service's "
            "contract there, and without it what `ghost` ensures is unknown"
            in report["recommendations"])
    evidence = tables["clause_verdicts"].filter(pl.col("service") == "ghost")["evidence"]
    assert evidence.to_list() == ["`ghost` published y, graded against nothing"]


@pytest.mark.parametrize("heading", ["## Ensures", "**Ensures**", "Ensures\n-------"])
def test_a_service_whose_ensures_stand_under_a_heading_not_read_is_reported(tmp_path,
                                                                           heading):
    # v17 read no ensures in such a contract and left the service out without a word: the
    # run was satisfied at 100, its clauses unaccounted for (alone, its run was refused)
    write_two_service_run(tmp_path, ghost_contract=f"{heading}\n- `y`: at most 2 words\n")
    tables, frame = grade_folder(tmp_path)
    ghost = tables["clauses"].filter(pl.col("service") == "ghost").row(0, named=True)
    shown = heading.replace("\n", " ")
    assert (ghost["kind"], ghost["text"]) == (
        "unread_ensures", f"(the ensures under “{shown}” in services/ghost.md)")
    (report,) = reports(tables, frame).values()
    assert report["unevaluable_clauses"][-1] == {
        "clause": f"(the ensures under “{shown}” in services/ghost.md)", "service": "ghost",
        "why": f"`ghost` states its ensures under “{shown}”, a heading this grader does not "
               "read: they cannot be graded"}
    assert ("ghost: write the ensures of `ghost` under a `### Ensures` heading (or an "
            "`ensures:` block), as contracts do, so that they are graded"
            in report["recommendations"])


def test_a_run_holding_no_contract_at_all_is_refused_naming_what_is_missing(tmp_path):
    write_two_service_run(tmp_path, ghost_contract=False)
    (tmp_path / run_id(1) / "services" / "Fact_Checker.md").unlink()
    bucket = Bucket(str(tmp_path))
    rows = read_runs(str(tmp_path), group_runs(bucket, bucket.walk()))
    (refusal,) = rows.refusals
    assert (refusal["reason"], refusal["detail"]) == (
        "no-ensures", "no service or program declares an ensures clause (the run holds no "
        "contract of 2 service(s): services/Fact_Checker.md, services/ghost.md)")


def write_files(run: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = run / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return run


def two_publishers(order: str, returns: str = "", origin: str = "") -> dict[str, str]:
    """A program whose `report` both drafter and writer publish, run in `order`; its ensures
    item may name its origin (`origin`: "(from writer)")."""
    return {
        "program.md": "---\nname: pub\n---\n### Ensures\n"
                      f"- `report`{origin}: a markdown report stating \"FINAL\"\n",
        "manifest.md": f"# Manifest: pub\n\n## Caller Interface\nreturns:\n{returns}\n\n"
                       "## Graph\n\n### drafter\nsource: services/drafter.md\n\n### writer\n"
                       f"source: services/writer.md\n\n## Execution Order\n{order}\n",
        "services/drafter.md": "### Ensures\n- `report`: a draft\n",
        "services/writer.md": "### Ensures\n- `report`: a markdown report\n",
        "bindings/drafter/report.md": "# Draft\n\nnot done yet",
        "bindings/writer/report.md": "# Report\n\nFINAL version",
        "state.md": "# run:x pub\n1→ drafter ✓\n2→ writer ✓\n---end 2026-11-12T03:20:11Z\n",
    }


def program_report(tables) -> tuple[str, str, str]:
    (row,) = tables["clauses"].filter(pl.col("kind") == "program_ensures").select(
        "clause_id", "output_service").rows()
    verdict = tables["clause_verdicts"].filter(pl.col("clause_id") == row[0]).row(0, named=True)
    return row[1], verdict["verdict"], verdict["evidence"]


@pytest.mark.parametrize(("order", "returns", "publisher", "origin"), [
    ("1. drafter\n2. writer", "", "writer", ""),  # the last to run (v13: the first by name)
    ("1. writer\n2. drafter", "", "drafter", ""),
    ("1. writer\n2. drafter", "- Report (from Writer)", "writer", ""),  # named as names are
    ("1. writer\n2. drafter", "- `report.md` (from writer)", "writer", ""),
    # the ensures item names its origin as a returns line does (v15 ignored it), and wins
    ("1. writer\n2. drafter", "", "writer", " (from Writer)"),
    ("1. writer\n2. drafter", "- report (from drafter)", "writer", " (from writer)"),
    ("1. writer\n2. drafter", "", "drafter", " (from editor)"),  # no service: ignored
])
def test_a_programs_output_comes_from_the_service_that_returns_it_or_ran_last(
        tmp_path, order, returns, publisher, origin):
    write_files(tmp_path / run_id(1), two_publishers(order, returns, origin))
    tables, _ = grade_folder(tmp_path)
    service, verdict, _ = program_report(tables)
    assert (service, verdict) == (publisher, "satisfied" if publisher == "writer"
                                  else "partially_satisfied")


@pytest.mark.parametrize("first", ["named", "other"])
@pytest.mark.parametrize(("named", "other"), [
    ("tldr", "Tldr"), (unicodedata.normalize("NFC", "café"), unicodedata.normalize("NFD", "café")),
    ("tl-dr", "tl_dr"),
])
def test_of_two_outputs_named_alike_the_one_the_clause_names_is_graded(tmp_path, first,
                                                                       named, other):
    # names compare without case, accents composed or not, '-' and '_' alike: of two such
    # files the first listed was graded, so the verdict followed the order they were written
    files = {f"bindings/svc/{named}.md": "Done.", f"bindings/svc/{other}.md": "One. Two. Three."}
    run = tmp_path / run_id(1)
    write_service_run(tmp_path, run_id(1), ensures=f"- `{named}`: exactly one sentence",
                      outputs={})
    for rel in sorted(files, reverse=first == "other"):
        (run / rel).parent.mkdir(parents=True, exist_ok=True)
        (run / rel).write_text(files[rel], encoding="utf-8")
    tables, _ = grade_folder(tmp_path)
    assert tables["clause_verdicts"]["verdict"].to_list() == ["satisfied"]


@pytest.mark.parametrize(("clause", "wired", "stray"), [
    ("`Report`", "report.md", "Report.txt"),  # named exactly, but the manifest wires report.md
    ("`report.md`", "Report.md", "report.json"),  # the clause's extension is part of its name
])
def test_the_wired_output_wins_over_a_stray_file_named_alike(tmp_path, clause, wired, stray):
    # the exact name won over the wiring, and the clause's extension was dropped before the
    # comparison: a stray file was graded in place of the wired one (review X5)
    write_files(tmp_path / run_id(1), {
        "program.md": "---\nname: api\n---\n# api\n",
        "manifest.md": "# Manifest: api\n\n## Graph\n\n### api\nsource: services/api.md\n"
                       f"outputs:\n- (public) report → bindings/api/{wired}\n",
        "services/api.md": f"### Ensures\n- {clause}: a list of at least 3 items\n",
        f"bindings/api/{wired}": "- a\n- b\n- c\n",
        f"bindings/api/{stray}": "draft",
        "state.md": "# run:x api\n1→ api ✓\n---end 2026-11-12T03:20:11Z\n"})
    tables, _ = grade_folder(tmp_path)
    assert tables["clause_verdicts"]["verdict"].to_list() == ["satisfied"]


def test_of_one_output_written_twice_the_file_the_manifest_wires_is_graded(tmp_path):
    # v13 took .md before .json whatever the manifest said
    for n, wired in ((1, "result.json"), (2, "result.md")):
        write_files(tmp_path / run_id(n), {
            "program.md": "---\nname: api\n---\n# api\n",
            "manifest.md": "# Manifest: api\n\n## Graph\n\n### api\nsource: services/api.md\n"
                           f"outputs:\n- (public) result → bindings/api/{wired}\n",
            "services/api.md": "### Ensures\n- `result`: a JSON object with a `status` key\n",
            "bindings/api/result.json": '{"status": "ok"}',
            "bindings/api/result.md": "Result written to result.json, see there.",
            "state.md": "# run:x api\n1→ api ✓\n---end 2026-11-12T03:20:11Z\n"})
    tables, _ = grade_folder(tmp_path)
    verdicts = dict(tables["clause_verdicts"].select("run_id", "verdict").rows())
    assert verdicts == {run_id(1): "satisfied", run_id(2): "violated"}


def test_an_output_read_only_up_to_the_cap_is_not_judged_on_its_start(tmp_path):
    # v13 counted the words of the first 64 KiB ("at most 15000 words" satisfied by 20,000)
    # and called a 137 KB JSON object cut there "not valid JSON"
    essay = "word " * 20_000
    data = '{"items": [' + ", ".join(f'{{"id": {i}}}' for i in range(12_000)) + "]}"
    write_service_run(tmp_path, run_id(1),
                      ensures="- `essay`: at most 15000 words\n- `data`: a JSON object",
                      outputs={"essay.md": essay, "data.json": data})
    tables, _ = grade_folder(tmp_path)
    found = verdicts(tables)
    for clause, size in (("`essay`: at most 15000 words", len(essay)),
                         ("`data`: a JSON object", len(data))):
        assert found[clause] == (
            "not_evaluable", f"{clause.split(':')[0]} is {size} bytes, more than the read "
            "cap: only its start was read, and what the clause says of the whole output is "
            "not established"), clause
    assert set(tables["checks"]["check"]) == {"output_published", "output_read_whole"}


def _part_read(text: str) -> str:
    """What the grader reads of an output larger than the read cap: its first 64 KiB, ended
    after its last whole block, else line, else word (here, the test's texts have one)."""
    start = text.encode()[:DEFAULT_BINDING_CAP].decode(errors="ignore")
    for mark in ("\n\n", "\n", " "):
        if mark in start:
            return start[:start.rfind(mark)]
    return start


def test_an_output_cut_at_the_read_cap_fails_what_its_start_already_violates(tmp_path):
    # v18 left every clause on such an output not_evaluable: 20,000 words "at most 5000
    # words", a forbidden name and a key in the first lines of a long log
    essay = "word " * 20_000
    log = "deploy to prod with AKIAABCDEFGHIJKLMNOP\n\n" + "step done\n" * 10_000
    guide = "# Guide\n\nRun these.\n\n```sh\n" + "# a comment\necho step\n\n" * 5_000 + "```\n"
    write_service_run(tmp_path, run_id(1), ensures=(
        "- `essay`: at most 5000 words\n- `essay`: at least 30000 words\n"
        '- `log`: never mentions "prod"\n- `log`: never contains API keys or secrets\n'
        '- `log`: never mentions "staging"\n- `guide`: at most 3 headings'),
        outputs={"essay.md": essay, "log.md": log, "guide.md": guide})
    tables, _ = grade_folder(tmp_path)
    found = verdicts(tables)
    read = _part_read(essay)
    assert found["`essay`: at most 5000 words"] == (
        "violated", "failed: `essay`: at most 5000 words")
    evidence = tables["clause_verdicts"].join(tables["clauses"], on="clause_id").filter(
        pl.col("text") == "`essay`: at most 5000 words")["evidence"].item()
    assert evidence.startswith(f"`essay` has {len(read.split())} words: “word word")
    assert evidence.endswith(f"(in its first {len(read)} bytes of {len(essay)}: what was "
                             "read, to its last whole block)")
    assert found['`log`: never mentions "prod"'][0] == "violated"
    assert found["`log`: never contains API keys or secrets"][0] == "violated"
    # what the start cannot establish stays open: a least count, an absence, and a count
    # of headings where a code fence it opens (holding "# a comment") closes past the cap
    sizes = {"`essay`": len(essay), "`log`": len(log), "`guide`": len(guide)}
    for clause in ("`essay`: at least 30000 words", '`log`: never mentions "staging"',
                   "`guide`: at most 3 headings"):
        output = clause.split(":")[0]
        assert found[clause] == (
            "not_evaluable", f"{output} is {sizes[output]} bytes, more than the read cap: "
            "only its start was read, and what the clause says of the whole output is not "
            "established"), clause


def _minified_with(word: str, items: int = 30_000) -> str:
    """A JSON array of short strings with no white space, `word` the item the read cap cuts
    right after its first four letters."""
    head = '["' + 'ab","' * ((DEFAULT_BINDING_CAP - 2 - 4) // 5)
    head += "x" * (DEFAULT_BINDING_CAP - 4 - len(head))  # (the cap falls after 4 letters)
    return head + word + '","' + '","'.join(["ab"] * items) + '"]'


@pytest.mark.parametrize(("clause", "output", "extra"), [
    # a conditional naming no output, judged on all its service published, one output cut
    # (v18 and before: violated on the cut text, "no 'no results'")
    ('if no sources are found: a note stating "no results"',
     "Nothing was found.\n\n" + "A line of the log.\n" * 6_000 + "Summary: no results.\n",
     {"error": ("no-results", "the search returned nothing"),
      "errors": "- `no-results`: no source was found"}),
    # what follows the first line, when the start read is that line alone: the whole output
    # has a table, and no sentence, after it
    ("`out`: a verdict line, followed by at most 2 sentences",
     "Verdict: approve. The build is green. Tests pass. Coverage rose.\n\n| a | b |\n|---|---|\n"
     + "| x. y. | z. |\n" * 8_000, {}),
    # minified JSON, no white space: its last token may be cut ("test" of "testing")
    ('`out`: never mentions "test"', _minified_with("testing"), {}),
    # a `~~~` block holding a "```python" line (no fence closes on it) and headings
    ("`out`: at most 3 headings",
     "# Guide\n\n~~~markdown\n```python\n\n" + "## Step\n\nDo it.\n\n" * 6_000 + "~~~\n", {}),
])
def test_a_start_read_establishes_nothing_it_cannot_prove_of_the_whole(tmp_path, clause,
                                                                      output, extra):
    write_service_run(tmp_path, run_id(1), ensures=f"- {clause}", outputs={"out.md": output},
                      **extra)
    tables, _ = grade_folder(tmp_path)
    assert tables["bindings"]["truncated"].to_list() == [True]
    verdict, reason = verdicts(tables)[clause]
    assert verdict == "not_evaluable", (verdict, reason)
    assert "more than the read cap" in reason or "larger than the read cap" in reason, reason


def test_a_character_the_read_cap_splits_is_no_decoding_error(tmp_path):
    # v18 decoded the cut bytes whole: clean UTF-8 flagged `decode_errors`, a U+FFFD last
    text = "a" + "é" * 40_000  # the cap falls inside an "é"
    write_service_run(tmp_path, run_id(1), ensures="- `notes`: at most 10 words",
                      outputs={"notes.md": text})
    tables, _ = grade_folder(tmp_path)
    binding = tables["bindings"].filter(pl.col("name") == "notes").row(0, named=True)
    assert (binding["truncated"], binding["decode_errors"]) == (True, False)
    assert binding["text"] == text[:DEFAULT_BINDING_CAP // 2]


def test_an_inline_service_the_manifest_does_not_list_is_graded(tmp_path):
    # v13 dropped it, its contract, outputs and log step notwithstanding
    write_files(tmp_path / run_id(1), {
        "program.md": "---\nname: inl\n---\n# inl\n\n## helper\n### Ensures\n"
                      "- `notes`: a JSON object\n",
        "manifest.md": "# Manifest: inl\n\n## Graph\n\n### writer\nsource: services/writer.md\n",
        "services/writer.md": "### Ensures\n- `report`: at most 10 words\n",
        "bindings/writer/report.md": "short",
        "bindings/helper/notes.md": "not json",
        "state.md": "# run:x inl\n1→ writer ✓\n2→ helper ✓\n---end 2026-11-12T03:20:11Z\n"})
    tables, _ = grade_folder(tmp_path)
    helper = tables["services"].filter(pl.col("service") == "helper").row(0, named=True)
    assert (helper["contract_source"], helper["log_status"]) == ("program.md#helper",
                                                                 "completed")
    assert verdicts(tables)["`notes`: a JSON object"][0] == "violated"


def test_an_inline_service_named_twice_is_one_service(tmp_path):
    # each component of the name was made a service: its clauses were judged twice (a
    # property test found it). The first is the service, as a contract's lookup takes it
    write_files(tmp_path / run_id(1), {
        "program.md": "---\nname: inl\n---\n# inl\n\n## helper\n### Ensures\n"
                      "- `notes`: a JSON object\n\n## Helper\n### Ensures\n"
                      "- `notes`: at most 2 words\n",
        "manifest.md": "# Manifest: inl\n\n## Graph\n\n### writer\nsource: services/writer.md\n",
        "services/writer.md": "### Ensures\n- `report`: at most 10 words\n",
        "bindings/writer/report.md": "short",
        "bindings/helper/notes.md": '{"a": 1}',
        "state.md": "# run:x inl\n1→ writer ✓\n2→ helper ✓\n---end 2026-11-12T03:20:11Z\n"})
    tables, _ = grade_folder(tmp_path)
    assert tables["services"].filter(pl.col("service").str.to_lowercase() == "helper").height == 1
    rows = tables["clause_verdicts"].filter(pl.col("service") == "helper")
    assert rows.height == 1 and rows["verdict"].to_list() == ["satisfied"]


def test_a_programs_missing_output_is_said_of_the_run_not_of_a_folder_of_the_program(
        tmp_path):
    write_files(tmp_path / run_id(1), {**two_publishers("1. drafter\n2. writer"),
                                       "program.md": "---\nname: pub\n---\n### Ensures\n"
                                                     "- `summary`: at most 10 words\n"})
    tables, _ = grade_folder(tmp_path)
    _, verdict, evidence = program_report(tables)
    assert (verdict, evidence) == ("violated", "no service of the run published `summary`")
