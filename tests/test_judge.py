"""The judge plug-in: a real judge process and a real HTTP endpoint settle judgment clauses;
answers are cached by content; a failing judge leaves clauses undecided, never failed."""

from __future__ import annotations

import contextlib
import json
import sys
from dataclasses import replace
from pathlib import Path

import duckdb
import polars as pl
import pytest
from judges.chat_server import ChatServer
from run_folders import write_run
from typer.testing import CliRunner

from pipeline.catalog import connect
from pipeline.checks import DEFAULT_GRADER_ID, default_grader
from pipeline.cli import app
from pipeline.grade import _gone, grade_runs
from pipeline.judging import (
    ChatJudge,
    CommandJudge,
    Judge,
    JudgeConfigError,
    JudgmentCache,
    judged_grader_id,
    load_template,
    make_judge,
)
from pipeline.judging.answers import Failure, MalformedAnswer, answer_from, answer_from_text
from pipeline.judging.identity import name_from_command, slug

REPO = Path(__file__).resolve().parent.parent
JUDGE_SCRIPT = Path(__file__).parent / "judges" / "judge_script.py"
EXAMPLE = REPO / "examples" / "judge_example.py"
JUDGED = judged_grader_id(DEFAULT_GRADER_ID, "judge_script")
BAD_SUMMARY = {"bindings/writer/summary.md": "First paragraph.\n\nBAD second paragraph.\n"}


def judge_cmd(log: Path, mode: str = "rule") -> str:
    return f"{sys.executable} {JUDGE_SCRIPT} --mode {mode} --log {log}"


def command_judge(results: Path, log: Path, mode: str = "rule", batch_size: int = 16,
                  **kwargs) -> Judge:
    kwargs.setdefault("backoff", 0.0)
    return Judge(CommandJudge(judge_cmd(log, mode), batch_size=batch_size),
                 JudgmentCache(str(results)), **kwargs)


def sent(log: Path) -> tuple[list[int], list[dict]]:
    """(requests per judge process, every request) that the judge script received."""
    if not log.exists():
        return [], []
    lines = [json.loads(ln) for ln in log.read_text().splitlines()]
    return ([ln["process"] for ln in lines if "process" in ln],
            [ln["request"] for ln in lines if "request" in ln])


def grade(runs: Path, results: Path, judge: Judge | None = None, **kwargs):
    # these tests grade the same runs again and again: --full, so no unchanged run is skipped
    kwargs.setdefault("full", True)
    return grade_runs(str(runs), str(results), default_grader(), workers=1, judge=judge,
                      **kwargs)


def table(results: Path, name: str, grader_id: str = JUDGED) -> pl.DataFrame:
    return connect(str(results)).sql(
        f"select * from {name} where grader_id = '{grader_id}' "
        "order by run_id, service, clause_id").pl()


def judged_rows(results: Path, grader_id: str = JUDGED) -> pl.DataFrame:
    return table(results, "checks", grader_id).filter(pl.col("check") == "meets_description")


@pytest.fixture
def two_runs(run_root: Path) -> Path:
    """Two runs with equal findings and report, and a summary that says BAD in the second."""
    write_run(run_root, "20261112-031502-good")
    write_run(run_root, "20261112-041502-bad", files=BAD_SUMMARY)
    return run_root


# -- a judge command ----------------------------------------------------------------------

def test_command_judge_settles_only_judgeable_undecided_rows(two_runs, tmp_path):
    results, log = tmp_path / "results", tmp_path / "judge.log"
    summary = grade(two_runs, results, command_judge(results, log))

    assert summary.grader_id == JUDGED
    _, requests = sent(log)
    # 3 judgeable rows per run; findings and report are equal in both runs: asked once each
    assert len(requests) == 4 and summary.judging["asked"] == 4
    assert summary.judging | {"answered": 4, "failed": 0, "from_cache": 0, "calls": 4} \
        == summary.judging
    first = requests[0]
    assert set(first) >= {"id", "program", "service", "clause", "question", "output",
                          "output_name", "output_truncated", "template_version", "messages"}
    assert first["program"] == "brief" and first["template_version"] == "v1"
    assert not first["question"].startswith("requires judgment")
    assert "<<<OUTPUT" in first["messages"][1]["content"]

    rows = judged_rows(results)
    assert rows.height == 6 and rows["judge_id"].to_list() == ["judge_script"] * 6
    bad = rows.filter(pl.col("run_id").str.ends_with("bad") & (pl.col("service") == "writer"))
    assert bad["outcome"].to_list() == ["failed"]
    assert bad["evidence"].to_list() == ["“BAD second paragraph.”"]
    assert "judge judge_script: the output says BAD" in bad["detail"][0]
    assert rows.filter(pl.col("outcome") == "passed").height == 5
    assert set(rows["confidence"]) == {80}
    # checks that carry no judgment question are never sent and keep no judge id
    others = table(results, "checks").filter(pl.col("check") != "meets_description")
    assert others["judge_id"].null_count() == others.height
    assert others.filter(pl.col("check") == "condition_triggered")["outcome"].to_list() \
        == ["undecided"] * 2

    verdicts = table(results, "clause_verdicts")
    summary_clause = verdicts.join(bad.select("run_uri", "clause_id"), on=["run_uri", "clause_id"])
    assert summary_clause["verdict"].to_list() == ["partially_satisfied"]
    assert summary_clause["judge_id"].to_list() == ["judge_script"]
    assert verdicts.filter(pl.col("judge_id").is_not_null()).height == 6


