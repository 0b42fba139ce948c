"""Read one moltzap ledger folder, validate it (SPEC 4.1), resolve its evidence, flatten it.

A ledger is `manifest.json`, `records.ndjson` (one JSON envelope per line) and
`completion.json` (written last; seals the other two by sha256). The reader checks every rule
of the format, then resolves what the ledger's grader will read: the program succeeded, the
target agent became ready, and each selection names a delivery the ledger holds. Any failure
refuses the ledger with a reason from the closed set (tables.REFUSAL_REASONS); a refusal is
never a verdict. A valid ledger becomes rows of the same tables as OpenProse runs:
  runs      source `ledger`, layout `moltzap-ledger`, program = the manifest's definitionId
  services  one row for the target agent; contract_source = the ledger grader's id
  clauses   one `ledger_check` row per check of the grader, in order
  bindings  one row per selected response (`response-1`, ...), text = its parts as JSON
The checks themselves run later, vectorized (pipeline/checks/ledger.py).
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import traceback
from dataclasses import dataclass
from datetime import UTC, datetime

from ..checks.ledger import LEDGER_CLAUSE_KIND, LEDGER_SERVICE_KIND, LedgerGrader
from ..names import first_few
from .bucket import LEDGER_MARKERS, Bucket, RunRef, a_folder, not_a_file, runs_held
from .outage import is_outage, unavailable
from .prose import Refusal, RunRows, clause_id

# A ledger is read whole (digests need every byte); a larger one is refused. Its records
# take about nine times their size as Python objects: a 206 MiB one held 1.8 GiB a worker.
LEDGER_CAP = 32 << 20
FORMAT_VERSION = 1
# (`\Z`, not `$`: `$` also matches before a final line break)
DEFINITION_ID = re.compile(r"^[^\s/]+/v[1-9][0-9]*\Z")
SHA256_HEX = re.compile(r"^[0-9a-f]{64}\Z")
EVENT_TAG = re.compile(r"^moltzap\.[a-z0-9]+(?:-[a-z0-9]+)*/v[1-9][0-9]*\Z")
DIGITS = re.compile(r"[0-9]+\Z")  # ASCII only: str.isdigit() also takes "²" and "١"
_SURROGATE = re.compile("[\ud800-\udfff]")
LAST_MS = 253_402_300_799_999  # the last millisecond of the year 9999, since 1970

PROGRAM_SUCCEEDED = "moltzap.program-succeeded/v1"
RUNTIME_READY = "moltzap.agent-runtime-ready/v1"
MESSAGE_RECEIVED = "moltzap.endpoint-message-received/v1"
RESPONSE_SELECTED = "moltzap.evaluation-response-selected/v1"
# Required non-empty string fields of the events grading reads; other well-formed tags pass.
EVENT_FIELDS = {
    PROGRAM_SUCCEEDED: (),
    RUNTIME_READY: ("agentName", "agentId", "runtime"),
    MESSAGE_RECEIVED: ("endpointId", "taskId", "conversationId", "messageId", "senderId"),
    RESPONSE_SELECTED: ("scenarioId", "endpointName", "endpointId", "targetName", "targetId",
                        "taskId", "messageId"),
}


@dataclass(frozen=True)
class Record:
    line: int  # 1-based line of records.ndjson
    envelope: dict

    @property
    def event(self) -> dict:
        return self.envelope["event"]

    @property
    def tag(self) -> str:
        return self.event["_tag"]


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def read_ledger(bucket: Bucket, ref: RunRef, graders: tuple[LedgerGrader, ...],
                now: str | None = None) -> RunRows:
    """Flatten one ledger folder. Returns rows of a graded ledger, or one refusal row.

    Refuses (closed set): unsafe-path, the ledger-* validation reasons, ledger-no-grader,
    ledger-grader-ambiguous and the grading refusals of SPEC 4; any unexpected exception
    becomes internal-error with a short traceback.
    """
    run = {
        "run_id": ref.run_id, "source": "ledger", "layout": "moltzap-ledger", "run_uri": ref.uri,
        "program": None, "completed": None, "ended_at": None, "fingerprint": ref.fingerprint,
        "discovered_at": now or _now(), "file_count": len(ref.files),
        "total_bytes": sum(f.size for f in ref.files.values()), "status": "refused",
    }
    try:
        rows = _read(bucket, ref, run, graders)
        run["status"] = "graded"
        rows.runs.append(run)
        return rows
    except Refusal as refusal:
        if is_outage(refusal):  # the store did not answer: no fault of the ledger's (as runs)
            raise unavailable(refusal.__cause__ or refusal, f"reading {ref.uri}") from refusal
        reason, detail = refusal.reason, refusal.detail + _runs_held(ref)
        run["fingerprint"] = refusal.fingerprint(run["fingerprint"])
    except Exception as exc:  # a bug or an unforeseen input must refuse, never drop, the ledger
        if is_outage(exc):
            raise unavailable(exc, f"reading {ref.uri}") from exc
        reason = "internal-error"
        detail = "".join(traceback.format_exception(exc, limit=-3))[-1500:]
    return RunRows(runs=[run], refusals=[
        {"run_id": run["run_id"], "run_uri": ref.uri, "reason": reason, "detail": detail}])


def _runs_held(ref: RunRef) -> str:
    """What a refused ledger's detail adds when the folder holds folders named like runs: a
    stray marker (a `completion.json` copied above a program's runs) makes a ledger of the
    folder, and the runs below it are no runs of their own (the outermost wins): say so."""
    runs = runs_held(ref)
    if not runs:
        return ""
    markers = " and ".join(sorted(LEDGER_MARKERS & set(ref.files)))
    return (f"; this folder also holds {len(runs)} folder(s) named like runs "
            f"({first_few(runs)}), not graded while its {markers} makes it a ledger: if that "
            "is a stray copy, move it out and the runs are found")


def _read(bucket: Bucket, ref: RunRef, run: dict, graders) -> RunRows:
    files = ref.files
    for rel, info in sorted(files.items()):
        if info.link_target is not None and not bucket.inside(info.link_target):
            raise Refusal("unsafe-path", f"{rel} links outside the runs root")
    manifest_blob = _named_by_manifest(bucket, ref, run)
    if "completion.json" not in files:
        raise Refusal("ledger-incomplete", "no completion.json: the ledger was never sealed "
                      "(it is written last)" + a_folder(ref, "completion.json"))
    for name in ("manifest.json", "records.ndjson"):
        if name not in files:
            raise Refusal("ledger-unreadable-artifact", f"{name} is missing" + a_folder(ref, name))
    blobs = {name: manifest_blob if name == "manifest.json" and manifest_blob is not None
             else _read_artifact(bucket, ref, name)
             for name in ("completion.json", "manifest.json", "records.ndjson")}

    completion = _schema(_json(blobs["completion.json"], "completion.json"), "completion.json",
                         _completion_problem)
    for key, name in (("manifest", "manifest.json"), ("records", "records.ndjson")):
        actual = hashlib.sha256(blobs[name]).hexdigest()
        if actual != completion["artifacts"][key]:
            raise Refusal("ledger-digest-mismatch",
                          f"{name} has sha256 {actual}; completion.json seals "
                          f"{completion['artifacts'][key]}")
    manifest = _schema(_json(blobs["manifest.json"], "manifest.json"), "manifest.json",
                       _manifest_problem)
    run["run_id"], run["program"] = manifest["runId"], manifest["definitionId"]
    records = _records(blobs["records.ndjson"])

    run_id = manifest["runId"]
    if completion["runId"] != run_id:
        raise Refusal("ledger-run-id-mismatch", f"manifest.json names run {run_id!r}, "
                      f"completion.json names {completion['runId']!r}")
    for rec in records:
        if rec.envelope["runId"] != run_id:
            raise Refusal("ledger-run-id-mismatch", f"line {rec.line} names run "
                          f"{rec.envelope['runId']!r}; manifest.json names {run_id!r}")
    for rec in records:
        problem = _event_problem(rec.event)
        if problem:
            raise Refusal("ledger-undecodable-event", f"line {rec.line}: {problem}")
    seen: dict[str, int] = {}
    for rec in records:
        event_id = rec.envelope["eventId"]
        if event_id in seen:
            raise Refusal("ledger-duplicate-event-id", f"event id {event_id!r} on lines "
                          f"{seen[event_id]} and {rec.line}")
        seen[event_id] = rec.line
    for index, rec in enumerate(records):
        if rec.envelope["logicalSequence"] != index:
            raise Refusal("ledger-sequence-gap", f"line {rec.line} has logicalSequence "
                          f"{rec.envelope['logicalSequence']}; expected {index}")
    if completion["recordCount"] != len(records):
        raise Refusal("ledger-record-count-mismatch", f"completion.json counts "
                      f"{completion['recordCount']} records; records.ndjson holds {len(records)}")
    run["completed"] = True
    if records:
        last_ms = max(rec.envelope["observedAt"] for rec in records)
        run["ended_at"] = datetime.fromtimestamp(last_ms / 1000, UTC).strftime(
            "%Y-%m-%dT%H:%M:%SZ")

    grader = _grader_for(graders, manifest["definitionId"], records)
    responses = _responses(grader, records)
    return _rows(ref.uri, run["run_id"], grader, responses)


def _named_by_manifest(bucket: Bucket, ref: RunRef, run: dict) -> bytes | None:
    """The bytes of the ledger's manifest, read before anything is checked, so that a ledger
    refused before its manifest's turn (unsealed, a digest that does not match) is named by its
    `runId` and `definitionId`, as its grades are, not by its folder and no program; None when
    the manifest cannot be read (its refusal comes in its turn)."""
    if "manifest.json" not in ref.files:
        return None
    try:
        blob = _read_artifact(bucket, ref, "manifest.json")
        manifest = _json(blob, "manifest.json")
    except Refusal:
        return None
    # each name it holds in its form names the ledger, whatever else in it is amiss (v19
    # named a manifest failing its schema anywhere by the folder: its refusal and its later
    # grading went by two run ids)
    if isinstance(manifest, dict):
        if _text(manifest.get("runId")):
            run["run_id"] = manifest["runId"]
        if isinstance(manifest.get("definitionId"), str) and \
                DEFINITION_ID.match(manifest["definitionId"]):
            run["program"] = manifest["definitionId"]
    return blob


def _read_artifact(bucket: Bucket, ref: RunRef, name: str) -> bytes:
    if ref.files[name].link_target is not None:
        raise Refusal("unsafe-path", f"{name} is a symlink (never followed)")
    if ref.files[name].special:
        raise Refusal("ledger-unreadable-artifact", not_a_file(name, ref.files[name]))
    try:
        data, truncated = bucket.read(f"{ref.path}/{ref.key(name)}", LEDGER_CAP)
    except OSError as exc:
        raise Refusal("ledger-unreadable-artifact", f"{name}: {exc}") from exc
    if truncated:
        raise Refusal("ledger-unreadable-artifact",
                      f"{name} is larger than {LEDGER_CAP >> 20} MiB; it is not read")
    return data


def _no_constants(value: str):
    raise ValueError(f"{value} is not JSON")


def _finite(text: str) -> float:
    # A number beyond a double's range (1e400) would be read as infinity and written back as
    # `Infinity`, which is not JSON (no moltzap writer makes one: JSON.stringify writes null)
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"the number {text[:40]} is beyond the range of a double")
    return value


def _json(data: bytes, where: str):
    try:
        return json.loads(data.decode("utf-8"), parse_constant=_no_constants,
                          parse_float=_finite)
    except UnicodeDecodeError as exc:
        raise Refusal("ledger-invalid-json", f"{where} is not UTF-8: {exc.reason}") from exc
    except ValueError as exc:
        raise Refusal("ledger-invalid-json", f"{where}: {exc}") from exc
    except RecursionError as exc:
        raise Refusal("ledger-invalid-json", f"{where} nests arrays or objects too deeply "
                      "to be read") from exc


def _schema(value, where: str, problem_of):
    problem = problem_of(value)
    if problem:
        raise Refusal("ledger-schema-mismatch", f"{where}: {problem}")
    return value


def _records(data: bytes) -> list[Record]:
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()  # the newline that ends the last record, not an empty line
    records = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            raise Refusal("ledger-empty-line", f"records.ndjson line {number} is empty")
        envelope = _json(line, f"records.ndjson line {number}")
        _schema(envelope, f"records.ndjson line {number}", _envelope_problem)
        records.append(Record(number, envelope))
    return records


def _text(value) -> bool:
    return isinstance(value, str) and value != ""


def _whole(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _completion_problem(doc) -> str | None:
    if not isinstance(doc, dict):
        return "is not a JSON object"
    if doc.get("ledgerFormatVersion") != FORMAT_VERSION or isinstance(
            doc.get("ledgerFormatVersion"), bool):
        return f"ledgerFormatVersion is {doc.get('ledgerFormatVersion')!r}, not {FORMAT_VERSION}"
    if not _text(doc.get("runId")):
        return "runId is not a non-empty string"
    if not _whole(doc.get("recordCount")):
        return "recordCount is not a whole number"
    artifacts = doc.get("artifacts")
    if not isinstance(artifacts, dict):
        return "artifacts is not an object"
    for key in ("manifest", "records"):
        if not isinstance(artifacts.get(key), str) or not SHA256_HEX.match(artifacts[key]):
            return f"artifacts.{key} is not a lowercase sha256 hex digest"
    return None


def _manifest_problem(doc) -> str | None:
    if not isinstance(doc, dict):
        return "is not a JSON object"
    if doc.get("ledgerFormatVersion") != FORMAT_VERSION or isinstance(
            doc.get("ledgerFormatVersion"), bool):
        return f"ledgerFormatVersion is {doc.get('ledgerFormatVersion')!r}, not {FORMAT_VERSION}"
    if not isinstance(doc.get("definitionId"), str) or not DEFINITION_ID.match(
            doc["definitionId"]):
        return f"definitionId {doc.get('definitionId')!r} is not of the form 'name/v<N>'"
    if not _text(doc.get("runId")):
        return "runId is not a non-empty string"
    tags = doc.get("catalogTags")
    if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
        return "catalogTags is not a list of strings"
    if tags != sorted(set(tags)):
        return "catalogTags are not unique and sorted"
    if not _text(doc.get("createdAt")):
        return "createdAt is not a non-empty string"
    for key in ("provenance", "metadata"):
        if not isinstance(doc.get(key), dict):
            return f"{key} is not an object"
    return None


def _envelope_problem(env) -> str | None:
    if not isinstance(env, dict):
        return "is not a JSON object"
    if not _text(env.get("runId")):
        return "runId is not a non-empty string"
    if not _whole(env.get("logicalSequence")):
        return "logicalSequence is not a whole number"
    if env.get("eventId") != f"{env['runId']}:{env['logicalSequence']}":
        return f"eventId {env.get('eventId')!r} is not '{{runId}}:{{logicalSequence}}'"
    if not isinstance(env.get("elapsedNanos"), str) or not DIGITS.match(env["elapsedNanos"]):
        return "elapsedNanos is not a string of digits"
    if not _whole(env.get("observedAt")):
        return "observedAt is not a whole number of milliseconds"
    if env["observedAt"] > LAST_MS:
        return f"observedAt {env['observedAt']} ms is after the year 9999"
    if not (_text(env.get("producer")) or isinstance(env.get("producer"), dict)):
        return _unlike(env, "producer", "a non-empty string or an object")
    for key in ("causationId", "correlationId"):
        if env.get(key) is not None and not isinstance(env[key], str):
            return f"{key} is not a string"
    if not isinstance(env.get("event"), dict):
        return "event is not an object"
    return None


_JSON_KINDS = ((bool, "true or false"), (int, "a number"), (float, "a number"),
               (str, "a string"), (list, "a list"), (dict, "an object"))


def _unlike(doc: dict, key: str, wanted: str) -> str:
    """Why `doc[key]` is not what the schema wants: absent, null, or written as another kind
    of value ("messageId is 42 (a number), not a non-empty string"), so that a detail never
    sends its reader looking for a field that is there."""
    if key not in doc:
        return f"{key} is missing"
    value = doc[key]
    if value is None:
        return f"{key} is null, not {wanted}"
    if value == "":
        return f"{key} is empty, not {wanted}"
    kind = next(name for types, name in _JSON_KINDS if isinstance(value, types))
    shown = repr(value) if len(repr(value)) <= 40 else repr(value)[:37] + "..."
    return f"{key} is {shown} ({kind}), not {wanted}"


def _part_problem(part) -> str | None:
    if not isinstance(part, dict):
        return "a part is not an object"
    kind = part.get("type")
    if kind == "text":
        return None if isinstance(part.get("text"), str) else "a text part has no text"
    if kind == "image":
        if not _text(part.get("url")):
            return "an image part has no url"
        return None if part.get("altText") is None or isinstance(part["altText"], str) else (
            "an image part's altText is not a string")
    if kind == "file":
        if not (_text(part.get("url")) and _text(part.get("name"))):
            return "a file part needs a url and a name"
        if part.get("mimeType") is not None and not isinstance(part["mimeType"], str):
            return "a file part's mimeType is not a string"
        if part.get("size") is not None and not _whole(part["size"]):
            return "a file part's size is not a whole number"
        return None
    return f"unknown part type {kind!r}"


def _event_problem(event: dict) -> str | None:
    tag = event.get("_tag")
    if not isinstance(tag, str) or not EVENT_TAG.match(tag):
        return f"_tag {tag!r} is not of the form 'moltzap.<name>/v<N>'"
    for key in EVENT_FIELDS.get(tag, ()):
        if not _text(event.get(key)):
            return f"{tag}: {_unlike(event, key, 'a non-empty string')}"
    if tag == MESSAGE_RECEIVED:
        parts = event.get("parts")
        if not isinstance(parts, list):
            return f"{tag} has no parts list"
        for part in parts:
            problem = _part_problem(part)
            if problem:
                return f"{tag}: {problem}"
    return None


def _grader_for(graders, definition_id: str, records: list[Record]) -> LedgerGrader:
    """The one grader whose scenario is the definition or a scenario the ledger selected."""
    scenarios = [definition_id] + [r.event["scenarioId"] for r in records
                                   if r.tag == RESPONSE_SELECTED]
    matches = [g for g in graders if g.scenario_id in set(scenarios)]
    if not matches:
        named = ", ".join(dict.fromkeys(scenarios))
        raise Refusal("ledger-no-grader", f"no ledger grader for scenario {named}; pass one with "
                      "`--ledger-grader FILE` (a Python file defining `ledger_graders = [...]`)")
    if len(matches) > 1:
        raise Refusal("ledger-grader-ambiguous", "graders " + ", ".join(
            g.grader_id for g in matches) + " all match this ledger; keep one")
    return matches[0]


def _responses(grader: LedgerGrader, records: list[Record]) -> list[Record]:
    """The deliveries the grader's selections point at, in selection order.

    Refuses when the program did not succeed, the target never became ready, a selection
    names no delivery, or the number of selections differs from the grader's expectation.
    """
    if not any(r.tag == PROGRAM_SUCCEEDED for r in records):
        raise Refusal("ledger-program-not-succeeded",
                      f"no {PROGRAM_SUCCEEDED} event: the evaluation program did not succeed")
    target = next((r.event for r in records if r.tag == RUNTIME_READY
                   and r.event["agentName"] == grader.target_name), None)
    if target is None:
        raise Refusal("ledger-target-not-ready", f"no {RUNTIME_READY} event for target agent "
                      f"{grader.target_name!r}")
    deliveries: dict[tuple, Record] = {}
    for r in records:
        if r.tag == MESSAGE_RECEIVED:
            e = r.event
            # the earliest delivery of one identity wins if the evidence repeats it
            deliveries.setdefault((e["messageId"], e["taskId"], e["endpointId"], e["senderId"]), r)
    responses, other_instances = [], []
    # every selection must name a delivery, whichever scenario or endpoint made it: one that
    # names a message the ledger does not hold makes the evidence inconsistent (SPEC 4)
    for sel in (r for r in records if r.tag == RESPONSE_SELECTED):
        e = sel.event
        found = deliveries.get((e["messageId"], e["taskId"], e["endpointId"], e["targetId"]))
        if found is None:
            raise Refusal("ledger-selection-unmatched", f"the selection on line {sel.line} names "
                          f"message {e['messageId']!r} (task {e['taskId']!r}, endpoint "
                          f"{e['endpointId']!r}, sender {e['targetId']!r}); the ledger holds "
                          "no such delivery")
        if (e["scenarioId"] == grader.scenario_id and e["endpointName"] == grader.endpoint_name
                and e["targetName"] == target["agentName"]):
            if e["targetId"] == target["agentId"]:
                responses.append(found)
            else:  # (an instance of the target other than the one ready first)
                other_instances.append(f"line {sel.line} names {e['targetId']!r}")
    if len(responses) != grader.expected_responses:
        skipped = (f"; not counted, as the target is the instance ready first "
                   f"({target['agentId']!r}): {len(other_instances)} selection(s) of another "
                   f"instance ({', '.join(other_instances[:3])}"
                   f"{', …' if len(other_instances) > 3 else ''})") if other_instances else ""
        raise Refusal("ledger-response-count-mismatch", f"{len(responses)} selected response(s) "
                      f"of {grader.target_name!r} at endpoint {grader.endpoint_name!r} for "
                      f"scenario {grader.scenario_id!r}; {grader.grader_id} expects "
                      f"{grader.expected_responses}{skipped}")
    return responses


def grader_rows(grader: LedgerGrader) -> RunRows:
    """The service and clause rows of a ledger read for `grader`, without its responses: its
    clauses are the grader's checks, the same in every ledger it reads, so a first grade reads
    them before any ledger is (see `grade._preread_task`)."""
    return _rows(f"ledger-grader:{grader.grader_id}", grader.grader_id, grader, [])


def _rows(run_uri: str, run_id: str, grader: LedgerGrader, responses: list[Record]) -> RunRows:
    service = grader.target_name
    rows = RunRows()
    rows.services.append({
        "run_id": run_id, "run_uri": run_uri, "service": service, "kind": LEDGER_SERVICE_KIND,
        "contract_source": grader.grader_id, "declared_errors": [], "errored": False,
        "error_name": None, "error_detail": None, "log_status": "completed",
        "log_note": None, "position": 1,
    })
    for position, check in enumerate(grader.checks):
        rows.clauses.append({
            "run_id": run_id, "run_uri": run_uri, "service": service,
            "clause_id": clause_id(service, LEDGER_CLAUSE_KIND, position, check.name),
            "position": position, "parent_position": None, "kind": LEDGER_CLAUSE_KIND,
            "output_name": None, "output_service": None, "condition": None,
            "text": check.name, "description": check.detail, "optional": False,
        })
    for number, rec in enumerate(responses, start=1):
        # stored whole (exact-text checks must see every character), but for a `text` field
        # of a part of another type, which the checks never read and may hold any JSON
        parts = [part if part["type"] == "text" else
                 {key: value for key, value in part.items() if key != "text"}
                 for part in rec.event["parts"]]
        text = json.dumps(parts, ensure_ascii=False, separators=(",", ":"))
        # a lone surrogate (`"\ud800"` is valid JSON) is no Unicode text: shown as U+FFFD
        text, bad = _SURROGATE.subn("\ufffd", text)
        data = text.encode("utf-8")
        rows.bindings.append({
            "run_id": run_id, "run_uri": run_uri, "service": service,
            "name": f"response-{number}",
            "uri": f"{run_uri}/records.ndjson#{rec.envelope['eventId']}",
            "extension": "json", "size_bytes": len(data),
            "sha256": hashlib.sha256(data).hexdigest(), "text": text, "truncated": False,
            "decode_errors": bad > 0,
        })
    return rows
