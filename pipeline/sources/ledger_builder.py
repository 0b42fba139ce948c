"""Write moltzap ledgers: envelopes, sequences and sealing digests computed, never typed in.

Used by the tests (every validation rule and grading refusal is a small edit of a valid
ledger), by `data/build_moltzap_samples.py` for the sample ledgers, and by anyone who needs a
ledger to try a grader on. A ledger built here passes every rule of SPEC 4.1 unless the caller
breaks one on purpose: `artifacts()` takes the pieces to replace and seals whatever bytes
result, so a test of one rule never trips another by accident.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path

FORMAT_VERSION = 1
STEP_MS = 1_250  # a fixed clock: the same events always give the same bytes


def program_succeeded() -> dict:
    return {"_tag": "moltzap.program-succeeded/v1"}


def runtime_ready(agent_name: str, agent_id: str, runtime: str = "openclaw") -> dict:
    return {"_tag": "moltzap.agent-runtime-ready/v1", "agentName": agent_name,
            "agentId": agent_id, "runtime": runtime}


def text(value: str) -> dict:
    return {"type": "text", "text": value}


def image(url: str, alt_text: str | None = None) -> dict:
    part = {"type": "image", "url": url}
    if alt_text is not None:
        part["altText"] = alt_text
    return part


def file(url: str, name: str, mime_type: str | None = None, size: int | None = None) -> dict:
    part = {"type": "file", "url": url, "name": name}
    if mime_type is not None:
        part["mimeType"] = mime_type
    if size is not None:
        part["size"] = size
    return part


def message_received(endpoint_id: str, task_id: str, conversation_id: str, message_id: str,
                     sender_id: str, parts: Sequence[dict]) -> dict:
    return {"_tag": "moltzap.endpoint-message-received/v1", "endpointId": endpoint_id,
            "taskId": task_id, "conversationId": conversation_id, "messageId": message_id,
            "senderId": sender_id, "parts": list(parts)}


def response_selected(scenario_id: str, endpoint_name: str, endpoint_id: str, target_name: str,
                      target_id: str, task_id: str, message_id: str) -> dict:
    return {"_tag": "moltzap.evaluation-response-selected/v1", "scenarioId": scenario_id,
            "endpointName": endpoint_name, "endpointId": endpoint_id,
            "targetName": target_name, "targetId": target_id, "taskId": task_id,
            "messageId": message_id}


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _json_bytes(value) -> bytes:
    return json.dumps(value, ensure_ascii=False, indent=2).encode("utf-8") + b"\n"


class LedgerBuilder:
    """A ledger being built: a manifest and an ordered list of events."""

    def __init__(self, run_id: str, definition_id: str, *,
                 created_at: str = "2026-11-12T08:40:00Z",
                 catalog_tags: Sequence[str] = ("moltzap", "sample"),
                 producer: str = "moltzap.simulator", start_ms: int | None = None):
        self.run_id = run_id
        self.definition_id = definition_id
        self.producer = producer
        # events are observed from createdAt on, one step apart
        self.start_ms = start_ms if start_ms is not None else int(
            datetime.fromisoformat(created_at.replace("Z", "+00:00")).timestamp() * 1000)
        self.manifest = {
            "ledgerFormatVersion": FORMAT_VERSION, "definitionId": definition_id,
            "runId": run_id, "catalogTags": sorted(set(catalog_tags)), "createdAt": created_at,
            "provenance": {"producer": producer, "simulator": "moltzap/1"},
            "metadata": {},
        }
        self.events: list[dict] = []

    def add(self, *events: dict) -> LedgerBuilder:
        self.events.extend(events)
        return self

    def envelopes(self, events: Sequence[dict] | None = None) -> list[dict]:
        """Number `events` (default: all added) into envelopes: sequence, id, clocks."""
        out = []
        for sequence, event in enumerate(self.events if events is None else events):
            out.append({
                "runId": self.run_id, "eventId": f"{self.run_id}:{sequence}",
                "logicalSequence": sequence,
                "elapsedNanos": str(sequence * STEP_MS * 1_000_000),
                "observedAt": self.start_ms + sequence * STEP_MS,
                "producer": self.producer, "event": event,
            })
        return out

    def artifacts(self, *, manifest: dict | bytes | None = None,
                  records: Sequence[dict | str | bytes] | bytes | None = None,
                  completion: dict | None = None) -> dict[str, bytes]:
        """The three files as bytes. `manifest`/`records` replace the built ones (objects are
        serialised, str/bytes lines kept as given); `completion` entries override the sealed
        completion (which otherwise counts the lines and hashes the final bytes).
        """
        manifest_bytes = manifest if isinstance(manifest, bytes) else _json_bytes(
            self.manifest if manifest is None else manifest)
        if isinstance(records, bytes):
            records_bytes = records
        else:
            lines = []
            for item in self.envelopes() if records is None else records:
                if isinstance(item, dict):
                    item = json.dumps(item, ensure_ascii=False, separators=(",", ":"))
                lines.append(item if isinstance(item, bytes) else item.encode("utf-8"))
            records_bytes = b"".join(line + b"\n" for line in lines)
        count = len(records_bytes.split(b"\n")) - (1 if records_bytes.endswith(b"\n") else 0)
        sealed = {
            "ledgerFormatVersion": FORMAT_VERSION, "runId": self.run_id,
            "recordCount": count if records_bytes else 0,
            "artifacts": {"manifest": sha256(manifest_bytes), "records": sha256(records_bytes)},
        }
        sealed.update(completion or {})
        return {"manifest.json": manifest_bytes, "records.ndjson": records_bytes,
                "completion.json": _json_bytes(sealed)}

    def write(self, folder: str | Path, artifacts: dict[str, bytes] | None = None,
              *, omit: Sequence[str] = ()) -> Path:
        """Write the ledger into `folder` (created); `omit` leaves named files out."""
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        for name, data in (artifacts or self.artifacts()).items():
            if name not in omit:
                (folder / name).write_bytes(data)
        return folder


def evaluation(run_id: str, scenario_id: str, replies: Sequence[Sequence[dict] | str], *,
               prompts: Sequence[str] | None = None, definition_id: str | None = None,
               endpoint_name: str = "eval-sender", target_name: str = "target-agent",
               succeeded: bool = True, target_ready: bool = True,
               selected: Sequence[int] | None = None, **manifest_options) -> LedgerBuilder:
    """A complete evaluation episode: the endpoint prompts, the target replies, each reply
    (or those at the 0-based indices `selected`) is selected as grading evidence.

    A reply is a text or a list of parts. Prompts and replies are delivered at both agents,
    as the simulator records them, so responses are found among other deliveries.
    `manifest_options` go to LedgerBuilder (created_at, catalog_tags, producer, start_ms).
    """
    builder = LedgerBuilder(run_id, definition_id or scenario_id, **manifest_options)
    endpoint_id = f"agent-{sha256(f'{run_id}/{endpoint_name}'.encode())[:12]}"
    target_id = f"agent-{sha256(f'{run_id}/{target_name}'.encode())[:12]}"
    task_id, conversation_id = f"task-{run_id[-8:]}", f"conv-{run_id[-8:]}"
    builder.add({"_tag": "moltzap.run-started/v1", "definitionId": builder.definition_id})
    builder.add(runtime_ready(endpoint_name, endpoint_id, "scripted"))
    if target_ready:
        builder.add(runtime_ready(target_name, target_id))
    prompts = list(prompts or [f"Prompt {i + 1}." for i in range(len(replies))])
    for turn, reply in enumerate(replies):
        parts = [text(reply)] if isinstance(reply, str) else list(reply)
        prompt_id, reply_id = f"msg-{turn + 1}-prompt", f"msg-{turn + 1}-reply"
        builder.add(message_received(target_id, task_id, conversation_id, prompt_id, endpoint_id,
                                     [text(prompts[turn])]))
        builder.add(message_received(endpoint_id, task_id, conversation_id, reply_id, target_id,
                                     parts))
        if selected is None or turn in selected:
            builder.add(response_selected(scenario_id, endpoint_name, endpoint_id, target_name,
                                          target_id, task_id, reply_id))
    if succeeded:
        builder.add(program_succeeded())
    return builder