def test_requests_are_batched_one_process_per_batch(run_root, tmp_path):
    for i in range(4):  # distinct outputs: 4 runs x 3 judgeable rows, nothing shared
        write_run(run_root, f"20261112-03150{i}-r{i}", files={
            "bindings/writer/summary.md": f"Paragraph {i}.\n\nMore.\n",
            "bindings/researcher/findings.md": f"- finding {i} (src: a)\n",
            "bindings/writer/report.md": f"# Brief {i}\n"})
    results, log = tmp_path / "results", tmp_path / "judge.log"
    judge = Judge(CommandJudge(judge_cmd(log), batch_size=5), JudgmentCache(str(results)),
                  concurrency=2)
    summary = grade(run_root, results, judge)
    processes, requests = sent(log)
    assert sorted(processes) == [2, 5, 5] and len({r["id"] for r in requests}) == 12
    assert summary.judging["answered"] == 12


def test_with_judge_tables_pass_their_schemas(two_runs, tmp_path):
    results = tmp_path / "results"
    grade(two_runs, results, command_judge(results, tmp_path / "log"), validate=True)
    assert table(results, "checks")["judgeable"].sum() == 6


def test_ledgers_beside_runs_keep_their_grader_and_are_not_sent(two_runs, tmp_path):
    from pipeline.sources.ledger_builder import evaluation

    evaluation("run-recall", "evals.two-turn-recall/v1", ["ok", "BANANA7"]).write(
        two_runs / "ledgers" / "run-recall")
    results, log = tmp_path / "results", tmp_path / "judge.log"
    summary = grade(two_runs, results, command_judge(results, log))
    assert summary.found == 3 and summary.judging["asked"] == 4 and len(sent(log)[1]) == 4
    checks = connect(str(results)).sql("select * from checks").pl()
    ledger = checks.filter(pl.col("grader_id") != JUDGED)
    assert ledger.height > 0 and "judged-by" not in ledger["grader_id"][0]
    assert ledger["judge_id"].null_count() == ledger.height


def test_a_grade_reports_the_judges_progress(two_runs, tmp_path):
    seen: list[tuple[str, int, int | None]] = []
    results = tmp_path / "results"
    grade(two_runs, results, command_judge(results, tmp_path / "judge.log"),
          progress=lambda stage, done, total: seen.append((stage, done, total)))
    judged = [(done, total) for stage, done, total in seen if stage == "asking the judge"]
    assert judged[0] == (0, 4) and judged[-1] == (4, 4)
    assert [done for done, _ in judged] == sorted(done for done, _ in judged)


# -- the cache ----------------------------------------------------------------------------

def test_second_run_sends_zero_requests_and_gives_the_same_verdicts(two_runs, tmp_path):
    results, log1, log2 = tmp_path / "results", tmp_path / "first.log", tmp_path / "second.log"
    grade(two_runs, results, command_judge(results, log1))
    first = judged_rows(results).select("run_uri", "clause_id", "outcome", "evidence", "detail")
    summary = grade(two_runs, results, command_judge(results, log2))
    assert sent(log2) == ([], [])
    assert summary.judging["asked"] == 0 and summary.judging["from_cache"] == 4
    assert judged_rows(results).select(first.columns).equals(first)
    parts = list((results / "judgments" / "judge=judge_script").glob("*.parquet"))
    stored = pl.read_parquet(parts)
    assert stored.height == 4 and set(stored["template_version"]) == {"v1"}
    # the catalog shows the cache as the `judgments` view, each answer once
    from pipeline.catalog import connect

    view = connect(str(results)).sql("select * from judgments order by clause_sha256").pl()
    assert view.sort("clause_sha256").equals(stored.sort("clause_sha256"))
    duckdb_file = duckdb.connect(str(results / "catalog.duckdb"), read_only=True)
    assert duckdb_file.sql("select count(*) from judgments").fetchall() == [(4,)]


def test_changed_output_asks_exactly_that_clause(two_runs, tmp_path):
    results, log = tmp_path / "results", tmp_path / "judge.log"
    grade(two_runs, results, command_judge(results, tmp_path / "first.log"))
    (two_runs / "20261112-031502-good" / "bindings/writer/summary.md").write_text(
        "One paragraph, rewritten.\n\nBAD again.\n")
    summary = grade(two_runs, results, command_judge(results, log))
    _, requests = sent(log)
    assert [r["output"] for r in requests] == ["One paragraph, rewritten.\n\nBAD again.\n"]
    assert summary.judging["asked"] == 1 and summary.judging["from_cache"] == 3
    good = judged_rows(results).filter(pl.col("run_id").str.ends_with("good")
                                       & (pl.col("service") == "writer"))
    assert good["outcome"].to_list() == ["failed"]


def test_new_template_version_asks_everything_again(two_runs, tmp_path):
    results, log = tmp_path / "results", tmp_path / "judge.log"
    grade(two_runs, results, command_judge(results, tmp_path / "first.log"))
    newer = replace(load_template(), version="v1-reworded")
    summary = grade(two_runs, results, command_judge(results, log, template=newer))
    _, requests = sent(log)
    assert len(requests) == 4 and {r["template_version"] for r in requests} == {"v1-reworded"}
    assert summary.judging["from_cache"] == 0
    # and the older answers are still there for the older template
    again = grade(two_runs, results, command_judge(results, tmp_path / "third.log"))
    assert again.judging["from_cache"] == 4 and sent(tmp_path / "third.log") == ([], [])


