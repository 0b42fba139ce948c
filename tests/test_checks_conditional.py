"""Conditional ensures: triggered by a declared error, graded on the degraded output, the
primary ensures not held against the service, and untested paths recommended."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import polars as pl
import pytest
from check_runs import grade_folder, run_id, write_service_run

from pipeline.names import REFUSED_MARK
from pipeline.reports import build_reports

ENSURES = """\
- `findings`: a numbered list of at least 3 findings
- if no sources are found: a `findings` file stating "no results"
"""
ERRORS = "- `no-results`: nothing relevant was found"

RUNS = {
    # the degraded output is there and says what the clause wants
    "degraded-ok": dict(outputs={"findings.md": "Searched 4 indexes: no results."},
                        error=("no-results", "No source matched.")),
    # the degraded output is there but does not say it
    "degraded-wrong": dict(outputs={"findings.md": "Searched 4 indexes."},
                           error=("no-results", "No source matched.")),
    # the service errored and published nothing at all
    "degraded-missing": dict(outputs={"other.md": "scratch"},
                             error=("no-results", "No source matched.")),
    # an error the service never declared: no degraded path, the primary ensures hold
    "undeclared-error": dict(outputs={"findings.md": "1. only one"},
                             error=("disk-full", "No space left.")),
    # no error: the conditional path is untested
    "no-error": dict(outputs={"findings.md": "1. a\n2. b\n3. c"}),
}


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    root = tmp_path_factory.mktemp("conditional-runs")
    for n, spec in enumerate(RUNS.values()):
        write_service_run(root, run_id(n), ensures=ENSURES, errors=ERRORS, **spec)
    tables, frame = grade_folder(root)
    return tables, frame


def clause(graded, name: str, kind: str) -> tuple[dict, pl.DataFrame]:
    tables, frame = graded
    rid = run_id(list(RUNS).index(name))
    cid = frame.filter((pl.col("run_id") == rid) & (pl.col("kind") == kind))["clause_id"].item()
    mine = (pl.col("run_id") == rid) & (pl.col("clause_id") == cid)  # ids repeat across runs
    verdict = tables["clause_verdicts"].filter(mine).row(0, named=True)
    checks = tables["checks"].filter(mine)
    return verdict, checks


def outcomes(checks: pl.DataFrame) -> dict[str, str]:
    return dict(checks.select("check", "outcome").iter_rows())


def test_degraded_output_is_graded_when_triggered(graded):
    verdict, checks = clause(graded, "degraded-ok", "conditional")
    assert outcomes(checks) == {"degraded_output_provided": "passed", "error_declared": "passed",
                                "literal": "passed"}
    assert verdict["verdict"] == "satisfied"
    literal = checks.filter(pl.col("check") == "literal").row(0, named=True)
    assert literal["detail"] == "`findings` contains “no results”"
    assert literal["evidence"] == "“Searched 4 indexes: no results.”"


def test_degraded_output_that_misses_the_phrase_is_violated(graded):
    verdict, checks = clause(graded, "degraded-wrong", "conditional")
    assert outcomes(checks)["literal"] == "failed"
    assert verdict["verdict"] == "violated"
    assert verdict["evidence"] == "no “no results” in `findings`"


def test_missing_degraded_output_is_violated(graded):
    verdict, checks = clause(graded, "degraded-missing", "conditional")
    assert outcomes(checks) == {"degraded_output_provided": "failed", "error_declared": "passed"}
    assert verdict["verdict"] == "violated"
    assert "no non-empty `findings` was published after error 'no-results'" in verdict["evidence"]


def test_primary_ensures_are_not_held_against_the_degraded_path(graded):
    for name in ("degraded-ok", "degraded-wrong", "degraded-missing"):
        verdict, checks = clause(graded, name, "ensures")
        # nothing was counted or published-checked: one open note, and the clause is set aside
        assert outcomes(checks) == {"degraded_path": "undecided"}, name
        assert verdict["verdict"] == "not_evaluable"
        assert verdict["reason"].startswith("not held against `svc`: it errored with declared "
                                            "error 'no-results'")


def test_an_undeclared_error_opens_no_degraded_path(graded):
    verdict, checks = clause(graded, "undeclared-error", "conditional")
    assert outcomes(checks)["error_declared"] == "failed"
    assert verdict["verdict"] == "violated"
    primary, primary_checks = clause(graded, "undeclared-error", "ensures")
    # graded as usual: a numbered list, but of 1 finding, not 3
    assert (outcomes(primary_checks)["format"], outcomes(primary_checks)["count"]) == (
        "passed", "failed")
    assert primary["verdict"] == "partially_satisfied"


def test_untested_conditional_paths_are_recommended(graded):
    tables, frame = graded
    verdict, checks = clause(graded, "no-error", "conditional")
    assert outcomes(checks) == {"condition_triggered": "undecided"}
    assert verdict["verdict"] == "not_evaluable"
    reports = {json.loads(text)["run_id"]: json.loads(text)
               for name, text in build_reports(tables, frame).items()
               if not name.endswith(REFUSED_MARK)}
    report = reports[run_id(list(RUNS).index("no-error"))]
    # everything that could be checked passed, and the untested path is still reported
    assert [c["verdict"] for s in report["services"] for c in s["ensures_clauses"]
            if c["text"].startswith("`findings`")] == ["satisfied"]
    assert report["conditional_ensures"] == [{
        "clause": 'if no sources are found: a `findings` file stating "no results"',
        "service": "svc", "condition_triggered": False, "degraded_output_provided": None}]
    assert any(r.startswith("svc: untested conditional path: add a run (or fixture) in which "
                            "“no sources are found” occurs") for r in report["recommendations"])


def test_a_program_conditional_reads_the_output_a_service_published(tmp_path):
    write_service_run(
        tmp_path, run_id(1), ensures="- `report`: a brief", errors=ERRORS,
        outputs={"report.md": "Claim A (unverified). Claim B (unverified)."},
        error=("no-results", "nothing"),
        program_ensures="- `report`: the brief\n"
                        "- if no sources are found: every claim in `report` is marked "
                        "“unverified”")
    tables, frame = grade_folder(tmp_path)
    row = frame.filter((pl.col("service") == "demo") & (pl.col("kind") == "conditional"))
    assert row.select("target_output", "triggered", "binding_uri").row(0) == (
        "report", True, f"{tmp_path}/{run_id(1)}/bindings/svc/report.md")
    checks = tables["checks"].filter(pl.col("clause_id") == row["clause_id"].item())
    literal = checks.filter(pl.col("check") == "literal").row(0, named=True)
    assert (literal["outcome"], literal["evidence"]) == (
        "passed", "“Claim A (unverified). Claim B (unverified).”")


@pytest.mark.parametrize("where", ["service", "manifest"])
def test_a_program_conditional_is_triggered_by_an_error_its_service_declared(tmp_path, where):
    # the program declares no error of its own: the error is declared by the service that
    # raised it, in its contract or (an em dash parting name and text) in the manifest. v13
    # looked for it among the program's errors, or read the manifest's whole item as its
    # name, and violated the conditional ("declared: " naming nothing)
    run = write_service_run(
        tmp_path, run_id(1), ensures="- `report`: a brief",
        errors=ERRORS if where == "service" else "",
        outputs={"report.md": "Claim A (unverified).\n\nClaim B (unverified)."},
        error=("no-results", "nothing"),
        program_ensures="- `report`: at least 2 paragraphs\n"
                        "- if fact-checking finds no sources: every claim in `report` is "
                        "marked “unverified”")
    program = (run / "program.md").read_text()
    (run / "program.md").write_text(program[:program.index("### Errors")])
    if where == "manifest":
        manifest = (run / "manifest.md").read_text()
        (run / "manifest.md").write_text(manifest.replace(
            "\n\n## Execution Order", "\nerrors:\n- `no-results` — nothing was found\n\n"
            "## Execution Order"))
    tables, frame = grade_folder(tmp_path)
    services = dict(tables["services"].select("service", "declared_errors").rows())
    assert services == {"demo": ["no-results"], "svc": ["no-results"]}
    program_rows = frame.filter(pl.col("service") == "demo")
    verdicts = dict(tables["clause_verdicts"].join(program_rows.select("clause_id", "kind"),
                                                   on="clause_id").select("kind", "verdict")
                    .rows())
    # graded on its degraded path: the conditional met, the primary ensures set aside
    assert verdicts == {"conditional": "satisfied", "program_ensures": "not_evaluable"}


def test_a_conditional_naming_no_output_is_judged_on_all_the_service_published(tmp_path):
    ensures = ('- `data`: the account data\n'
               '- if the crm api is unavailable: cached data flagged as "stale"')
    write_service_run(tmp_path, run_id(1), ensures=ensures,
                      errors="- `crm-unavailable`: the CRM API did not answer",
                      outputs={"data.md": "plan: pro", "note.md": "Using cached data (stale)."},
                      error=("crm-unavailable", "timeout"))
    write_service_run(tmp_path, run_id(2), ensures=ensures,
                      errors="- `crm-unavailable`: the CRM API did not answer",
                      outputs={"data.md": "plan: pro"}, error=("crm-unavailable", "timeout"))
    tables, frame = grade_folder(tmp_path)
    cond = frame.filter(pl.col("kind") == "conditional").sort("run_id")
    assert cond["output_scope"].to_list() == ["service", "service"]
    literal = (tables["checks"].filter(pl.col("check") == "literal")
               .join(cond.select("clause_id", "run_id"), on=["clause_id", "run_id"])
               .sort("run_id"))
    assert literal["outcome"].to_list() == ["passed", "failed"]
    assert literal["evidence"].to_list()[1] == "no “stale” in the outputs of `svc`"


def test_what_a_conditional_naming_no_output_asks_of_its_service_is_asked_whole(tmp_path):
    # no check of one output's content reads all a service published: v21 as first written
    # read "empty list" as a count no check applied, asked nothing, and any output met it
    write_service_run(tmp_path, run_id(1),
                      ensures="- `results`: the matching tickets\n"
                              "- if no results are found: returns an empty list and a note",
                      errors="- `no-results`: nothing matched",
                      outputs={"results.json": '[{"id": "T-1"}]'},
                      error=("no-results", "nothing matched"))
    tables, frame = grade_folder(tmp_path)
    cond = frame.filter(pl.col("kind") == "conditional")
    assert cond["output_scope"].to_list() == ["service"]
    checks = tables["checks"].join(cond.select("clause_id"), on="clause_id")
    asked = checks.filter(pl.col("check") == "meets_description")
    assert asked["detail"].to_list() == [
        "requires judgment: does the outputs of `svc` meet “returns an empty list and a note”?"]
    verdict = tables["clause_verdicts"].join(cond.select("clause_id"), on="clause_id")
    assert verdict["verdict"].to_list() == ["not_evaluable"]


def test_a_conditional_sub_item_is_a_conditional_on_the_output_it_stands_under(tmp_path):
    """`  - if …:` under an item is no detail of it: asked of every run, its degraded output
    was a false requirement where the condition did not occur."""
    ensures = ('- `findings`: a list of findings\n'
               '    - if no sources are found: a line stating "no results"\n'
               '- `notes`: what was searched')
    errors = "- `no-results`: nothing relevant was found"
    write_service_run(tmp_path, run_id(1), ensures=ensures, errors=errors,
                      outputs={"findings.md": "Searched 4 indexes: no results.",
                               "notes.md": "searched 4 indexes"},
                      error=("no-results", "No source matched."))
    write_service_run(tmp_path, run_id(2), ensures=ensures, errors=errors,
                      outputs={"findings.md": "- a\n- b", "notes.md": "no results anywhere"},
                      error=("no-results", "No source matched."))
    write_service_run(tmp_path, run_id(3), ensures=ensures, errors=errors,
                      outputs={"findings.md": "- a\n- b", "notes.md": "searched 4 indexes"})
    tables, frame = grade_folder(tmp_path)
    assert "detail" not in tables["clauses"]["kind"].to_list()
    cond = frame.filter(pl.col("kind") == "conditional").sort("run_id")
    assert cond["target_output"].to_list() == ["findings"] * 3
    verdicts = (tables["clause_verdicts"].join(cond.select("run_id", "clause_id"),
                                               on=["run_id", "clause_id"]).sort("run_id"))
    # judged on `findings` when no-results occurred (the other output saying it is no help);
    # untested where it did not
    assert verdicts["verdict"].to_list() == ["satisfied", "violated", "not_evaluable"]
    primary = (tables["checks"].join(frame.filter(pl.col("output_name") == "findings")
                                     .select("run_id", "clause_id"), on=["run_id", "clause_id"])
               .filter(pl.col("run_id") == run_id(3)))
    assert "failed" not in primary["outcome"].to_list()
    assert not primary["detail"].str.contains("no results").any()


def test_a_conditional_sub_item_deeper_down_is_judged_on_its_top_items_output(tmp_path):
    # under a detail: v20 as first written found no output above it, and judged it on all
    # the service published (the phrase in another output satisfied it)
    ensures = ('- `report`: a brief\n'
               '    - `Findings`: at least 3 items\n'
               '        - if no sources are found: a line stating "no results"\n'
               '- `log`: what was searched')
    write_service_run(tmp_path, run_id(1), ensures=ensures,
                      errors="- `no-results`: nothing relevant was found",
                      outputs={"report.md": "A brief.", "log.md": "no results anywhere"},
                      error=("no-results", "No source matched."))
    tables, frame = grade_folder(tmp_path)
    cond = frame.filter(pl.col("kind") == "conditional")
    assert cond.select("parent_position", "target_output").rows() == [(0, "report")]
    verdict = tables["clause_verdicts"].join(cond.select("clause_id"), on="clause_id")
    assert verdict["verdict"].to_list() == ["violated"]


def test_a_programs_conditional_sub_item_is_judged_where_its_item_is_published(tmp_path):
    # "`findings` (from researcher)", and under it a conditional: v20 as first written judged
    # it on the writer's `findings`, which held the phrase, where the researcher's did not
    run = tmp_path / SAMPLE_RUN.name
    shutil.copytree(SAMPLE_RUN, run)
    program = run / "program.md"
    program.write_text(program.read_text().replace(
        "### Errors", "- `findings` (from researcher): the researcher's findings\n"
        "    - if fact-checking finds no sources: a line stating \"UNVERIFIED\"\n\n"
        "### Errors", 1))
    (run / "bindings/writer/findings.md").write_text("UNVERIFIED: every claim below.\n")
    tables, frame = grade_folder(tmp_path)
    cond = frame.filter((pl.col("kind") == "conditional")
                        & pl.col("parent_position").is_not_null())
    assert cond.select("target_output", "output_service").rows() == [("findings",
                                                                      "researcher")]
    verdict = tables["clause_verdicts"].join(cond.select("clause_id"), on="clause_id")
    assert verdict["verdict"].to_list() == ["violated"]


def test_an_unnamed_log_error_triggers_only_conditionals_it_names(tmp_path):
    """`---error … timeout` then `---resume`: the program errored, but not with "no sources"."""
    program = ("- `report`: the brief\n"
               "- if fact-checking finds no sources: every claim in `report` is marked "
               "“unverified”\n"
               "- if the search hits a timeout: a `report` stating \"partial\"")
    write_service_run(tmp_path, run_id(1), ensures="- `report`: a brief", errors=ERRORS,
                      outputs={"report.md": "A partial brief."}, program_ensures=program,
                      log="---error 2026-11-10T06:41:12Z timeout\n---resume\n")
    tables, frame = grade_folder(tmp_path)
    cond = frame.filter((pl.col("service") == "demo") & (pl.col("kind") == "conditional"))
    assert dict(cond.select("condition", "triggered").iter_rows()) == {
        "fact-checking finds no sources": False, "the search hits a timeout": True}
    untested = tables["checks"].filter(pl.col("check") == "condition_triggered")
    assert untested["evidence"].to_list() == [
        "the service errored with '(unnamed)', which this condition does not name"]
    # the triggered one is graded on its output; an unnamed error is neither declared nor not
    timeout = cond.filter(pl.col("condition") == "the search hits a timeout")["clause_id"].item()
    graded = tables["checks"].filter(pl.col("clause_id") == timeout)
    assert dict(graded.select("check", "outcome").iter_rows()) == {
        "degraded_output_provided": "passed", "literal": "passed"}
    assert tables["clause_verdicts"].filter(pl.col("clause_id") == timeout)["verdict"].item() \
        == "satisfied"


def test_a_program_conditional_sharing_no_word_with_the_error_is_not_triggered(tmp_path):
    # The program errs by its services' errors. A service's own conditionals all trigger when
    # none shares a word with its error; the program's covered any service's error then: the
    # critic's empty input triggered "if fact-checking finds no sources", and set the
    # program's primary ensures aside (a run of 91 read 74)
    write_service_run(
        tmp_path, run_id(1), ensures="- `report`: a brief\n- if it fails: a `report` saying so",
        errors=ERRORS + "\n- `empty-input`: nothing to read",
        outputs={"report.md": "Claim A.\n\nClaim B."}, error=("empty-input", "nothing"),
        program_ensures="- `report`: at least 2 paragraphs\n"
                        "- if fact-checking finds no sources: every claim in `report` is "
                        "marked “unverified”")
    tables, frame = grade_folder(tmp_path)
    cond = frame.filter(pl.col("kind") == "conditional")
    assert dict(cond.select("service", "triggered").iter_rows()) == {"demo": False, "svc": True}
    program = frame.filter((pl.col("service") == "demo") & (pl.col("kind") == "program_ensures"))
    assert program["on_degraded_path"].to_list() == [False]
    verdict = tables["clause_verdicts"].filter(
        pl.col("clause_id") == program["clause_id"].item())["verdict"].item()
    assert verdict == "satisfied"


SAMPLE_RUN = (Path(__file__).resolve().parent.parent / "data" / "runs" / "acme-research"
              / ".prose" / "runs" / "20261105-142207-Xq2")


@pytest.mark.parametrize(("condition", "error"), [
    ("if fact-checking finds no sources", "no-results"),
    ("if the fact-checker times out", "timeout"),
    ("if the fact-checker fails", "no-results"),
])
def test_a_program_conditional_is_triggered_by_the_service_it_names(tmp_path, condition,
                                                                    error):
    # the critic errs first, then the fact-checker: v17's first cut matched the program's
    # conditionals against the first error alone, and needed a word of the error itself
    run = tmp_path / SAMPLE_RUN.name
    shutil.copytree(SAMPLE_RUN, run)
    state = (run / "state.md").read_text()
    (run / "state.md").write_text(state.replace("critic ✓", "critic ✗ empty-input").replace(
        "fact-checker ✗ no-results", f"fact-checker ✗ {error}"))
    (run / "workspace" / "critic").mkdir()
    (run / "workspace" / "critic" / "__error.md").write_text("# Error: empty-input\n\nNone.\n")
    (run / "workspace" / "fact-checker" / "__error.md").write_text(f"# Error: {error}\n\nx\n")
    program = (run / "program.md").read_text()
    assert "if fact-checking finds no sources" in program
    (run / "program.md").write_text(program.replace("if fact-checking finds no sources",
                                                    condition))
    _, frame = grade_folder(tmp_path)
    (triggered,) = frame.filter((pl.col("service_kind") == "program")
                                & (pl.col("kind") == "conditional"))["triggered"].to_list()
    assert triggered


PATCHER = """\
- `patch`: a unified diff inside a ```diff fenced code block
- `patch-notes`: a bulleted list mapping each addressed comment to its hunk
- if no blocker or major comments exist: a `patch` file stating "nothing to patch"
"""


@pytest.mark.parametrize("mark", ["⊘", "✓"])
def test_a_log_note_tells_a_condition_met_by_a_service_that_did_not_error(tmp_path, mark):
    # `patcher ⊘ (deferred: no blocker/major comments — wrote "nothing to patch")`: v17 read
    # "no blocker or major comments" as an error fallback, untriggered as patcher did not
    # err, and held the diff and the notes it had no cause to write against it (57 for 100)
    note = 'deferred: no blocker/major comments — wrote "nothing to patch"'
    write_service_run(tmp_path, run_id(1), ensures=PATCHER, mark=f"{mark} ({note})",
                      outputs={"patch.md": "nothing to patch"})
    tables, frame = grade_folder(tmp_path)
    cond = frame.filter(pl.col("kind") == "conditional").row(0, named=True)
    assert (cond["triggered"], cond["trigger"]) == (True, f"the log's note “{note}”")
    verdicts = dict(tables["clause_verdicts"].join(frame.select("clause_id", "kind"),
                                                   on="clause_id")
                    .group_by("kind").agg("verdict").rows())
    assert verdicts["conditional"] == ["satisfied"]
    (text,) = build_reports(tables, frame).values()
    report = json.loads(text)
    assert report["conditional_ensures"][0]["condition_triggered"] is True
    assert report["conditional_ensures"][0]["degraded_output_provided"] is True
    if mark == "⊘":  # deferred: its main work was not due, its branch was
        assert verdicts["ensures"] == ["not_evaluable", "not_evaluable"]
        reasons = tables["clause_verdicts"].filter(pl.col("verdict") == "not_evaluable")
        assert reasons["reason"].to_list() == [
            f"not held against `svc`: the log marks it terminated and the log's note “{note}” "
            "met a condition of its conditional ensures, so it is graded on that path"] * 2
        assert report["overall_score"] == 100
    else:  # it ran to the end: its primary ensures still hold
        assert sorted(verdicts["ensures"]) == ["violated", "violated"]


@pytest.mark.parametrize(("note", "triggered"), [
    ("1 source unreachable, marked unverifiable", [False, True]),
    ("all pages reachable", [False, False]),
    ("no sources found", [True, False]),
    ("checked 4 claims", [False, False]),
])
def test_a_log_note_triggers_the_conditionals_whose_state_it_names(tmp_path, note, triggered):
    # a7b3c9: `fact-checker ✓ (1 source unreachable, marked unverifiable)`; a word the note
    # shares with a condition is not enough: it must name the state the condition asks about
    # ("unreachable"), and a word a negation governs is another word ("no sources")
    ensures = ('- `checks`: a JSON array of checked claims\n'
               '- if no sources are found: an empty `checks` file stating "no results"\n'
               '- if a cited page is unreachable: the claim is marked "unverifiable"')
    write_service_run(tmp_path, run_id(1), ensures=ensures, mark=f"✓ ({note})",
                      outputs={"checks.md": '[{"claim": "A", "status": "unverifiable"}]'})
    tables, frame = grade_folder(tmp_path)
    cond = frame.filter(pl.col("kind") == "conditional").sort("position")
    assert cond["triggered"].to_list() == triggered
    # a triggered one is graded on what the service published: "unverifiable" is there,
    # "no results" is not
    verdicts = cond.join(tables["clause_verdicts"], on="clause_id")["verdict"].to_list()
    assert verdicts == [("violated", "satisfied")[n] if hit else "not_evaluable"
                        for n, hit in enumerate(triggered)]
    assert frame.filter(pl.col("kind") == "ensures")["on_degraded_path"].to_list() == [False]


def test_a_conditional_about_another_service_is_triggered_by_its_error(tmp_path):
    # the writer's "if fact-checking finds no sources: mark claims unverified" when the
    # fact-checker erred `no-results` (Xq2); v17 read it as the writer's own error, which
    # never happened, and left the writer's duty untested in every such run
    run = tmp_path / SAMPLE_RUN.name
    shutil.copytree(SAMPLE_RUN, run)
    tables, frame = grade_folder(tmp_path)
    writer = frame.filter((pl.col("service") == "writer") & (pl.col("kind") == "conditional"))
    assert writer.select("condition", "triggered", "trigger").row(0) == (
        "fact-checking finds no sources", True, "`fact-checker` erred ('no-results')")
    provided = tables["checks"].filter(
        (pl.col("check") == "degraded_output_provided")
        & (pl.col("clause_id") == writer["clause_id"].item()))
    assert provided["detail"].item().startswith(
        "after `fact-checker` erred ('no-results'), `writer` provides ")
    # the writer did not err: its primary ensures still hold
    assert not frame.filter(pl.col("service") == "writer")["on_degraded_path"].any()

    # another service's error that the condition does not name triggers nothing
    state = (run / "state.md").read_text()
    (run / "state.md").write_text(state.replace("fact-checker ✗ no-results", "fact-checker ✓")
                                  .replace("critic ✓", "critic ✗ empty-input"))
    shutil.rmtree(run / "workspace" / "fact-checker")
    (run / "workspace" / "critic").mkdir(exist_ok=True)
    (run / "workspace" / "critic" / "__error.md").write_text("# Error: empty-input\n\nNone.\n")
    _, frame = grade_folder(tmp_path)
    writer = frame.filter((pl.col("service") == "writer") & (pl.col("kind") == "conditional"))
    assert writer["triggered"].to_list() == [False]


@pytest.mark.parametrize("errors", ["- no-results", "- no-results — nothing relevant was found",
                                    "- `no-results`"])
def test_an_error_declared_by_its_bare_name_opens_the_degraded_path(tmp_path, errors):
    # v18 declared no error written without a colon: the service's findings were held against
    # it (violated), and its conditional violated as "not one of its declared errors"
    write_service_run(tmp_path, run_id(1), ensures=ENSURES, errors=errors,
                      outputs={"findings.md": "Searched 4 indexes: no results."},
                      error=("no-results", "No source matched."))
    tables, frame = grade_folder(tmp_path)
    assert tables["services"]["declared_errors"].to_list() == [["no-results"]]
    kinds = dict(frame.select("clause_id", "kind").rows())
    assert {kinds[c]: v for c, v in tables["clause_verdicts"].select(
        "clause_id", "verdict").rows()} == {"ensures": "not_evaluable", "conditional": "satisfied"}


def test_evidence_of_a_conditional_naming_no_output_quotes_one_output(tmp_path):
    """Judged on all the service published, joined: its quotes stay within one file (v21
    quoted the end of `a.md` and the start of `b.md` as one text), and a phrase split across
    two files is not found."""
    ensures = ('- `a`: a line\n- `b`: a line\n'
               '- if the api is unavailable: the outputs say "served from stale cache"\n'
               '- if the api is unavailable: the outputs say "stale cache"')
    write_service_run(tmp_path, run_id(1), ensures=ensures,
                      errors="- `api-unavailable`: the api did not answer",
                      outputs={"a.md": "- x\n- y, served from", "b.md": "stale cache here"},
                      error=("api-unavailable", "The API timed out."))
    tables, frame = grade_folder(tmp_path)
    cond = frame.filter(pl.col("kind") == "conditional").select("run_id", "clause_id")
    checks = tables["checks"].join(cond, on=["run_id", "clause_id"])
    literal = checks.filter(pl.col("check") == "literal").sort("outcome")
    assert literal.select("outcome", "evidence").rows() == [
        ("failed", "no “served from stale cache” in the outputs of `svc`"),
        ("passed", "“stale cache here”")]
    excerpts = checks.filter(pl.col("check") == "meets_description")["evidence"].to_list()
    assert excerpts == ["“- x\n- y, served from…”"] * 2
