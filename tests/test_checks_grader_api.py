"""Code-first graders: the README's example grader runs as written; bad graders are refused
with a message that says what to do."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import polars as pl
import pytest
from check_runs import grade_folder, run_id, write_service_run
from typer.testing import CliRunner

from pipeline.checks import (
    DEFAULT_GRADER_ID,
    FAILED,
    PASSED,
    Check,
    Grader,
    GraderError,
    builtin_checks,
    check,
    default_grader,
    run_checks,
)
from pipeline.cli import app
from pipeline.exit_codes import USAGE

REPO = Path(__file__).resolve().parent.parent
EXAMPLE = REPO / "examples" / "grader_example.py"


def grade_cli(runs: Path, out: Path, *args: str):
    return CliRunner().invoke(app, ["grade", str(runs), "--out", str(out), "--workers", "1",
                                    "--json", *args])


def stored(out: Path, table: str) -> pl.DataFrame:
    return pl.read_parquet(out / table / "**" / "*.parquet", hive_partitioning=True)


def test_readme_shows_the_example_exactly():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", readme, flags=re.S)
    assert EXAMPLE.read_text(encoding="utf-8") in blocks


def test_the_example_grader_runs(tmp_path):
    runs = tmp_path / "runs"
    write_service_run(runs, run_id(1), ensures="- `reply`: a final reply citing its source",
                      outputs={"reply.md": "Fixed, see https://status.example/1 for details."})
    write_service_run(runs, run_id(2), ensures="- `reply`: a final reply citing its source",
                      outputs={"reply.md": "TODO: write the reply"})
    result = grade_cli(runs, tmp_path / "results", "--grader", str(EXAMPLE))
    assert result.exit_code == 0, result.output
    checks = stored(tmp_path / "results", "checks")
    assert set(checks["grader_id"]) == {"acme.contract.grader/v1"}
    mine = (checks.filter(pl.col("check").is_in(["sources_cited", "no_placeholders"]))
            .sort("run_id", "check").select("run_id", "check", "outcome", "evidence").rows())
    assert mine == [
        (run_id(1), "no_placeholders", "undecided", "no TODO, TBD or lorem ipsum found"),
        (run_id(1), "sources_cited", "passed", "1 URLs, first https://status.example/1"),
        (run_id(2), "no_placeholders", "failed", "“TODO: write the reply”"),
        (run_id(2), "sources_cited", "failed", "no URL in `reply`"),
    ]
    verdicts = stored(tmp_path / "results", "clause_verdicts").sort("run_id")
    assert verdicts["verdict"].to_list()[1] == "violated"


def test_a_checks_fractional_confidence_is_rounded_and_bounded(tmp_path):
    # it was cut: 0.9 became 0, and every clause so judged not_evaluable
    @check("fractional")
    def fractional():
        return Check(applies=pl.col("kind") == "ensures", outcome=PASSED,
                     detail=pl.lit("d"), evidence=pl.lit("e"),
                     confidence=pl.when(pl.col("text").str.contains("one"))
                     .then(pl.lit(80.6)).otherwise(pl.lit(120.0)))

    write_service_run(tmp_path, run_id(1), ensures="- `out`: one sentence\n- `more`: text",
                      outputs={"out.md": "Done.", "more.md": "Yes."})
    tables, _ = grade_folder(tmp_path, Grader("fractional.grader/v1", [fractional()]))
    assert sorted(tables["checks"]["confidence"].to_list()) == [81, 100]


def test_default_grader_is_current_and_stamps_every_row(tmp_path):
    assert DEFAULT_GRADER_ID == "prose.contract.grader/v24"
    write_service_run(tmp_path / "runs", run_id(1), ensures="- `out`: one sentence",
                      outputs={"out.md": "Done."})
    assert grade_cli(tmp_path / "runs", tmp_path / "results").exit_code == 0
    for table in ("checks", "clause_verdicts", "run_scores"):
        assert set(stored(tmp_path / "results", table)["grader_id"]) == {DEFAULT_GRADER_ID}


@pytest.mark.parametrize("bad", ["", "prose.contract/v1", "Prose.grader/v1", "x.grader/v0",
                                 "x.grader/v1.2", "x.grader/1", ".grader/v1", "a b.grader/v1"])
def test_malformed_grader_id_is_rejected(bad):
    with pytest.raises(GraderError, match=r"is malformed: expected '<name>\.grader/v<integer>'"):
        Grader(bad, builtin_checks())


@pytest.mark.parametrize("good", ["x.grader/v1", "prose.contract.grader/v13",
                                  "acme-team.contract_2.grader/v3"])
def test_wellformed_grader_ids_are_accepted(good):
    assert Grader(good, builtin_checks()).grader_id == good


def test_a_grader_with_no_check_is_rejected():
    with pytest.raises(GraderError, match="has no checks: a grader with no evidence cannot pass"):
        Grader("empty.grader/v1", [])


def test_a_check_listed_twice_is_rejected():
    # named alone (the error listed all 34 names)
    with pytest.raises(GraderError, match=r"lists a check twice: output_published \(check"):
        Grader("twice.grader/v1", [*builtin_checks(), builtin_checks()[0]])


def test_a_check_with_no_name_is_rejected():
    # its rows were written with `check = ''`
    nameless = dataclasses.replace(builtin_checks()[0], name="")
    with pytest.raises(GraderError, match="lists a check with no name"):
        Grader("nameless.grader/v1", [*builtin_checks()[1:], nameless])


@pytest.mark.parametrize(("body", "message"), [
    ("from pipeline.checks import Grader\ngrader = Grader('acme/v1', [])\n",
     "grader id 'acme/v1' is malformed"),
    ("from pipeline.checks import Grader\ngrader = Grader('acme.grader/v1', [])\n",
     "has no checks"),
    ("from pipeline.checks import default_grader\nmine = default_grader()\n",
     "must define `grader = Grader('<name>.grader/v<N>', [...])`"),
    ("import polars as pl\ndef broken(:\n", "could not be loaded: SyntaxError"),
])
def test_a_bad_grader_file_stops_grade_with_a_clear_message(tmp_path, body, message):
    path = tmp_path / "my_grader.py"
    path.write_text(body)
    write_service_run(tmp_path / "runs", run_id(1), ensures="- `out`: one sentence",
                      outputs={"out.md": "Done."})
    result = grade_cli(tmp_path / "runs", tmp_path / "results", "--grader", str(path))
    assert result.exit_code == USAGE
    flat = " ".join(result.output.split())
    assert message in flat and str(path.name) in flat
    assert not (tmp_path / "results" / "checks").exists()


def write_one_check_grader(path: Path, grader_id: str, name: str, check: str) -> Path:
    """A grader file: the built-in checks and one check `name` made of `check`, the
    arguments of its `Check(...)` (applies, outcome, …) as source text."""
    path.write_text(
        "import polars as pl\nfrom pipeline.checks import NAMED, PASSED, Check, Grader, "
        f"builtin_checks, check\n\n@check({name!r})\ndef made():\n    return Check({check})"
        f"\n\ngrader = Grader({grader_id!r}, [*builtin_checks(), made()])\n")
    return path


def test_a_check_reading_a_column_the_frame_lacks_stops_grade_before_anything(tmp_path):
    # a misspelt measure: every run with a clause was refused internal-error, polars naming
    # 13 "valid columns" (those the check's query was narrowed to), not `n_words`
    path = write_one_check_grader(
        tmp_path / "typo.py", "acme.typo.grader/v1", "short",
        "applies=NAMED, outcome=pl.when(pl.col('n_wrds') < 9).then(PASSED), detail=pl.lit('d'),"
        " evidence=pl.lit('e'), confidence=pl.lit(80)")
    write_service_run(tmp_path / "runs", run_id(1), ensures="- `out`: one sentence",
                      outputs={"out.md": "Done."})
    result = grade_cli(tmp_path / "runs", tmp_path / "results", "--grader", str(path))
    assert result.exit_code == USAGE, result.output
    assert ("check 'short' reads column 'n_wrds', which the clause frame does not have; did "
            "you mean 'n_words'") in " ".join(result.output.split())
    assert not (tmp_path / "results").exists()


@pytest.mark.parametrize(("part", "said"), [
    # a number compared with a word: every run with a clause was refused internal-error, and
    # the grade exited 0
    ("outcome=pl.when(pl.col('n_words') < 'many').then(PASSED), evidence=pl.lit('e'), "
     "confidence=pl.lit(80)", "cannot compare string with numeric type"),
    ("needs={'words': pl.col('kind') > 3}, outcome=pl.when(pl.col('n_words') < 9)"
     ".then(PASSED), evidence=pl.lit('e'), confidence=pl.lit(80)",
     "cannot compare string with numeric type"),
    # a confidence that is text, evidence that is a number: their clipping and masking were
    # not planned at the start (a polars error naming no check, every run refused, exit 0)
    ("outcome=PASSED, evidence=pl.lit('e'), confidence=pl.lit('high')", ""),
    ("outcome=PASSED, evidence=pl.col('n_words'), confidence=pl.lit(80)", ""),
])
def test_a_check_that_cannot_be_computed_stops_grade_before_anything(tmp_path, part, said):
    path = write_one_check_grader(
        tmp_path / "typed.py", "acme.typed.grader/v1", "short",
        f"applies=NAMED, detail=pl.lit('d'), {part}")
    write_service_run(tmp_path / "runs", run_id(1), ensures="- `out`: one sentence",
                      outputs={"out.md": "Done."})
    result = grade_cli(tmp_path / "runs", tmp_path / "results", "--grader", str(path))
    assert result.exit_code == USAGE, result.output
    flat = " ".join(result.output.split())
    assert f"check 'short' cannot be computed on the clause frame's columns: {said}" in flat
    assert f"check {len(builtin_checks()) + 1} of the grader" in flat
    assert not (tmp_path / "results").exists()


def test_a_check_failing_on_some_outputs_only_grades_the_others(tmp_path):
    # the check is not tried on outputs at grade start: one that fails on what some outputs
    # hold (here, text that is not JSON) refuses those runs, and the rest are graded
    path = write_one_check_grader(
        tmp_path / "json_only.py", "acme.json.grader/v1", "status_ok",
        "applies=NAMED, outcome=pl.when(pl.col('binding_text').str.json_decode(pl.Struct("
        "{'status': pl.String})).struct.field('status') == 'ok').then(PASSED), "
        "detail=pl.lit('d'), evidence=pl.lit('e'), confidence=pl.lit(80)")
    write_service_run(tmp_path / "runs", run_id(1), ensures="- `out`: a JSON object",
                      outputs={"out.json": '{"status": "ok"}'})
    result = grade_cli(tmp_path / "runs", tmp_path / "results", "--grader", str(path),
                       "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["graded"] == 1


def test_a_malformed_grader_id_option_stops_grade(tmp_path):
    write_service_run(tmp_path / "runs", run_id(1), ensures="- `out`: one sentence",
                      outputs={"out.md": "Done."})
    result = grade_cli(tmp_path / "runs", tmp_path / "results", "--grader-id", "v2")
    assert result.exit_code == USAGE
    assert "grader id 'v2' is malformed" in " ".join(result.output.split())


def test_a_grader_whose_checks_never_apply_cannot_pass(tmp_path):
    @check("never_applies")
    def never_applies() -> Check:
        return Check(applies=pl.lit(False), outcome=FAILED, detail=pl.lit("nothing"),
                     evidence=pl.lit(""), confidence=pl.lit(100))

    write_service_run(tmp_path, run_id(1), ensures="- `out`: one sentence",
                      outputs={"out.md": "Done."})
    tables, _ = grade_folder(tmp_path, Grader("idle.grader/v1", [never_applies()]))
    assert tables["checks"].is_empty()
    verdict = tables["clause_verdicts"].row(0, named=True)
    assert (verdict["verdict"], verdict["outcome"], verdict["reason"]) == (
        "not_evaluable", "undecided", "no check applies to this clause")
    run = tables["run_scores"].row(0, named=True)
    assert (run["overall_verdict"], run["outcome_verdict"]) == ("not_evaluable", "undecided")


def test_a_check_that_gives_no_outcome_settles_nothing(tmp_path):
    # `when` without `otherwise` gives null where no branch holds: that row established
    # nothing (before, a null outcome counted as no failure, and the clause was satisfied)
    @check("long_enough")
    def long_enough() -> Check:
        return Check(applies=pl.col("has_output"),
                     outcome=pl.when(pl.col("n_words") > 5).then(pl.lit("passed")),
                     detail=pl.lit("more than 5 words"), evidence=pl.lit(""),
                     confidence=pl.lit(90))

    write_service_run(tmp_path, run_id(1), ensures="- `out`: one sentence",
                      outputs={"out.md": "Done."})
    tables, _ = grade_folder(tmp_path, Grader("nulls.grader/v1", [long_enough()]))
    assert tables["checks"]["outcome"].to_list() == ["undecided"]
    verdict = tables["clause_verdicts"].row(0, named=True)
    assert (verdict["verdict"], verdict["outcome"], verdict["reason"]) == (
        "not_evaluable", "undecided", "more than 5 words")


def test_a_check_outcome_outside_the_vocabulary_is_refused_naming_the_check(tmp_path):
    @check("loose")
    def loose() -> Check:
        return Check(applies=pl.col("has_output"), outcome=pl.lit("pass"),
                     detail=pl.lit("anything"), evidence=pl.lit(""), confidence=pl.lit(90))

    write_service_run(tmp_path, run_id(1), ensures="- `out`: one sentence",
                      outputs={"out.md": "Done."})
    with pytest.raises(GraderError, match=re.escape(
            "check 'loose' of grader loose.grader/v1 gave the outcome 'pass'; a check's "
            "outcome must be one of passed, failed, undecided")):
        grade_folder(tmp_path, Grader("loose.grader/v1", [loose()]))


def test_each_judges_one_row_per_element_and_precondition_sets_the_role(tmp_path):
    """`each` and `precondition`, the two Check options a user grader may need."""
    @check("word_cap")
    def word_cap() -> Check:
        q = pl.col("quantities")
        ok = pl.col("n_words") <= q.struct.field("max").fill_null(1 << 30)
        return Check(applies=pl.col("has_output"), each="quantities",
                     outcome=pl.when(ok).then(pl.lit("passed")).otherwise(pl.lit("failed")),
                     detail=q.struct.field("phrase"), evidence=pl.format("{}", "n_words"),
                     confidence=pl.lit(90))

    @check("nonempty")
    def nonempty() -> Check:
        return Check(applies=pl.lit(True), precondition=True,
                     outcome=pl.when(pl.col("has_output")).then(pl.lit("passed"))
                     .otherwise(pl.lit("failed")),
                     detail=pl.lit("published"), evidence=pl.lit(""), confidence=pl.lit(95))

    grader = Grader("caps.grader/v1", [nonempty(), word_cap()])
    assert grader.preconditions == ("nonempty",)
    write_service_run(tmp_path, run_id(1),
                      ensures="- `out`: at most 3 words, at least 1 word, under 9 words",
                      outputs={"out.md": "one two three four"})
    tables, _ = grade_folder(tmp_path, grader)
    rows = tables["checks"].filter(pl.col("check") == "word_cap").sort("detail")
    assert rows.select("detail", "outcome").rows() == [
        ("at least 1 word", "passed"), ("at most 3 words", "failed"),
        ("under 9 words", "passed")]
    # the precondition passed but is no requirement: 2 of 3 requirements passed
    assert tables["clause_verdicts"]["verdict"].item() == "partially_satisfied"
    assert default_grader().preconditions == ("output_published", "degraded_output_provided",
                                              "error_declared")


def test_checks_read_columns_by_name_by_pattern_and_by_type(tmp_path):
    """A check sees every column it reads, however it names them: by name, by a pattern
    (`pl.col("^...$")`), or through a selector over the whole frame (`pl.all()`)."""
    def echo(name: str, detail: pl.Expr) -> Check:
        return Check(applies=pl.col("has_output"), outcome=pl.lit("passed"), detail=detail,
                     evidence=pl.lit(""), confidence=pl.lit(100), name=name)

    grader = Grader("columns.grader/v1", [
        echo("by_name", pl.format("{}|{}", "output_name", "n_words")),
        echo("by_pattern", pl.concat_str(pl.col("^(output_name|n_words)$"), separator="|")),
        echo("whole_row", pl.struct(pl.all()).struct.field("output_name")),
    ])
    write_service_run(tmp_path, run_id(1), ensures="- `out`: at most 3 words",
                      outputs={"out.md": "one two"})
    checks = grade_folder(tmp_path, grader)[0]["checks"].sort("check")
    assert checks.select("check", "detail").rows() == [
        ("by_name", "out|2"), ("by_pattern", "out|2"), ("whole_row", "out")]


def test_checks_with_nothing_to_judge_add_no_rows(tmp_path):
    """A check no clause of the batch calls for is skipped whole; the others are unchanged."""
    write_service_run(tmp_path, run_id(1), ensures="- `out`: a markdown list of at least 2 items",
                      outputs={"out.md": "- a\n- b"})
    tables, clauses = grade_folder(tmp_path)
    checks = tables["checks"]
    assert set(checks["check"]) == {"output_published", "format", "count"}
    assert checks.filter(pl.col("check") == "count")["outcome"].to_list() == ["passed"]
    # a frame with no clause at all gives an empty checks table of the stored shape
    none = run_checks(default_grader(), clauses.clear())
    assert none.is_empty() and none.columns == checks.columns


def panicking_grader(path: Path, name: str, when: str) -> Path:
    """A grader file, `name.contract.grader/v1`: the built-in checks and one more, `name`,
    that makes polars panic (a range as long as 2**62: capacity overflow) on the rows where
    the expression `when` holds."""
    path.write_text(f"""