def test_call_budget_caps_requests_and_the_rest_stay_undecided(two_runs, tmp_path):
    results, log = tmp_path / "results", tmp_path / "judge.log"
    summary = grade(two_runs, results, command_judge(results, log, max_calls=3,
                                                     concurrency=1))
    assert len(sent(log)[1]) == 3
    assert summary.judging | {"answered": 3, "over_budget": 1, "calls": 3} == summary.judging
    rows = judged_rows(results)
    waiting = rows.filter(pl.col("detail").str.contains("judge call budget exhausted"))
    assert waiting.height >= 1 and set(waiting["outcome"]) == {"undecided"}
    assert waiting["judge_id"].null_count() == waiting.height
    # the next night asks only what the budget left out
    more = grade(two_runs, results, command_judge(results, tmp_path / "next.log"))
    assert more.judging["asked"] == 1 and more.judging["from_cache"] == 3


def test_cache_beside_results_in_s3(two_runs, tmp_path, s3_server, s3_bucket):
    import s3fs

    results, s3_endpoint = f"s3://{s3_bucket}/nightly", s3_server

    def night(log: Path):
        judge = Judge(CommandJudge(judge_cmd(log)), JudgmentCache(results, s3_endpoint))
        return grade_runs(str(two_runs), results, default_grader(), workers=1, judge=judge,
                          endpoint_url=s3_endpoint, full=True)

    first = night(tmp_path / "first.log")
    second = night(tmp_path / "second.log")
    assert first.judging["answered"] == 4 and len(sent(tmp_path / "first.log")[1]) == 4
    assert second.judging["from_cache"] == 4 and sent(tmp_path / "second.log") == ([], [])
    fs = s3fs.S3FileSystem(endpoint_url=s3_endpoint, use_listings_cache=False)
    parts = fs.glob(f"{s3_bucket}/nightly/judgments/judge=judge_script/*.parquet")
    assert len(parts) == 1 and pl.read_parquet(fs.cat_file(parts[0])).height == 4


def test_many_cache_parts_are_merged_when_read(tmp_path):
    from pipeline.judging.cache import MAX_PARTS

    cache = JudgmentCache(str(tmp_path / "results"))
    for i in range(MAX_PARTS + 1):
        cache.save("j", pl.DataFrame({
            "judge_id": ["j"], "template_version": ["v1"], "clause_sha256": [f"c{i}"],
            "output_sha256": ["o"], "outcome": ["passed"], "confidence": [70],
            "evidence": ["x"], "rationale": [""], "answered_at": ["2026-11-12T03:00:00+00:00"]}))
    cache.save("j", cache.known("j").head(1))  # an answer stored twice is one answer
    assert len(cache.parts("j")) == MAX_PARTS + 2
    fresh = JudgmentCache(str(tmp_path / "results"))
    assert sorted(fresh.known("j")["clause_sha256"]) == sorted(f"c{i}" for i in
                                                               range(MAX_PARTS + 1))
    assert len(fresh.parts("j")) == 1
    assert JudgmentCache(str(tmp_path / "results")).known("j").height == MAX_PARTS + 1


# -- a judge that fails -------------------------------------------------------------------

@pytest.mark.parametrize(("mode", "reason"), [
    ("sleep", "judge timed out after 0.5s"),
    ("garbage", "judge answered malformed JSON (2 line(s) not understood, first: not JSON"),
    ("malformed", "judge answer malformed: confidence must be a number from 0 to 100, got 150"),
])
def test_failing_judge_leaves_clauses_undecided_with_the_reason(two_runs, tmp_path, mode,
                                                                reason):
    results, log = tmp_path / "results", tmp_path / "judge.log"
    summary = grade(two_runs, results, command_judge(results, log, mode, timeout=0.5,
                                                     retries=0, batch_size=2))
    assert summary.graded == 2 and summary.batches
    assert summary.judging | {"asked": 4, "answered": 0, "failed": 4} == summary.judging
    rows = judged_rows(results)
    assert set(rows["outcome"]) == {"undecided"} and rows["judge_id"].null_count() == 6
    assert all(f"judge judge_script gave no answer: {reason}" in d for d in rows["detail"])
    verdicts = table(results, "clause_verdicts")
    assert "violated" not in set(verdicts["verdict"])
    assert not (results / "judgments").exists()  # failures are not cached: asked again


def test_questions_a_failing_judge_left_are_asked_by_the_next_grade(two_runs, tmp_path):
    # A night the judge was down left every question unanswered, and the next grade, the
    # judge back, skipped every run as unchanged: the clauses stayed undecided until a
    # --full. A run the judge left a question of is committed marked (`~unjudged`): the next
    # grade grades it again, asking only what is not answered.
    results, log = tmp_path / "results", tmp_path / "judge.log"
    grade(two_runs, results, full=False)  # without a judge: compared below
    down = grade(two_runs, results, command_judge(results, log, "garbage", retries=0),
                 full=False)
    unanswered = down.judging["failed"]
    assert unanswered > 0 and down.judging | {"asked": unanswered, "answered": 0} == down.judging
    def fingerprints() -> list[str]:
        return [f for (f,) in connect(str(results)).sql(
            f"select fingerprint from runs where grader_id = '{JUDGED}'").fetchall()]

    assert len(fingerprints()) == 2 and all(f.endswith("~unjudged") for f in fingerprints())
    # the grades with and without the judge read the same files: compared in a diff
    assert connect(str(results)).sql(
        "select bool_and(same_files), count(*) from paired_runs").fetchall() == [(True, 4)]
    back = grade(two_runs, results, command_judge(results, tmp_path / "back.log"), full=False)
    assert (back.changed, back.skipped, back.graded) == (2, 0, 2)
    assert back.judging | {"asked": unanswered, "answered": unanswered,
                           "failed": 0} == back.judging
    assert set(judged_rows(results)["judge_id"]) == {"judge_script"}
    assert not any(f.endswith("~unjudged") for f in fingerprints())
    again = grade(two_runs, results, command_judge(results, tmp_path / "again.log"),
                  full=False)
    assert (again.skipped, again.graded, sent(tmp_path / "again.log")[1]) == (2, 0, [])


