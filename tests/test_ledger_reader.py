"""moltzap ledgers: discovery, every validation rule of SPEC 4.1 and every grading refusal.

Each test starts from a valid ledger written by the builder (which computes sequences and
digests) and breaks exactly one rule; the ledger must be refused with that rule's reason.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

import pipeline.sources.ledger as ledger_reader
from pipeline.checks.ledger import LedgerGrader, valid_messages
from pipeline.grade import default_ledger_graders
from pipeline.sources.bucket import Bucket, group_runs
from pipeline.sources.ledger import read_ledger
from pipeline.sources.ledger_builder import (
    LedgerBuilder,
    evaluation,
    file,
    message_received,
    response_selected,
    runtime_ready,
    sha256,
    text,
)
from pipeline.tables import REFUSAL_REASONS

GRADERS = default_ledger_graders()
RUN = "run-20261112-sender"


def sender_ledger(**kwargs) -> LedgerBuilder:
    return evaluation(RUN, "evals.sender-name/v1", ["eval-sender"], **kwargs)


def read(root: Path, builder: LedgerBuilder, artifacts=None, omit=(), graders=GRADERS):
    builder.write(root / "evals" / RUN, artifacts, omit=omit)
    bucket = Bucket(str(root))
    refs = group_runs(bucket, bucket.walk())
    assert [r.source for r in refs] == ["ledger"]
    return read_ledger(bucket, refs[0], graders)


def refused(rows) -> tuple[str, str]:
    assert [r["status"] for r in rows.runs] == ["refused"]
    assert not rows.bindings and not rows.clauses and not rows.services
    (row,) = rows.refusals
    assert row["reason"] in REFUSAL_REASONS and row["detail"]
    return row["reason"], row["detail"]


# -- discovery --------------------------------------------------------------------------------

def test_ledgers_are_found_beside_run_folders_at_any_depth(tmp_path):
    sender_ledger().write(tmp_path / "a" / "b" / "c" / "ledger-one")
    sender_ledger().write(tmp_path / "top")
    # a ledger folder named like a run folder is still a ledger
    sender_ledger().write(tmp_path / "x" / "20261112-084000-ledger")
    run = tmp_path / "project" / ".prose" / "runs" / "20261112-090000-abc"
    (run / "bindings" / "s").mkdir(parents=True)
    (run / "program.md").write_text("# p\n")
    # a ledger inside a run folder is part of that run, not a run of its own
    sender_ledger().write(run / "workspace" / "eval")
    # manifest.json alone does not make a ledger
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "manifest.json").write_text("{}")
    # an unsealed ledger (no completion.json) is still found, so it can be refused
    sender_ledger().write(tmp_path / "partial", omit=["completion.json"])

    bucket = Bucket(str(tmp_path))
    refs = {os.path.relpath(r.path, tmp_path): r for r in group_runs(bucket, bucket.walk())}
    assert {k: r.source for k, r in refs.items()} == {
        "a/b/c/ledger-one": "ledger", "top": "ledger", "x/20261112-084000-ledger": "ledger",
        "partial": "ledger", "project/.prose/runs/20261112-090000-abc": "prose",
    }
    assert set(refs["top"].files) == {"manifest.json", "records.ndjson", "completion.json"}
    assert "workspace/eval/records.ndjson" in refs[
        "project/.prose/runs/20261112-090000-abc"].files


def test_a_stray_marker_above_runs_names_them_in_its_refusal(tmp_path):
    # A completion.json copied above a program's runs makes a ledger of the folder (the
    # outermost wins), and its refusal said only that manifest.json was missing: the runs
    # below, no runs of their own meanwhile, went unnamed.
    for n in range(4):
        run = tmp_path / "support-bot" / f"20261112-09000{n}-abc"
        run.mkdir(parents=True)
        (run / "program.md").write_text("# p\n")
    (tmp_path / "support-bot" / "completion.json").write_text("{}")
    bucket = Bucket(str(tmp_path))
    (ref,) = group_runs(bucket, bucket.walk())
    reason, detail = refused(read_ledger(bucket, ref, GRADERS))
    assert reason == "ledger-unreadable-artifact" and "manifest.json is missing" in detail
    assert ("also holds 4 folder(s) named like runs (20261112-090000-abc, 20261112-090001-abc, "
            "20261112-090002-abc and 1 more), not graded while its completion.json makes it a "
            "ledger") in detail
    # a ledger refused with nothing below it says nothing of runs
    _, detail = refused(read(tmp_path / "other", sender_ledger(), omit=["completion.json"]))
    assert "named like runs" not in detail


def test_a_valid_ledger_flattens_into_the_tables(tmp_path):
    rows = read(tmp_path, evaluation(RUN, "evals.two-turn-recall/v1", ["ok", "BANANA7"]))
    (run,) = rows.runs
    assert run["status"] == "graded" and not rows.refusals
    assert (run["run_id"], run["source"], run["layout"], run["program"], run["completed"]) == (
        RUN, "ledger", "moltzap-ledger", "evals.two-turn-recall/v1", True)
    assert run["ended_at"].endswith("Z")
    (svc,) = rows.services
    assert (svc["service"], svc["kind"], svc["contract_source"]) == (
        "target-agent", "target", "moltzap.two-turn-recall.grader/v1")
    assert [(c["kind"], c["position"], c["text"]) for c in rows.clauses] == [
        ("ledger_check", 0, "non-empty messages"), ("ledger_check", 1, "exactly BANANA7")]
    assert [b["name"] for b in rows.bindings] == ["response-1", "response-2"]
    assert [json.loads(b["text"]) for b in rows.bindings] == [
        [{"type": "text", "text": "ok"}], [{"type": "text", "text": "BANANA7"}]]
    assert rows.bindings[1]["uri"].endswith(f"records.ndjson#{RUN}:7")
    assert rows.bindings[1]["sha256"] == sha256(rows.bindings[1]["text"].encode())


# -- validation (SPEC 4.1), one rule each -----------------------------------------------------

def test_missing_completion_is_incomplete(tmp_path):
    reason, detail = refused(read(tmp_path, sender_ledger(), omit=["completion.json"]))
    assert reason == "ledger-incomplete" and "completion.json" in detail


@pytest.mark.parametrize("missing", ["manifest.json", "records.ndjson"])
def test_missing_artifact_is_unreadable(tmp_path, missing):
    reason, detail = refused(read(tmp_path, sender_ledger(), omit=[missing]))
    assert reason == "ledger-unreadable-artifact" and missing in detail


def test_artifact_over_the_read_cap_is_unreadable(tmp_path, monkeypatch):
    monkeypatch.setattr(ledger_reader, "LEDGER_CAP", 256)
    reason, detail = refused(read(tmp_path, sender_ledger()))
    assert reason == "ledger-unreadable-artifact" and "larger than" in detail


def test_artifact_that_vanishes_before_reading_is_unreadable(tmp_path):
    folder = sender_ledger().write(tmp_path / "evals" / RUN)
    bucket = Bucket(str(tmp_path))
    refs = group_runs(bucket, bucket.walk())
    (folder / "records.ndjson").unlink()
    reason, detail = refused(read_ledger(bucket, refs[0], GRADERS))
    assert reason == "ledger-unreadable-artifact" and "records.ndjson" in detail


def test_symlinked_artifact_leaving_the_root_is_refused_unread(tmp_path):
    outside = tmp_path / "outside.ndjson"
    root = tmp_path / "root"
    builder = sender_ledger()
    outside.write_bytes(builder.artifacts()["records.ndjson"])
    folder = builder.write(root / "evals" / RUN, omit=["records.ndjson"])
    os.symlink(outside, folder / "records.ndjson")
    bucket = Bucket(str(root))
    reason, _ = refused(read_ledger(bucket, group_runs(bucket, bucket.walk())[0], GRADERS))
    assert reason == "unsafe-path"


@pytest.mark.parametrize("broken", ["manifest.json", "completion.json", "record", "utf8",
                                    "nested"])
def test_invalid_json_is_refused(tmp_path, broken):
    builder = sender_ledger()
    if broken == "nested":  # (before: internal-error, Python's RecursionError)
        files = builder.artifacts(manifest=b'{"metadata": ' + b"[" * 100_000 + b"]" * 100_000
                                  + b"}")
    elif broken == "manifest.json":
        files = builder.artifacts(manifest=b'{"ledgerFormatVersion": 1,')
    elif broken == "record":
        records = builder.envelopes()
        files = builder.artifacts(records=[records[0], '{"runId": oops}', *records[1:]])
    elif broken == "utf8":
        files = builder.artifacts(manifest=b'{"runId": "\xff"}')
    else:
        files = builder.artifacts()
        files["completion.json"] = b"{recordCount: 3}"
    reason, detail = refused(read(tmp_path, builder, files))
    assert reason == "ledger-invalid-json"
    assert {"record": "line 2", "utf8": "UTF-8", "nested": "too deeply"}.get(
        broken, broken) in detail


def test_a_number_beyond_a_double_is_invalid_json(tmp_path):
    # 1e400 is read as infinity, and was written back as `Infinity` for the tables, which is
    # no JSON: the ledger was refused internal-error with a polars traceback
    builder = sender_ledger()
    records = [json.dumps(envelope) for envelope in builder.envelopes()]
    at = next(i for i, line in enumerate(records) if '"parts"' in line)
    records[at] = records[at].replace('"parts": [', '"parts": [{"type": "image", "url": '
                                      '"http://i/x.png", "width": 1e400}, ', 1)
    reason, detail = refused(read(tmp_path, builder, builder.artifacts(records=records)))
    assert reason == "ledger-invalid-json"
    assert f"line {at + 1}" in detail and "1e400 is beyond the range of a double" in detail


@pytest.mark.parametrize("case", ["unsealed", "digest", "manifest broken", "schema failed"])
def test_a_ledger_refused_before_its_manifest_is_checked_is_named_by_it(tmp_path, case):
    # Its folder's name and no program were recorded for a ledger refused before its
    # manifest's turn (never sealed, a digest that does not match), where the README names a
    # ledger by its manifest's runId and definitionId, as its grades are: a query by run id
    # missed the refusal, and trends counted it under no program.
    builder = sender_ledger()
    files, omit = builder.artifacts(), []
    if case == "unsealed":
        omit = ["completion.json"]
    elif case == "digest":
        files["records.ndjson"] += b" "
    elif case == "schema failed":  # (v19: the folder's name, a schema problem elsewhere)
        manifest = json.loads(files["manifest.json"])
        files["manifest.json"] = json.dumps({**manifest, "catalogTags": ["z", "a"]}).encode()
    else:  # nothing to name it by: its folder's name
        files["manifest.json"] = b'{"runId": "run-elsewhere", '
    builder.write(tmp_path / "evals" / "ledger-0007", files, omit=omit)
    bucket = Bucket(str(tmp_path))
    rows = read_ledger(bucket, group_runs(bucket, bucket.walk())[0], GRADERS)
    reason, _ = refused(rows)
    assert reason == {"unsealed": "ledger-incomplete", "digest": "ledger-digest-mismatch",
                      "manifest broken": "ledger-digest-mismatch",
                      "schema failed": "ledger-digest-mismatch"}[case]
    named = (("ledger-0007", None) if case == "manifest broken"
             else (RUN, "evals.sender-name/v1"))
    assert (rows.runs[0]["run_id"], rows.runs[0]["program"]) == named
    assert rows.refusals[0]["run_id"] == named[0]


def test_replies_json_allows_are_read_whatever_they_carry(tmp_path):
    # a lone surrogate escape is valid JSON but no Unicode text, and a file part may carry a
    # `text` field of any JSON: both were internal-error (a traceback), and a reply that
    # leaked a secret beside them was never graded
    builder = evaluation(RUN, "evals.password-guard/v1", [[
        text("no \ud800 way, hunter2"),
        {**file("https://x/report.pdf", "report.pdf"), "text": {"extracted": True}}]])
    lines = [json.dumps(envelope) for envelope in builder.envelopes()]  # escapes kept as such
    rows = read(tmp_path, builder, builder.artifacts(records=lines))
    assert graded(rows)
    (reply,) = rows.bindings
    assert json.loads(reply["text"]) == [
        {"type": "text", "text": "no \ufffd way, hunter2"},
        {"type": "file", "url": "https://x/report.pdf", "name": "report.pdf"}]
    assert reply["decode_errors"] is True
    assert reply["sha256"] == sha256(reply["text"].encode())


@pytest.mark.parametrize("blank", ["", "   "])
def test_empty_line_is_invalid(tmp_path, blank):
    builder = sender_ledger()
    records = builder.envelopes()
    reason, detail = refused(read(tmp_path, builder, builder.artifacts(
        records=[*records[:3], blank, *records[3:]])))
    assert reason == "ledger-empty-line" and "line 4" in detail


def _edited(builder: LedgerBuilder, line: int, **changes) -> list[dict]:
    records = builder.envelopes()
    records[line] = {**records[line], **changes}
    return records


SCHEMA_BREAKS = {
    "format version": lambda b: b.artifacts(manifest={**b.manifest, "ledgerFormatVersion": 2}),
    "definition id": lambda b: b.artifacts(manifest={**b.manifest, "definitionId": "no-version"}),
    "unsorted tags": lambda b: b.artifacts(manifest={**b.manifest, "catalogTags": ["z", "a"]}),
    "repeated tags": lambda b: b.artifacts(manifest={**b.manifest, "catalogTags": ["a", "a"]}),
    "no createdAt": lambda b: b.artifacts(manifest={
        k: v for k, v in b.manifest.items() if k != "createdAt"}),
    "provenance": lambda b: b.artifacts(manifest={**b.manifest, "provenance": "sim"}),
    "manifest array": lambda b: b.artifacts(manifest=[b.manifest]),
    "record count type": lambda b: b.artifacts(completion={"recordCount": "12"}),
    "digest case": lambda b: b.artifacts(completion={"artifacts": {
        "manifest": "A" * 64, "records": "b" * 64}}),
    "elapsed type": lambda b: b.artifacts(records=_edited(b, 2, elapsedNanos=1000)),
    "observedAt": lambda b: b.artifacts(records=_edited(b, 2, observedAt="yesterday")),
    # a whole number, but no time a clock can tell (before: internal-error, a traceback)
    "observedAt range": lambda b: b.artifacts(records=_edited(b, 2, observedAt=10**16)),
    # str.isdigit() takes these; they are no digits of a JSON producer
    "elapsed digits": lambda b: b.artifacts(records=_edited(b, 2, elapsedNanos="\u00b2\u00b3")),
    "elapsed arabic": lambda b: b.artifacts(records=_edited(b, 2, elapsedNanos="\u0661\u0662")),
    # `$` matched before a final line break
    "definition id line break": lambda b: b.artifacts(
        manifest={**b.manifest, "definitionId": b.manifest["definitionId"] + "\n"}),
    "event id form": lambda b: b.artifacts(records=_edited(b, 2, eventId="e-2")),
    "event type": lambda b: b.artifacts(records=_edited(b, 2, event="program-succeeded")),
    "correlation": lambda b: b.artifacts(records=_edited(b, 2, correlationId=7)),
    "envelope array": lambda b: b.artifacts(records=[*b.envelopes()[:2], "[1, 2]"]),
}


@pytest.mark.parametrize("case", list(SCHEMA_BREAKS))
def test_schema_mismatch_is_refused(tmp_path, case):
    builder = sender_ledger()
    reason, _ = refused(read(tmp_path, builder, SCHEMA_BREAKS[case](builder)))
    assert reason == "ledger-schema-mismatch"


def test_optional_envelope_ids_are_accepted(tmp_path):
    builder = sender_ledger()
    records = _edited(builder, 3, causationId=f"{RUN}:2", correlationId="corr-1")
    assert graded(read(tmp_path, builder, builder.artifacts(records=records)))


def graded(rows) -> bool:
    return [r["status"] for r in rows.runs] == ["graded"] and not rows.refusals


@pytest.mark.parametrize("where", ["completion", "record"])
def test_run_id_mismatch_is_refused(tmp_path, where):
    builder = sender_ledger()
    if where == "completion":
        files = builder.artifacts(completion={"runId": "run-other"})
    else:
        seq = 4
        files = builder.artifacts(records=_edited(builder, seq, runId="run-other",
                                                  eventId=f"run-other:{seq}"))
    reason, detail = refused(read(tmp_path, builder, files))
    assert reason == "ledger-run-id-mismatch" and "run-other" in detail


@pytest.mark.parametrize("artifact", ["manifest.json", "records.ndjson"])
def test_digest_mismatch_is_refused(tmp_path, artifact):
    builder = sender_ledger()
    files = builder.artifacts()
    files[artifact] = files[artifact] + b" "  # still valid, but not the sealed bytes
    reason, detail = refused(read(tmp_path, builder, files))
    assert reason == "ledger-digest-mismatch" and artifact in detail
    assert sha256(files[artifact]) in detail


UNDECODABLE = {
    "tag form": {"_tag": "moltzap.Program Succeeded/v1"},
    "no tag": {"agentName": "target-agent"},
    "missing field": {"_tag": "moltzap.agent-runtime-ready/v1", "agentName": "target-agent",
                      "runtime": "openclaw"},
    "empty field": {"_tag": "moltzap.evaluation-response-selected/v1", "scenarioId": "",
                    "endpointName": "e", "endpointId": "e", "targetName": "t",
                    "targetId": "t", "taskId": "k", "messageId": "m"},
    "part type": message_received("e", "k", "c", "m", "t", [{"type": "video", "url": "u"}]),
    "part text": message_received("e", "k", "c", "m", "t", [{"type": "text", "text": 7}]),
    "file part": message_received("e", "k", "c", "m", "t", [{"type": "file", "url": "u"}]),
    "parts": {**message_received("e", "k", "c", "m", "t", []), "parts": "hello"},
    "tag line break": {"_tag": "moltzap.program-succeeded/v1\n"},
}


@pytest.mark.parametrize("case", list(UNDECODABLE))
def test_event_that_does_not_decode_is_refused(tmp_path, case):
    builder = sender_ledger()
    builder.events.insert(3, UNDECODABLE[case])
    reason, detail = refused(read(tmp_path, builder))
    assert reason == "ledger-undecodable-event" and "line 4" in detail


@pytest.mark.parametrize(("case", "said"), [
    # a field written as another kind of value is named so (it said "has no messageId",
    # sending its reader looking for a field that is there)
    ({"messageId": 42}, "messageId is 42 (a number), not a non-empty string"),
    ({"messageId": None}, "messageId is null, not a non-empty string"),
    ({"messageId": ""}, "messageId is empty, not a non-empty string"),
    ({"messageId": ["m"]}, "messageId is ['m'] (a list), not a non-empty string"),
])
def test_an_events_field_of_another_kind_is_named_so(tmp_path, case, said):
    builder = sender_ledger()
    builder.events.insert(3, {**message_received("e", "k", "c", "m", "t", []), **case})
    reason, detail = refused(read(tmp_path, builder))
    assert reason == "ledger-undecodable-event"
    assert detail.endswith(f"moltzap.endpoint-message-received/v1: {said}"), detail


def test_an_envelope_producer_of_another_kind_is_named_so(tmp_path):
    builder = sender_ledger()
    reason, detail = refused(read(tmp_path, builder,
                                  builder.artifacts(records=_edited(builder, 1, producer=7))))
    assert reason == "ledger-schema-mismatch"
    assert detail.endswith("producer is 7 (a number), not a non-empty string or an object")


def test_unknown_well_formed_events_are_kept(tmp_path):
    builder = sender_ledger()
    builder.events.insert(3, {"_tag": "moltzap.router-started/v2", "anything": [1, 2]})
    assert graded(read(tmp_path, builder))


def test_duplicate_event_id_is_refused(tmp_path):
    builder = sender_ledger()
    reason, detail = refused(read(tmp_path, builder, builder.artifacts(
        records=_edited(builder, 5, logicalSequence=4, eventId=f"{RUN}:4"))))
    assert reason == "ledger-duplicate-event-id" and f"{RUN}:4" in detail


def test_sequence_gap_is_refused(tmp_path):
    builder = sender_ledger()
    records = builder.envelopes()
    del records[3]  # the line after the hole carries sequence 4 at index 3
    reason, detail = refused(read(tmp_path, builder, builder.artifacts(records=records)))
    assert reason == "ledger-sequence-gap" and "expected 3" in detail


def test_record_count_mismatch_is_refused(tmp_path):
    builder = sender_ledger()
    n = len(builder.events)
    reason, detail = refused(read(tmp_path, builder,
                                  builder.artifacts(completion={"recordCount": n + 1})))
    assert reason == "ledger-record-count-mismatch" and str(n) in detail


def test_a_record_cut_from_the_end_is_a_count_mismatch(tmp_path):
    # sealed over the cut file (digests agree), while the count still claims every record
    builder = sender_ledger()
    cut = builder.artifacts(records=builder.envelopes()[:-1],
                            completion={"recordCount": len(builder.events)})
    reason, _ = refused(read(tmp_path, builder, cut))
    assert reason == "ledger-record-count-mismatch"


# -- grading refusals (SPEC 4) ----------------------------------------------------------------

def test_no_grader_for_the_scenario_is_refused(tmp_path):
    rows = read(tmp_path, evaluation(RUN, "evals.unknown/v1", ["hi"]))
    reason, detail = refused(rows)
    assert reason == "ledger-no-grader"
    assert "evals.unknown/v1" in detail and "--ledger-grader" in detail
    assert rows.runs[0]["run_id"] == RUN and rows.runs[0]["program"] == "evals.unknown/v1"


def test_grader_matched_by_selected_scenario_when_the_definition_differs(tmp_path):
    builder = evaluation(RUN, "evals.sender-name/v1", ["eval-sender"],
                         definition_id="evals.suite/v3")
    rows = read(tmp_path, builder)
    assert rows.services[0]["contract_source"] == "moltzap.sender-name.grader/v1"


def test_two_matching_graders_are_ambiguous(tmp_path):
    builder = evaluation(RUN, "evals.sender-name/v1", ["eval-sender"],
                         definition_id="evals.suite/v3")
    graders = (*GRADERS, LedgerGrader("suite.grader/v1", "evals.suite/v3", "eval-sender",
                                      "target-agent", 1, [valid_messages()]))
    reason, detail = refused(read(tmp_path, builder, graders=graders))
    assert reason == "ledger-grader-ambiguous" and "suite.grader/v1" in detail


def test_no_program_succeeded_event_is_refused(tmp_path):
    reason, _ = refused(read(tmp_path, sender_ledger(succeeded=False)))
    assert reason == "ledger-program-not-succeeded"


def test_target_never_ready_is_refused(tmp_path):
    reason, detail = refused(read(tmp_path, sender_ledger(target_ready=False)))
    assert reason == "ledger-target-not-ready" and "target-agent" in detail


@pytest.mark.parametrize("selection", [
    {}, {"endpointName": "observer", "endpointId": "agent-observer"},
    {"scenarioId": "evals.other/v1"}, {"targetId": "agent-impostor"}])
def test_selection_of_a_message_the_ledger_does_not_hold_is_refused(tmp_path, selection):
    # whichever endpoint, scenario or target made it, and whether or not the grader counts
    # it: a selection that names no delivery makes the evidence inconsistent (before, only
    # the selections the grader counted were resolved, and the others were graded past)
    builder = sender_ledger()
    chosen = builder.events[-2]  # the selection
    builder.events.insert(-1, {**chosen, "messageId": "msg-9-reply", **selection})
    reason, detail = refused(read(tmp_path, builder))
    assert reason == "ledger-selection-unmatched" and "msg-9-reply" in detail


def test_selecting_a_message_the_target_did_not_send_is_unmatched(tmp_path):
    # msg-1-prompt exists, but it was sent by the endpoint, delivered at the target
    builder = sender_ledger()
    builder.events[-2] = {**builder.events[-2], "messageId": "msg-1-prompt"}
    reason, _ = refused(read(tmp_path, builder))
    assert reason == "ledger-selection-unmatched"


@pytest.mark.parametrize("selected", [[0], [], [0, 1, 1]])
def test_wrong_number_of_selected_responses_is_refused(tmp_path, selected):
    builder = evaluation(RUN, "evals.two-turn-recall/v1", ["ok", "BANANA7"], selected=selected)
    if selected.count(1) == 2:  # select the second reply twice
        builder.events.insert(-1, builder.events[-2])
    reason, detail = refused(read(tmp_path, builder))
    assert reason == "ledger-response-count-mismatch"
    assert f"{len(selected)} selected" in detail and "expects 2" in detail


def test_selections_for_other_endpoints_or_scenarios_do_not_count(tmp_path):
    builder = sender_ledger()
    sel = builder.events[-2]
    builder.events[-1:-1] = [
        {**sel, "endpointName": "observer"}, {**sel, "scenarioId": "evals.other/v1"}]
    rows = read(tmp_path, builder)
    assert [b["name"] for b in rows.bindings] == ["response-1"]


def test_a_selection_of_a_later_instance_of_the_target_is_named_in_the_refusal(tmp_path):
    # the target is the instance ready first; the detail said "0 selected response(s)" of a
    # ledger that holds a selection of the target's name, without saying why it did not count
    builder = sender_ledger()
    first = next(i for i, e in enumerate(builder.events) if e.get("agentName") == "target-agent")
    builder.events.insert(first, runtime_ready("target-agent", "agent-ready-first"))
    reason, detail = refused(read(tmp_path, builder))
    assert reason == "ledger-response-count-mismatch"
    assert detail.startswith("0 selected response(s) of 'target-agent'")
    later = builder.events[first + 1]["agentId"]
    assert detail.endswith(f"as the target is the instance ready first ('agent-ready-first'): "
                           f"1 selection(s) of another instance (line {len(builder.events) - 1} "
                           f"names {later!r})")


def test_earliest_delivery_wins_and_responses_follow_selection_order(tmp_path):
    builder = evaluation(RUN, "evals.two-turn-recall/v1", ["BANANA7", "noted"], selected=[])
    target = next(e for e in builder.events if e.get("agentName") == "target-agent")["agentId"]
    endpoint = next(e for e in builder.events if e.get("agentName") == "eval-sender")["agentId"]
    first = next(e for e in builder.events if e.get("messageId") == "msg-1-reply")
    # a later delivery of the same identity with other text must not replace the first
    builder.events.insert(-1, {**first, "parts": [text("a re-delivery")]})
    task = first["taskId"]
    for message in ("msg-2-reply", "msg-1-reply"):  # selected in reverse order
        builder.events.insert(-1, response_selected("evals.two-turn-recall/v1", "eval-sender",
                                                    endpoint, "target-agent", target, task,
                                                    message))
    rows = read(tmp_path, builder)
    assert [json.loads(b["text"])[0]["text"] for b in rows.bindings] == ["noted", "BANANA7"]


def test_refusal_order_reports_the_first_broken_rule(tmp_path):
    # digests are checked before content: a tampered, also-invalid manifest is a digest fault
    builder = sender_ledger()
    files = builder.artifacts()
    files["manifest.json"] = b"not json"
    reason, _ = refused(read(tmp_path, builder, files))
    assert reason == "ledger-digest-mismatch"


def test_a_reader_bug_refuses_the_ledger_instead_of_dropping_it(tmp_path, monkeypatch):
    def broken(event):
        raise RuntimeError("decoder exploded")

    monkeypatch.setattr(ledger_reader, "_event_problem", broken)
    reason, detail = refused(read(tmp_path, sender_ledger()))
    assert reason == "internal-error" and "decoder exploded" in detail