import polars as pl

from pipeline.checks import NAMED, PASSED, Check, Grader, builtin_checks, check, label


@check("{name}")
def {name}() -> Check:
    size = pl.when({when}).then(2**62).otherwise(1)
    return Check(applies=NAMED, outcome=pl.when(pl.int_ranges(0, size).list.len() >= 0)
                 .then(PASSED), detail=pl.format("{{}} is {name}", label()),
                 evidence=pl.lit("{name}"), confidence=pl.lit(50))


grader = Grader("{name}.contract.grader/v1", [*builtin_checks(), {name}()])
""")
    return path


def newsroom_runs(root: Path) -> Path:
    """A copy of the sample's two newsroom runs."""
    import shutil

    for run in sorted((REPO / "data/runs/newsroom/.prose/runs").iterdir()):
        shutil.copytree(run, root / run.name)
    return root


def test_a_run_whose_data_makes_polars_panic_is_refused_and_the_rest_graded(tmp_path):
    # A Rust panic is a BaseException, which no `except Exception` caught, and which does
    # not pickle back from a worker: one run's output failed every grade of its bucket
    # (exit 1). It is refused internal-error, like any error a run's data raises alone.
    runs = newsroom_runs(tmp_path / "runs")
    poisoned = sorted(runs.iterdir())[0]
    with open(poisoned / "bindings/editor/digest.md", "a") as handle:
        handle.write("PANIC\n")
    # where the output says PANIC
    grader = panicking_grader(tmp_path / "panicky.py", "panicky",
                              'pl.col("output_text").str.contains("PANIC")')
    result = CliRunner().invoke(app, ["grade", str(runs), "--out", str(tmp_path / "out"),
                                      "--workers", "2", "--json", "--grader", str(grader)])
    assert result.exit_code == 0, result.output
    refusals = stored(tmp_path / "out", "refusals")
    assert refusals["run_id"].to_list() == [poisoned.name]
    assert refusals["reason"].to_list() == ["internal-error"]
    assert "PanicException" in refusals["detail"][0]
    assert stored(tmp_path / "out", "runs").filter(pl.col("status") == "graded").height == 1