def test_a_judge_printing_without_end_is_stopped_at_the_reply_cap(two_runs, tmp_path):
    # its output was held whole until the timeout: 64 s past a 1 s timeout and 7.7 GB
    results = tmp_path / "results"
    judge = Judge(CommandJudge(judge_cmd(tmp_path / "log", "runaway")),
                  JudgmentCache(str(results)), retries=0, timeout=60)
    summary = grade(two_runs, results, judge)
    assert summary.judging["answered"] == 0 and summary.judging["failed"] > 0
    rows = judged_rows(results)
    assert set(rows["outcome"]) == {"undecided"}
    assert all("judge wrote more than 4 MiB on its standard output; not read" in d
               for d in rows["detail"])


def test_answers_holding_line_separators_written_raw_are_read(two_runs, tmp_path):
    # U+2028 and U+0085 inside a JSON string cut each answer in two: "malformed JSON"
    results = tmp_path / "results"
    summary = grade(two_runs, results, command_judge(results, tmp_path / "log", "separators"))
    assert summary.judging["failed"] == 0 and summary.judging["answered"] > 0
    assert all("\u2028 and \u0085" in d for d in judged_rows(results).filter(
        pl.col("judge_id").is_not_null())["detail"])


def test_judge_crash_keeps_answers_given_before_it_and_retries_the_rest(two_runs, tmp_path):
    results, log = tmp_path / "results", tmp_path / "judge.log"
    judge = Judge(CommandJudge(judge_cmd(log, "crash"), batch_size=4),
                  JudgmentCache(str(results)), retries=0)
    summary = grade(two_runs, results, judge)
    assert summary.judging | {"answered": 1, "failed": 3} == summary.judging
    rows = judged_rows(results)
    crashed = rows.filter(pl.col("judge_id").is_null())
    assert set(crashed["outcome"]) == {"undecided"}
    assert all("exited with code 3: judge blew up on the second request" in d
               for d in crashed["detail"])
    # with retries the crashing judge is asked again (each try answers one more request)
    log2 = tmp_path / "retry.log"
    judge = Judge(CommandJudge(judge_cmd(log2, "crash"), batch_size=4),
                  JudgmentCache(str(results)), retries=2, backoff=0.01)
    again = grade(two_runs, results, judge)
    assert [len(sent(log2)[1]), sent(log2)[0]] == [6, [3, 2, 1]]
    assert again.judging | {"from_cache": 1, "answered": 3, "failed": 0} == again.judging


def test_a_pass_quoting_what_is_not_in_the_output_leaves_its_question_open(two_runs,
                                                                           tmp_path):
    # v18 kept such a pass at 49 confidence: a clause its checks had satisfied (75, an open
    # question) went not_evaluable, and a run violated, for a judge that said "passed"
    results = tmp_path / "results"
    grade(two_runs, results, command_judge(results, tmp_path / "log", "misquote"))
    rows = judged_rows(results)
    misquoted, failed = (rows.filter(pl.col("detail").str.contains(
        "it answered passed but its quote is not in the output: the question stays open")),
        rows.filter(pl.col("outcome") == "failed"))
    assert not misquoted.is_empty() and not failed.is_empty()
    assert set(misquoted["outcome"]) == {"undecided"} and set(misquoted["confidence"]) == {0}
    unjudged = tmp_path / "unjudged"
    grade(two_runs, unjudged, None)
    judged, alone = (dict(table(r, "clause_verdicts", g).select("clause_id", "verdict").rows())
                     for r, g in ((results, JUDGED), (unjudged, DEFAULT_GRADER_ID)))
    # a clause whose judged rows are all such passes: as if the judge had not answered
    only_passed = set(misquoted["clause_id"]) - set(failed["clause_id"])
    assert only_passed
    for clause_id in only_passed:
        assert judged[clause_id] == alone[clause_id]
    # a failed answer may state an absence instead of quoting: its confidence stands, and
    # its evidence is shown as stated (before, it was capped too: never violated)
    assert 49 not in set(failed["confidence"])
    assert set(failed["evidence"]) == {"a sentence that the output never contained"}
    verdicts = table(results, "clause_verdicts").filter(pl.col("judge_id").is_not_null())
    assert set(verdicts["verdict"]) & {"violated", "partially_satisfied"}


def test_an_undecided_answers_words_not_in_the_output_are_not_shown_as_a_quote(two_runs,
                                                                              tmp_path):
    # They were shown in quote marks as the output's text (“The moon is made of green
    # cheese”), where evidence is quoted output text or a stated absence
    results = tmp_path / "results"
    grade(two_runs, results, command_judge(results, tmp_path / "log", "unsure"))
    rows = judged_rows(results)
    assert set(rows["outcome"]) == {"undecided"}
    made_up = "a sentence that the output never contained"
    assert made_up in set(rows["evidence"])  # stated, without quote marks
    quoted = [e for e in rows["evidence"] if e != made_up]
    assert quoted and all(e.startswith("“") and e.endswith("”") for e in quoted)


# -- an OpenAI-compatible endpoint --------------------------------------------------------

def chat_judge(results: Path, server: ChatServer, **kwargs) -> Judge:
    kwargs.setdefault("backoff", 0.0)
    client = ChatJudge(server.url, "tiny-judge-1.0", api_key=kwargs.pop("api_key", None))
    return Judge(client, JudgmentCache(str(results)), **kwargs)


def test_chat_endpoint_judges_and_the_rerun_sends_nothing(two_runs, tmp_path):
    results = tmp_path / "results"
    with ChatServer(api_key="sk-test-123") as server:
        summary = grade(two_runs, results, chat_judge(results, server, api_key="sk-test-123"))
        assert len(server.requests) == 4
        body = server.requests[0]["body"]
        assert server.requests[0]["path"] == "/v1/chat/completions"
        assert body["model"] == "tiny-judge-1.0" and body["temperature"] == 0
        assert [m["role"] for m in body["messages"]] == ["system", "user"]
        assert "Answer with one JSON object" in body["messages"][0]["content"]
        assert {r["authorization"] for r in server.requests} == {"Bearer sk-test-123"}
        again = grade(two_runs, results, chat_judge(results, server, api_key="sk-test-123"))
        assert len(server.requests) == 4 and again.judging["from_cache"] == 4
    gid = judged_grader_id(DEFAULT_GRADER_ID, "tiny-judge-1.0")
    assert summary.grader_id == gid
    rows = judged_rows(results, gid)
    assert set(rows["judge_id"]) == {"tiny-judge-1.0"} and set(rows["confidence"]) == {75}
    assert rows.filter(pl.col("outcome") == "failed")["evidence"].to_list() \
        == ["“BAD second paragraph.”"]


def test_chat_endpoint_server_errors_are_retried(two_runs, tmp_path):
    results = tmp_path / "results"
    with ChatServer(mode="flaky", fail_first=2) as server:
        summary = grade(two_runs, results, chat_judge(results, server, concurrency=1))
        assert len(server.requests) == 6
    assert summary.judging | {"answered": 4, "failed": 0, "calls": 6} == summary.judging


@pytest.mark.parametrize(("mode", "key", "reason", "calls"), [
    ("slow", None, "judge timed out after 0.3s", 8),
    # a reply sent a byte at a time is timed out whole (urllib bounds each read only)
    ("drip", None, "judge timed out after 0.3s", 8),
    ("garbage", None, "judge answered malformed JSON: no JSON object in the reply", 8),
    ("rule", "wrong-key", "judge endpoint answered HTTP 401: {\"error\": {\"message\": "
                          "\"bad key\"}}", 4),
])
def test_chat_endpoint_failures_leave_clauses_undecided(two_runs, tmp_path, mode, key,
                                                        reason, calls):
    results = tmp_path / "results"
    with ChatServer(mode=mode, api_key="sk-right" if key else None) as server:
        summary = grade(two_runs, results, chat_judge(results, server, api_key=key,
                                                      timeout=0.3, retries=1))
        # retryable failures are asked twice; a refused key is not retried
        assert summary.judging["calls"] == calls
    gid = judged_grader_id(DEFAULT_GRADER_ID, "tiny-judge-1.0")
    rows = judged_rows(results, gid)
    assert set(rows["outcome"]) == {"undecided"} and summary.judging["failed"] == 4
    assert all(f"gave no answer: {reason}" in d for d in rows["detail"]), rows["detail"][0]


@pytest.mark.parametrize(("stop", "exit_code", "said"), [
    ("SIGINT", 130, "interrupted (Ctrl-C)"), ("SIGTERM", 143, "stopped by SIGTERM")])
def test_a_stop_with_a_slow_judge_comes_at_once_and_sends_nothing_more(two_runs, tmp_path,
                                                                     stop, exit_code, said):
    # The pool's threads held the exit until every call under way had ended and been
    # retried: 200 s after a Ctrl-C, and past 650 s with the default timeout and retries,
    # still sending requests (a second Ctrl-C did nothing); a SIGTERM, which abandons the
    # batch in hand, waited for every question of the batch to be asked
    import os
    import signal
    import subprocess
    import time

    code = "import sys; from pipeline.cli import app; sys.exit(app())"
    with ChatServer(mode="stall") as server:
        proc = subprocess.Popen(
            [sys.executable, "-c", code, "grade", str(two_runs), "--out",
             str(tmp_path / "results"), "--judge-url", server.url, "--judge-model", "m1",
             "--judge-timeout", "60", "--judge-concurrency", "2"],
            cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            start_new_session=True)
        deadline = time.monotonic() + 60
        while server.arrived < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert server.arrived == 2  # one call on each of the two threads, unanswered
        os.killpg(proc.pid, getattr(signal, stop))
        interrupted = time.monotonic()
        _, stderr = proc.communicate(timeout=60)
        waited = time.monotonic() - interrupted
        time.sleep(0.5)
        assert server.arrived == 2  # no call sent after the signal, nor a retry
    assert proc.returncode == exit_code, stderr
    assert waited < 10, f"{waited:.1f} s from {stop} to exit"
    assert said in " ".join(stderr.split()) and "Traceback" not in stderr
    assert not (tmp_path / "results" / "_commits").exists() or not any(
        (tmp_path / "results" / "_commits").iterdir())  # the batch in hand was abandoned