def test_an_error_only_runs_graded_together_raise_fails_no_run(tmp_path):
    # A shard that raises is graded again in parts. Each run passed alone, so none was refused,
    # and the shard was then graded whole again: the error escaped the worker and failed the
    # grade (exit 1). Each run's own grading is now kept.
    runs = newsroom_runs(tmp_path / "runs")
    # where the clauses of two runs or more are checked together, never on one run's
    grader = panicking_grader(tmp_path / "alone.py", "alone", 'pl.col("run_uri").n_unique() > 1')
    result = CliRunner().invoke(app, ["grade", str(runs), "--out", str(tmp_path / "out"),
                                      "--workers", "1", "--json", "--grader", str(grader)])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.output)
    assert summary["found"] == 2 and summary["graded"] == 2, summary
    assert stored(tmp_path / "out", "refusals").is_empty()
    graded = stored(tmp_path / "out", "runs")
    assert sorted(graded["run_id"].to_list()) == sorted(p.name for p in runs.iterdir())
    checks = stored(tmp_path / "out", "checks")
    assert checks.filter(pl.col("check") == "alone").select("run_uri").n_unique() == 2
    assert len(list((tmp_path / "out" / "reports").glob("*.json"))) == 2


def test_a_check_giving_no_confidence_gives_zero(tmp_path):
    # a satisfied verdict with no confidence slipped past the floor of 50
    @check("sometimes")
    def sometimes():
        return Check(applies=pl.col("kind") == "ensures", outcome=PASSED,
                     detail=pl.lit("d"), evidence=pl.lit("e"),
                     confidence=pl.when(pl.col("text").str.contains("long")).then(90))

    write_service_run(tmp_path, run_id(1), ensures="- `out`: one sentence\n- `more`: long",
                      outputs={"out.md": "Done.", "more.md": "Yes."})
    tables, _ = grade_folder(tmp_path, Grader("sometimes.grader/v1", [sometimes()]))
    assert sorted(tables["checks"]["confidence"].to_list()) == [0, 90]
    assert sorted(tables["clause_verdicts"].select("confidence", "verdict").rows()) == [
        (0, "not_evaluable"), (90, "satisfied")]