def test_an_error_while_the_judge_is_asked_leaves_the_next_asking_whole(two_runs, tmp_path,
                                                                       monkeypatch):
    # An error in the loop that reads the answers (the cache's write on a full disk) stopped
    # the judge for good: the shard, graded again run by run, waited for answers no thread
    # would ask, and the grade hung, holding the lock, night after night
    import threading

    results, log = tmp_path / "results", tmp_path / "judge.log"
    failures = []
    write = JudgmentCache._write

    def full_for_a_while(self, judge_id, df):  # (the loop's write, and its keeping's)
        if len(failures) < 2:
            failures.append(judge_id)
            raise OSError(28, "No space left on device")
        return write(self, judge_id, df)

    monkeypatch.setattr(JudgmentCache, "_write", full_for_a_while)
    judge = command_judge(results, log, flush_every=1)
    summary = []
    grading = threading.Thread(target=lambda: summary.append(grade(two_runs, results, judge)),
                               daemon=True)
    grading.start()
    grading.join(timeout=120)
    assert not grading.is_alive(), "the grade hung"
    assert len(failures) == 2 and summary and summary[0].graded == 2
    assert set(judged_rows(results)["judge_id"]) == {"judge_script"}  # answered after all


def test_a_stop_kills_the_judge_commands_under_way(two_runs, tmp_path):
    # A judge command runs in a session of its own, killed with its group when it overran:
    # since a Ctrl-C no longer waits for the calls under way, they outlived the grade (a
    # paid model's call each), past their timeout
    import os
    import signal
    import subprocess
    import time

    hang = tmp_path / "hang.py"
    pids = tmp_path / "pids"
    hang.write_text("import os, sys, time\nsys.stdin.read()\n"
                    f"open({str(pids)!r}, 'a').write(f'{{os.getpid()}}\\n')\n"
                    "time.sleep(600)\n")
    code = "import sys; from pipeline.cli import app; sys.exit(app())"
    proc = subprocess.Popen(
        [sys.executable, "-c", code, "grade", str(two_runs), "--out", str(tmp_path / "results"),
         "--judge-cmd", f"{sys.executable} {hang}", "--judge-timeout", "300",
         "--judge-concurrency", "2", "--workers", "1"],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True)
    started = []
    try:
        deadline = time.monotonic() + 60
        while len(started) < 1 and time.monotonic() < deadline:
            time.sleep(0.05)
            started = pids.read_text().split() if pids.exists() else []
        assert started
        os.killpg(proc.pid, signal.SIGINT)
        proc.communicate(timeout=60)
        assert proc.returncode == 130
        deadline = time.monotonic() + 10
        alive = [int(p) for p in started]
        while alive and time.monotonic() < deadline:
            time.sleep(0.1)
            alive = [p for p in alive if not _gone(p)]
        assert not alive, f"judge processes {alive} outlived the grade"
    finally:
        for pid in (int(p) for p in started):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def test_an_endpoint_that_echoes_the_key_or_answers_too_much_is_kept_in_bounds(two_runs,
                                                                             tmp_path):
    # A gateway's error repeating the request's headers put the API key into 109 rows and
    # 20 reports; a reply of 150 MB was read whole (1.45 GB at four calls side by side)
    results = tmp_path / "results"
    key = "sk-echoed-" + "k" * 60  # (it starts within the 200 characters kept of an error)
    gid = judged_grader_id(DEFAULT_GRADER_ID, "tiny-judge-1.0")
    for mode, said in (("echo", "HTTP 500: upstream failed"), ("echo_spaced", "HTTP 500: error:")):
        with ChatServer(mode=mode) as server:  # (spaced: the key starts past byte 200)
            grade(two_runs, results / mode, chat_judge(results / mode, server, api_key=key,
                                                       retries=0))
            assert {r["authorization"] for r in server.requests} == {f"Bearer {key}"}
        details = judged_rows(results / mode, gid)["detail"]
        assert all(f"judge endpoint answered {said}" in d for d in details)
        assert all("Authorization: Bearer [API key]" in d for d in details), details[0]
        written = [p.read_bytes() for p in (results / mode).rglob("*") if p.is_file()]
        assert not any(b"sk-echo" in data for data in written), mode
    with ChatServer(mode="huge") as server:
        summary = grade(two_runs, tmp_path / "huge", chat_judge(tmp_path / "huge", server,
                                                                retries=0))
    assert summary.judging["failed"] == 4
    details = judged_rows(tmp_path / "huge", gid)["detail"]
    assert all("reply is larger than 4 MiB; not read" in d for d in details)


# -- the command line, the example judge and provenance -----------------------------------

def test_example_judge_from_the_readme_runs_through_the_cli(run_root, tmp_path):
    write_run(run_root, files={"bindings/writer/summary.md":
                               "Light scatters.\n\nThe findings agree: short waves scatter.\n"})
    results = tmp_path / "results"
    readme = (REPO / "README.md").read_text()
    assert EXAMPLE.read_text().strip() in readme  # the README shows exactly this file
    result = CliRunner().invoke(app, [
        "grade", str(run_root), "--out", str(results), "--workers", "1", "--json",
        "--judge-cmd", f"{sys.executable} {EXAMPLE}"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["grader_id"] == judged_grader_id(DEFAULT_GRADER_ID, "judge_example")
    assert data["judge"] | {"asked": 3, "answered": 3, "failed": 0} == data["judge"]
    rows = judged_rows(results, data["grader_id"]).sort("service")
    assert set(rows["judge_id"]) == {"judge_example"}
    # only the summary has a line using a long word of its clause ("findings")
    assert rows.select("service", "outcome", "evidence").rows() == [
        ("brief", "undecided", rows["evidence"][0]),
        ("researcher", "undecided", rows["evidence"][1]),
        ("writer", "passed", "“The findings agree: short waves scatter.”")]
    assert "1 output line(s) use the clause's key words" in rows["detail"][2]


def test_cli_summary_prints_asked_cached_and_failed(two_runs, tmp_path):
    results = tmp_path / "results"
    args = ["grade", str(two_runs), "--out", str(results), "--workers", "1",
            "--grader-id", "acme.contract.grader/v4", "--judge-cmd", judge_cmd(tmp_path / "log")]
    first = CliRunner().invoke(app, args)
    assert first.exit_code == 0, first.output
    assert "acme.contract.judged-by-judge_script.grader/v4" in first.output
    assert "asked 4 (answered 4, failed 0), answered from cache 0" in first.output
    second = CliRunner().invoke(app, [*args, "--judge-max-calls", "0", "--full"])
    assert "asked 0 (answered 0, failed 0), answered from cache 4" in second.output


def test_chat_endpoint_key_comes_from_the_environment(two_runs, tmp_path):
    results = tmp_path / "results"
    with ChatServer(api_key="sk-env-456") as server:
        result = CliRunner().invoke(app, [
            "grade", str(two_runs), "--out", str(results), "--workers", "1", "--json",
            "--judge-url", server.url, "--judge-model", "tiny-judge-1.0"],
            env={"RUNGRADE_JUDGE_API_KEY": "sk-env-456"})
        assert result.exit_code == 0, result.output
        assert {r["authorization"] for r in server.requests} == {"Bearer sk-env-456"}
    assert json.loads(result.output)["judge"]["answered"] == 4


@pytest.mark.parametrize(("args", "message"), [
    (["--judge-cmd", "x", "--judge-url", "http://127.0.0.1:1/v1"], "not both"),
    (["--judge-url", "http://127.0.0.1:1/v1"], "needs --judge-model"),
    (["--judge-model", "m"], "--judge-model needs --judge-cmd or --judge-url"),
    (["--judge-max-calls", "5"], "--judge-max-calls needs --judge-cmd or --judge-url"),
    (["--judge-cmd", "no-such-judge-program --x"], "was not found"),
    (["--judge-cmd", "python3 j.py", "--judge-name", "Big Judge"], "not usable"),
    (["--judge-url", "ftp://host/v1", "--judge-model", "m"],
     "--judge-url 'ftp://host/v1' is not an http(s) URL"),  # (as given, not as completed)
    (["--judge-cmd", "python3 j.py", "--judge-concurrency", "0"], "at least 1"),
    # an option of the other judge: it was ignored without a word
    (["--judge-cmd", "python3 j.py", "--judge-model", "m"],
     "--judge-model applies to --judge-url only"),
    (["--judge-cmd", "python3 j.py", "--judge-api-key-env", "K"],
     "--judge-api-key-env applies to --judge-url only"),
    (["--judge-url", "http://127.0.0.1:1/v1", "--judge-model", "m", "--judge-batch-size", "4"],
     "--judge-batch-size applies to --judge-cmd only"),
])
def test_cli_refuses_judge_options_that_cannot_work(two_runs, tmp_path, args, message):
    result = CliRunner().invoke(app, ["grade", str(two_runs), "--out", str(tmp_path / "r"),
                                      *args])
    assert result.exit_code == 2
    assert message in " ".join(result.output.split())


def test_diff_compares_grading_without_and_with_two_judges(two_runs, tmp_path):
    results = tmp_path / "results"
    grade(two_runs, results)
    grade(two_runs, results, command_judge(results, tmp_path / "a.log"))
    other = Judge(CommandJudge(judge_cmd(tmp_path / "b.log", "misquote"), name="strict-b"),
                  JudgmentCache(str(results)))
    grade(two_runs, results, other)
    ids = set(connect(str(results)).sql("select distinct grader_id from runs").pl()["grader_id"])
    assert ids == {DEFAULT_GRADER_ID, JUDGED,
                   judged_grader_id(DEFAULT_GRADER_ID, "strict-b")}
    # each judge has its own cache: the second judge asked all of its questions
    assert len(sent(tmp_path / "b.log")[1]) == 4
    out = tmp_path / "flips.csv"
    result = CliRunner().invoke(app, ["diff", str(results), "--base", DEFAULT_GRADER_ID,
                                      "--head", JUDGED, "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "clauses flipped             1 of 10 paired" in result.output
    flips = pl.read_csv(out).filter(pl.col("flipped"))
    assert flips.select("base_verdict", "head_verdict").rows() \
        == [("satisfied", "partially_satisfied")]
    result = CliRunner().invoke(app, ["diff", str(results), "--base", JUDGED, "--head",
                                      judged_grader_id(DEFAULT_GRADER_ID, "strict-b")])
    # (the strict judge's misquoted passes leave their questions open, which the first
    # judge's passes settle, both satisfied; its failures are the first judge's)
    assert result.exit_code == 0 and "clauses flipped             0 of 10 paired" \
        in result.output


# -- small parts --------------------------------------------------------------------------

def test_judged_grader_ids_are_distinct_and_stable():
    assert judged_grader_id("prose.contract.grader/v4", "gpt-4o-mini") \
        == "prose.contract.judged-by-gpt-4o-mini.grader/v4"
    once = judged_grader_id("prose.contract.grader/v1", "a")
    assert judged_grader_id(once, "a") == once
    assert judged_grader_id("prose.contract.grader/v1", "b") != once
    with pytest.raises(JudgeConfigError):
        judged_grader_id("prose.contract.grader/v1", "Not OK")


def test_judge_names_from_commands_and_models():
    assert name_from_command(["python3", "-u", "tools/My Judge.py", "--x"]) == "my-judge"
    assert name_from_command(["/usr/local/bin/judge-gpt"]) == "judge-gpt"
    # two judges of one package or one launcher are two names (were `judgepkg` and `run`)
    assert name_from_command(["uv", "run", "judge.py"]) == "judge"
    assert name_from_command(["python3", "-m", "judgepkg.strict"]) == "strict"
    assert name_from_command(["python3", "-m", "judgepkg.lenient"]) == "lenient"
    assert name_from_command(["env", "FOO=1", "npx", "tsx", "strict.ts"]) == "strict"
    # a launcher's duration or an option's value is no name (were `60`, `10`, `ignore`,
    # `openai`: two judges started alike shared one name, one cache and one grader id)
    assert name_from_command(["timeout", "60", "python3", "strict.py"]) == "strict"
    assert name_from_command(["timeout", "-k", "5", "1.5m", "python3", "strict.py"]) == "strict"
    assert name_from_command(["nice", "-n", "10", "python3", "lenient.py"]) == "lenient"
    assert name_from_command(["python3", "-W", "ignore", "strict.py"]) == "strict"
    assert name_from_command(["uv", "run", "--with", "openai", "lenient.py"]) == "lenient"
    # an option of one launcher is a flag of another: `python3 -s` takes no value
    assert name_from_command(["python3", "-s", "judges/strict.py"]) == "strict"
    assert name_from_command(["env", "-u", "HOME", "python3", "-s", "lenient.py"]) == "lenient"
    assert slug("meta-llama/Llama-3.1-8B-Instruct") == "meta-llama-llama-3.1-8b-instruct"
    assert slug("..//") == "judge"


def test_answers_are_read_strictly():
    ok = answer_from({"outcome": "Passed", "confidence": 87.6, "evidence": " x ",
                      "rationale": None})
    assert (ok.outcome, ok.confidence, ok.evidence, ok.rationale) == ("passed", 88, "x", "")
    for bad in ({"outcome": "maybe", "confidence": 5}, {"outcome": "passed", "confidence": True},
                {"outcome": "passed", "confidence": -1}, {"outcome": "failed"},
                {"outcome": "failed", "confidence": 9, "evidence": ["a"]}, ["passed"]):
        with pytest.raises(MalformedAnswer):
            answer_from(bad)
    fenced = 'Sure.\n```json\n{"outcome": "failed", "confidence": 70} trailing'
    assert answer_from_text(fenced).outcome == "failed"
    with pytest.raises(MalformedAnswer):
        answer_from_text('{"outcome": "failed", "confidence": ')


def test_make_judge_without_a_judge_is_none(tmp_path):
    assert make_judge(str(tmp_path)) is None


def test_an_interrupt_sends_no_further_judge_call(two_runs, tmp_path):
    # Ctrl-C while the judge was asked ran every queued call before the grade stopped
    # (minutes of a paid API); now the calls not yet sent are dropped
    results, log = tmp_path / "results", tmp_path / "judge.log"
    judge = command_judge(results, log, batch_size=1, concurrency=1)

    def progress(stage: str, done: int, total: int | None) -> None:
        if stage == "asking the judge" and done >= 1:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        grade(two_runs, results, judge, progress=progress)
    processes, _ = sent(log)
    assert 1 <= len(processes) <= 2 < 4  # 4 questions: one call each, at most one more begun


def _echo_judge(body: str) -> CommandJudge:
    """A judge command of a few lines: it reads the requests and prints `body`'s answers,
    written for each request `r` (a Python expression list of dicts)."""
    script = ("import json, sys\nfor line in sys.stdin:\n    r = json.loads(line)\n"
              f"    for a in {body}:\n        print(json.dumps(a))\n")
    return CommandJudge([sys.executable, "-c", script], name="echo")


def test_a_judge_answering_one_request_twice_differently_gives_no_answer_to_it():
    # the first line won, so the verdict depended on the order the judge printed its lines
    requests = [{"id": "q1", "question": "?"}, {"id": "q2", "question": "?"}]
    twice = _echo_judge('[{"id": r["id"], "outcome": "passed", "confidence": 90}, '
                        '{"id": r["id"], "outcome": "failed" if r["id"] == "q1" else "passed",'
                        ' "confidence": 80}]').ask(requests, timeout=30)
    assert twice["q1"] == Failure("judge answered this request twice, differently: passed, "
                                  "then failed")
    assert (twice["q2"].outcome, twice["q2"].confidence) == ("passed", 90)  # the same: first


def test_a_judge_answering_only_requests_it_was_not_asked_is_told_so():
    # (was "judge answered malformed JSON", each line being valid JSON)
    found = _echo_judge('[{"id": "other-" + r["id"], "outcome": "passed", "confidence": 90}]'
                        ).ask([{"id": "q1", "question": "?"}], timeout=30)
    assert found["q1"].reason.startswith(
        "judge answered only requests it was not asked (1 line(s), first: no known request "
        "id:"), found
