"""Read one OpenProse run folder (era A or era B) and flatten it into table rows, or refuse it.

This is the only per-run Python of the pipeline: it reads files and emits plain rows for the
`runs`, `services`, `clauses`, `bindings` and `refusals` tables. Judging happens later, on
whole columns.
"""

from __future__ import annotations

import codecs
import errno
import hashlib
import os
import re
import traceback
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import cache, lru_cache

from ..names import first_few
from ..tables import MISSING_CONTRACT, UNREAD_ENSURES
from .bucket import RESULTS_MARK, Bucket, RunRef, a_folder, not_a_file, runs_held
from .contract import Component, Contract, normalise_name, output_name_key, parse_contract
from .forme import parse_forme_manifest
from .manifest import Manifest, ServiceWiring, parse_manifest, returned_from
from .outage import is_outage, unavailable
from .state_log import StateLog, error_and_note, parse_error_file, parse_state_log
from .vm_log import parse_vm_log

CONTRACT_CAP = 1 << 20  # contract files are small; a longer one is refused, never loaded whole
# A run's log is read whole up to this: a long run's log passes a megabyte, and whether the run
# ended is said by its last line
LOG_CAP = 32 << 20
DEFAULT_BINDING_CAP = 64 << 10
ERA_B_MARKERS = ("manifest.run.md", "forme.manifest.json", "root.prose.md", "vm.log.md")


@dataclass(frozen=True)
class Layout:
    """Where one era keeps the entry copy, the wiring, the snapshots and the log (SPEC 2.5).

    Bindings and workspaces sit in the same places in every era.
    """

    name: str  # runs.layout
    program: str
    manifests: tuple[str, ...]  # the first one present is read
    snapshots: tuple[str, ...]  # `{}` is the service name
    log: str


ERA_A = Layout("prose-a", "program.md", ("manifest.md",),
               ("services/{}.md", "services/{}.prose.md"), "state.md")
ERA_B = Layout("prose-b", "root.prose.md", ("manifest.run.md", "forme.manifest.json"),
               ("sources/{}.prose.md", "sources/{}.md"), "vm.log.md")


def _mixed_eras(layout: Layout, files) -> str:
    """What a refusal adds when the folder also holds the other era's files: which, and why
    it was read as `layout`'s era; "" when it holds none."""
    other = ERA_B if layout is ERA_A else ERA_A
    theirs = [f for f in (other.program, *other.manifests, other.log) if f in files]
    if not theirs:
        return ""
    return (f" (the folder mixes eras: it also holds {', '.join(theirs)}, files of "
            f"{other.name}; it is read as {layout.name} because it "
            f"{'holds' if layout is ERA_A else 'lacks'} program.md)")


def detect_layout(files) -> Layout:
    """Era B when its markers are present and era A's entry copy is not."""
    if "program.md" not in files and (any(m in files for m in ERA_B_MARKERS) or any(
            rel.startswith("sources/") and rel.endswith(".prose.md") for rel in files)):
        return ERA_B
    return ERA_A


@dataclass
class RunRows:
    """Rows one run contributes to each source table."""

    runs: list[dict] = field(default_factory=list)
    services: list[dict] = field(default_factory=list)
    clauses: list[dict] = field(default_factory=list)
    bindings: list[dict] = field(default_factory=list)
    refusals: list[dict] = field(default_factory=list)

    def extend(self, other: RunRows) -> None:
        for name in ("runs", "services", "clauses", "bindings", "refusals"):
            getattr(self, name).extend(getattr(other, name))


RETRIED = "~unread"  # ends the fingerprint of a run refused for a file it could not read


class Refusal(Exception):
    def __init__(self, reason: str, detail: str):
        super().__init__(f"{reason}: {detail}")
        self.reason, self.detail = reason, detail

    def fingerprint(self, fingerprint: str) -> str:
        """The fingerprint the refused run is committed with. A file that could not be read
        (a permission, a disk error, an object archived to Glacier) may be read tomorrow with
        nothing about it changed, not even its mtime: marked (RETRIED), the fingerprint matches
        no listing, so every grade tries the run again until it is read. A file gone since
        the run was listed is not marked: the run's next listing differs anyway; nor is one
        whose path cannot be opened as it stands (too long, a symlink, a folder)."""
        cause = self.__cause__
        retried = isinstance(cause, OSError) and not isinstance(cause, FileNotFoundError) and (
            cause.errno not in _NOT_RETRIED)
        return fingerprint + RETRIED if retried else fingerprint


# errors of reading a file that trying again cannot mend while the run stays as it is
_NOT_RETRIED = frozenset({errno.ENOENT, errno.ENAMETOOLONG, errno.ELOOP, errno.ENOTDIR,
                          errno.EISDIR})


@lru_cache(maxsize=1 << 16)  # runs of one program repeat the same clauses
def clause_id(service: str, kind: str, position: int, text: str) -> str:
    digest = hashlib.sha1(f"{service}\x1f{kind}\x1f{position}\x1f{text}".encode())
    return digest.hexdigest()[:16]


@lru_cache(maxsize=4096)
def _contract(text: str, name: str, kind: str) -> Contract:
    # Service snapshots repeat across the runs of a program: parse each distinct text once.
    return parse_contract(text, name, kind)


def _manifest(text: str, is_json: bool = False) -> Manifest:
    if is_json:
        return _forme_manifest(text)
    # A manifest's preamble (generation time, source path) differs in every run, but the parser
    # reads only its `# ` title there; keyed without the preamble, a program's manifests share
    # one parse.
    head, sep, body = text.partition("\n## ")
    if not sep or text.startswith("## "):
        return _manifest_cached(text)
    title = next((line for line in head.splitlines() if line.startswith("# ")), "")
    return _manifest_cached(f"{title}\n{sep}{body}")


@lru_cache(maxsize=1024)
def _manifest_cached(text: str) -> Manifest:
    return parse_manifest(text)


@lru_cache(maxsize=1024)
def _forme_manifest(text: str) -> Manifest:
    try:
        return parse_forme_manifest(text)
    except ValueError as exc:  # JSON is the one format whose damage cannot be read around
        raise Refusal("unreadable-file", f"forme.manifest.json: {exc}") from exc
    except RecursionError as exc:  # (internal-error and a traceback before)
        raise Refusal("unreadable-file", "forme.manifest.json nests arrays or objects too "
                      "deeply to be read") from exc


def decode(data: bytes, cut: bool = False) -> tuple[str, bool]:
    """Decode as UTF-8; undecodable bytes become U+FFFD and are flagged, never fatal. A file
    as editors on Windows write it reads as any other: a byte-order mark opening it is no part
    of its text (front matter, a first heading or a JSON document start after it), a mark of
    UTF-16 or UTF-32 (as PowerShell and Notepad write files) decodes the text so, and its
    lines end with `\n` alone, whether written `\r\n`, `\r\r\n` or `\r` (a table, a fence
    or YAML is read line by line).

    `cut`: `data` is the start of a longer file, read up to a cap; a character the cap split
    at its end is left out, not decoded as an error (v18 flagged the clean UTF-8 text of a
    long output as undecodable)."""
    if not cut and data[:1] not in _MARK_STARTS:  # (most files: UTF-8, read whole; 4x faster)
        decoded = data.decode
    else:
        encoding = next((name for mark, name in _UNICODE_MARKS if data.startswith(mark)),
                        "utf-8")

        def decoded(errors: str = "strict") -> str:
            return codecs.getincrementaldecoder(encoding)(errors).decode(data, final=not cut)
    try:
        text, bad = decoded(), False
    except UnicodeDecodeError:
        text, bad = decoded(errors="replace"), True
    if "\r" in text:  # (`\r\r\n` is what Windows' text mode writes of a `\r\n`)
        text = _CR_LF.sub("\n", text).replace("\r", "\n")
    return text.removeprefix("\ufeff"), bad


_CR_LF = re.compile(r"\r+\n")  # a line end written `\r\n`, or `\r\r\n`


# byte-order marks of the encodings other than UTF-8 a text file is written in (UTF-32's
# before UTF-16's, whose little-endian mark opens it); the codec reads and drops the mark
_UNICODE_MARKS = ((codecs.BOM_UTF32_LE, "utf-32"), (codecs.BOM_UTF32_BE, "utf-32"),
                  (codecs.BOM_UTF16_LE, "utf-16"), (codecs.BOM_UTF16_BE, "utf-16"))
_MARK_STARTS = {mark[:1] for mark, _ in _UNICODE_MARKS}


def _base_run(ref: RunRef, now: str) -> dict:
    return {
        "run_id": ref.run_id, "source": "prose", "layout": "prose-a", "run_uri": ref.uri,
        "program": None, "completed": None, "ended_at": None, "fingerprint": ref.fingerprint,
        "discovered_at": now, "file_count": len(ref.files),
        "total_bytes": sum(f.size for f in ref.files.values()), "status": "refused",
    }


def refuse(ref: RunRef, reason: str, detail: str, now: str | None = None,
           run: dict | None = None) -> RunRows:
    row = run or _base_run(ref, now or _now())
    row["status"] = "refused"
    return RunRows(runs=[row], refusals=[
        {"run_id": ref.run_id, "run_uri": ref.uri, "reason": reason, "detail": detail}
    ])


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def read_run(bucket: Bucket, ref: RunRef, binding_cap: int = DEFAULT_BINDING_CAP,
             now: str | None = None) -> RunRows:
    """Flatten one run folder. Returns graded-table rows, or a single refusal row.

    Refuses (closed set, see tables.REFUSAL_REASONS): unsafe-path, missing-program,
    missing-manifest, incomplete-run, no-outputs, no-ensures, unreadable-file; any unexpected
    exception becomes internal-error with a short traceback. Era-A and era-B names are read
    alike (see `Layout`); the refusal detail names the file of the run's era.
    Raises StoreUnavailable when the store stops answering: that is no fault of the run.
    """
    now = now or _now()
    run = _base_run(ref, now)
    try:
        return _read(bucket, ref, run, binding_cap)
    except Refusal as refusal:
        if is_outage(refusal):
            raise unavailable(refusal.__cause__ or refusal, f"reading {ref.uri}") from refusal
        run["fingerprint"] = refusal.fingerprint(run["fingerprint"])
        return refuse(ref, refusal.reason, refusal.detail, run=run)
    except Exception as exc:  # a bug or an unforeseen input must refuse, never drop, the run
        if is_outage(exc):
            raise unavailable(exc, f"reading {ref.uri}") from exc
        tb = traceback.format_exception(exc, limit=-3)
        return refuse(ref, "internal-error", "".join(tb)[-1500:], run=run)


def _results_here(ref: RunRef) -> str:
    """What a refusal adds for a folder named like a run that holds rungrade's results: it is
    found as a run (and refused) at every grade until they are kept elsewhere."""
    if RESULTS_MARK not in (ref.folders or {}):
        return ""
    return (f": it holds rungrade results ({RESULTS_MARK}/), not a run. Results kept in a "
            "folder named like a run are found as a run at every grade: keep them beside "
            "RUNS, or in a folder of RUNS named otherwise")


def _runs_inside(ref: RunRef) -> str:
    """What a refusal for a missing program adds for a folder named like a run that holds
    runs (a night's folder named by its time): none of them is found, since no run is looked
    for below a folder named like one (v19 said nothing of them)."""
    runs = runs_held(ref)
    if not runs:
        return ""
    return (f"; it holds {len(runs)} folder(s) named like runs ({first_few(runs)}), not looked "
            "for inside a folder named like a run: if it is a folder of runs, name it "
            "otherwise (not DATE-TIME-SUFFIX) and they are found")


def _not_ended(name: str, log: StateLog, cut: bool) -> str:
    """Why a run's log does not show it complete, as its refusal's detail."""
    if cut:
        return (f"{name} is longer than the {LOG_CAP >> 20} MB this grader reads of it: "
                "its last line, where a complete run says '---end TIMESTAMP', was not read")
    if log.unended:
        return (f"{name} does not show the run ended: {log.unended} (a finished run's says "
                "status: completed, or failed with an ended_at; or its last line is "
                "'---end TIMESTAMP')")
    if log.last_line == "---end":
        return f"{name} ends with '---end' and no time: a complete run's last line is " \
               "'---end TIMESTAMP'"
    return f"{name} does not end with a '---end' line"


def _snapshot_folders(layout: Layout) -> tuple[str, ...]:
    """The folders that hold a layout's service snapshots (`services/`, `sources/`)."""
    return tuple({pattern.split("/", 1)[0] + "/" for pattern in layout.snapshots})


def files_read(ref: RunRef, binding_cap: int = DEFAULT_BINDING_CAP) -> list[tuple[str, int]]:
    """(relative path, cap) of the files `read_run` reads from a listed run, for a remote
    store to fetch them all at once (`Bucket.prefetch`): the entry copy, wiring and log of the
    run's era, its service snapshots, error files and graded bindings; never the caller's
    bindings, workspace notes or symlinks. A snapshot a manifest places elsewhere is fetched
    when it is read."""
    layout = detect_layout(ref.files)
    named = {layout.program, *layout.manifests, layout.log}
    snapshots = _snapshot_folders(layout)
    wanted = []
    for rel, info in ref.files.items():
        if info.link_target is not None:
            continue
        if _graded_binding(rel):
            wanted.append((rel, binding_cap))
        elif rel == layout.log:
            wanted.append((rel, LOG_CAP))
        elif rel in named or rel.startswith(snapshots) or (
                rel.startswith("workspace/") and rel.endswith(f"/{ERROR_FILE}")
                and rel.count("/") == 2):
            wanted.append((rel, CONTRACT_CAP))
    return wanted


ERROR_FILE = "__error.md"  # workspace/{service}/__error.md: the service's error report


def _service_folder(rel: str, info) -> bool:
    """A link standing for a service's folder of outputs (`bindings/writer`), not for a file
    beside them (its target, inside the root, is looked at: never read)."""
    return (rel.startswith("bindings/") and rel.count("/") == 1 and rel != "bindings/caller"
            and os.path.isdir(info.link_target))


def _graded_binding(rel: str) -> bool:
    """A service's output (`bindings/{service}/...`); the caller's inputs are not graded."""
    return (rel.startswith("bindings/") and rel.count("/") >= 2
            and not rel.startswith("bindings/caller/"))


def _read(bucket: Bucket, ref: RunRef, run: dict, binding_cap: int) -> RunRows:
    files = ref.files
    # (first: a run refused for a link is counted under its era too, v19 said prose-a)
    layout = detect_layout(files)
    run["layout"] = layout.name
    if files.get(".", None) is not None and files["."].link_target is not None:
        raise Refusal("unsafe-path", "the run folder itself is a symlink" + (
            "" if bucket.inside(files["."].link_target) else ", to a folder outside the runs "
            "root") + ": never followed")
    for rel, info in files.items():
        if info.link_target is not None and not bucket.inside(info.link_target):
            raise Refusal("unsafe-path", f"{rel} links outside the runs root")
    # a link inside the root where the grader reads (an output, an output's folder, a
    # contract or their folder) is never followed either: the run would be graded as if it
    # lacked what the link stands for (an output "not published", a contract "not in it")
    folders = {"bindings", *(f.rstrip("/") for f in _snapshot_folders(layout))}
    linked = next((rel for rel, info in sorted(files.items()) if info.link_target is not None
                   and (rel in folders or _graded_binding(rel) or _service_folder(rel, info))),
                  None)
    if linked is not None:
        raise Refusal("unsafe-path", f"{linked} is a symlink (never followed): an output or "
                      "a contract is graded as a file of the run itself")
    cut: set[str] = set()  # files longer than their cap: only their head was read

    def text_of(rel: str, cap: int = CONTRACT_CAP) -> str:
        if files[rel].link_target is not None:
            raise Refusal("unsafe-path", f"{rel} is a symlink (never followed)")
        if files[rel].special:
            raise Refusal("unreadable-file", not_a_file(rel, files[rel]))
        try:
            data, truncated = bucket.read(f"{ref.path}/{ref.key(rel)}", cap)
        except OSError as exc:
            raise Refusal("unreadable-file", f"{rel}: {exc}") from exc
        if truncated and cap == CONTRACT_CAP:  # (its clauses, services or error cut off)
            raise Refusal("unreadable-file", f"{rel} is longer than the {CONTRACT_CAP >> 20} MB "
                          "this grader reads of a contract, manifest or error file: what "
                          "follows would be left ungraded")
        if truncated:
            cut.add(rel)
        return decode(data, truncated)[0]

    def read_log():
        """The run's log, parsed (None without one); its end is recorded on the run."""
        if layout.log not in files:
            run["completed"] = False
            return None
        text = text_of(layout.log, LOG_CAP)
        log = parse_vm_log(text) if layout is ERA_B else parse_state_log(text)
        run["completed"], run["ended_at"] = bool(log.completed), log.ended_at
        if layout.log in cut:  # (its start may end on '---end': the end was not read)
            run["completed"], run["ended_at"] = False, None
        return log

    def refuse_early(reason: str, detail: str):
        """A refusal before the log is read: the log still tells when the run ended (an
        unreadable log leaves that unknown, and the refusal stands)."""
        try:
            log = read_log()
            if log is not None and run["program"] is None:
                run["program"] = log.program or None
        except Refusal as refusal:
            if is_outage(refusal):
                raise
        return Refusal(reason, detail)

    if "." in files:  # named like a run folder, but a file
        raise Refusal("missing-program", f"the run path is a file, not a folder: no "
                      f"{layout.program} to read")
    if layout.program not in files:
        raise refuse_early("missing-program", f"no {layout.program} in the run folder"
                           + a_folder(ref, layout.program) + _results_here(ref)
                           + _runs_inside(ref))
    manifest_rel = next((m for m in layout.manifests if m in files), None)

    program_text = text_of(layout.program)
    if manifest_rel is None:  # (the program's name is known: trends count it under it)
        run["program"] = _contract(program_text, "", "program").main.name or None
        raise refuse_early("missing-manifest", f"no {' or '.join(layout.manifests)}: a "
                           "program without a services list" + a_folder(ref, *layout.manifests)
                           + _mixed_eras(layout, files))
    manifest = _manifest(text_of(manifest_rel), manifest_rel.endswith(".json"))
    log = read_log()
    program = _contract(program_text, manifest.program or "", "program")
    program_name = program.main.name or (log.program if log else None) or "program"
    run["program"] = program_name
    if log is None:
        raise Refusal("incomplete-run", f"no {layout.log}: completion cannot be established"
                      + a_folder(ref, layout.log) + _mixed_eras(layout, files))
    if not run["completed"]:
        raise Refusal("incomplete-run", _not_ended(layout.log, log, layout.log in cut))

    binding_files = sorted(
        (rel for rel in files if _graded_binding(rel) and files[rel].link_target is None),
        key=_binding_order(manifest))
    if not binding_files:
        raise Refusal("no-outputs", "no bindings/{service}/ files in the run")
    special = next((rel for rel in binding_files if files[rel].special), None)
    if special is not None:
        raise Refusal("unreadable-file", not_a_file(special, files[special]))

    rows = RunRows()
    blobs = _read_bindings(bucket, ref, binding_files, binding_cap)
    for rel in binding_files:
        service, _, fname = rel[len("bindings/"):].partition("/")
        data, truncated = blobs.pop(rel)  # its bytes go once decoded: not all held twice
        text, bad = decode(data, truncated)
        stem, dot, ext = fname.rpartition(".")
        rows.bindings.append({
            "run_id": ref.run_id, "run_uri": ref.uri, "service": service,
            "name": stem if dot else fname, "uri": f"{ref.uri}/{ref.key(rel)}",
            "extension": ext.lower() if dot else "", "size_bytes": files[rel].size,
            "sha256": hashlib.sha256(data).hexdigest(), "text": text, "truncated": truncated,
            "decode_errors": bad or "\x00" in text,
        })

    # An inline `## name` component with ensures that the manifest does not list is one more
    # service (after the listed ones): its clauses are graded, not dropped
    # (a name the program gives two components is one service: the first, as the contract's
    # index of components takes it)
    listed = {normalise_name(w.name) for w in manifest.services}
    # (an inline component a listed service is wired to is its own: `source: program.md#x`)
    listed |= {normalise_name(anchor) for w in manifest.services
               if (anchor := (w.source or "").partition("#")[2])}
    inline: dict[str, Component] = {}
    for comp in program.inline:
        inline.setdefault(normalise_name(comp.name), comp)
    wirings = [*manifest.services, *(
        ServiceWiring(name=c.name, heading=c.name, source=f"{layout.program}#{c.name}")
        for key, c in inline.items() if key not in listed and c.items("ensures"))]
    wirings += _unlisted_services(layout, files, text_of, program_name, wirings)
    # A service's name compares as output names do (case, '-', '_' and spaces alike) with
    # its bindings' folder, its workspace and its log steps: `### Fact_Checker` publishes
    # in bindings/fact-checker/. Its bindings then carry the manifest's name.
    wired = {normalise_name(w.name): w.name for w in wirings}
    exact = {w.name for w in wirings}
    for b in rows.bindings:
        if b["service"] not in exact:
            b["service"] = wired.get(normalise_name(b["service"]), b["service"])
    statuses = {normalise_name(name): step for name, step in log.service_status().items()}
    error_files = {normalise_name(rel.split("/")[1]): rel for rel in sorted(files, reverse=True)
                   if rel.count("/") == 2 and rel.startswith("workspace/")
                   and rel.endswith(f"/{ERROR_FILE}")}
    # who publishes each output name, for the program's ensures: of several services, the
    # last in the manifest's order (the one whose output the program ends with)
    order = {w.name: rank for rank, w in enumerate(wirings)}
    published = {}
    for b in sorted(rows.bindings, key=lambda b: order.get(b["service"], -1)):
        published[normalise_name(b["name"])] = b["service"]
    errored_names: list[tuple[str, str | None, str, list[str]]] = []

    for position, wiring in enumerate(wirings):
        comp, source = _service_contract(layout, files, text_of, wiring.name, wiring.source,
                                         program)
        declared = [*(comp_error_names(comp) if comp else []), *wiring.errors]
        declared = list(dict.fromkeys(declared))
        err_rel = f"workspace/{wiring.name}/{ERROR_FILE}"
        err_rel = err_rel if err_rel in files else error_files.get(normalise_name(wiring.name))
        error_name = error_detail = None
        if err_rel is not None:
            err = parse_error_file(text_of(err_rel))
            error_name, error_detail = err.name, err.detail[:2000]
        step = statuses.get(normalise_name(wiring.name))
        if step and step.status == "errored" and error_name is None:
            error_name, error_detail = step.error_name, step.note
        errored = err_rel is not None or bool(step and step.status == "errored")
        if errored:
            errored_names.append((wiring.name, error_name, error_detail or "", declared))
        rows.services.append({
            "run_id": ref.run_id, "run_uri": ref.uri, "service": wiring.name, "kind": "service",
            "contract_source": source, "declared_errors": declared, "errored": errored,
            "error_name": error_name, "error_detail": error_detail,
            "log_status": step.status if step else "absent",
            "log_note": step.note[:2000] if step and step.note else None,
            "position": position + 1,
        })
        if comp:
            rows.clauses.extend(_clause_rows(ref, wiring.name, comp, "ensures", wiring.name))
            heading = None if comp.items("ensures") else _unread_heading(source, text_of)
            if heading:
                rows.clauses.append(_contract_row(
                    ref, wiring.name, UNREAD_ENSURES, heading,
                    f"(the ensures under “{heading}” in {source})"))
        else:
            where = wiring.source or layout.snapshots[0].format(wiring.name)
            rows.clauses.append(_contract_row(ref, wiring.name, MISSING_CONTRACT, where,
                                              f"(the contract at {where})"))

    # The program's own ensures are graded as a component of kind 'program' (position 0).
    if program.main.items("ensures"):
        # (an origin naming no service of the run is no origin: the output is then found by
        # name among the bindings)
        returns = {output_name_key(name): wired[normalise_name(service)]
                   for name, service in manifest.returns.items()
                   if service and normalise_name(service) in wired}
        # The program is a component of the run; its name must not merge it with a service.
        taken = {w.name for w in wirings} | {b["service"] for b in rows.bindings}
        component = program_name if program_name not in taken else f"{program_name} (program)"
        first_error = errored_names[0] if errored_names else (None, None, None, [])
        log_error = log.errors[0] if log.errors else None
        rows.services.insert(0, {
            "run_id": ref.run_id, "run_uri": ref.uri, "service": component,
            "kind": "program", "contract_source": layout.program,
            # the error it carries is declared where the service that raised it declares it
            "declared_errors": list(dict.fromkeys([*comp_error_names(program.main),
                                                   *first_error[3]])),
            "errored": bool(errored_names or log.errors), "error_name": first_error[1],
            "error_detail": first_error[2] or log_error, "log_status": "completed",
            "log_note": None,
            "position": 0,
        })
        # an item may name its origin as a returns line does ("`report` (from writer): …"),
        # and then that service's output is the one graded
        origins = {item.position: wired[normalise_name(origin[1].strip())]
                   for item in program.main.items("ensures")
                   if (origin := returned_from(item.text.partition("\n")[0].strip()))
                   and normalise_name(origin[1].strip()) in wired}
        for row in _clause_rows(ref, component, program.main, "program_ensures", None):
            if row["output_name"]:
                key = output_name_key(row["output_name"])
                row["output_service"] = (origins.get(row["position"]) or returns.get(key)
                                         or published.get(key))
            rows.clauses.append(row)

    if not any(c["kind"] not in ("detail", MISSING_CONTRACT, UNREAD_ENSURES)
               for c in rows.clauses):
        missing = [c["description"] for c in rows.clauses if c["kind"] == MISSING_CONTRACT]
        raise Refusal("no-ensures", "no service or program declares an ensures clause" + (
            f" (the run holds no contract of {len(missing)} service(s): "
            f"{', '.join(missing[:3])}{', …' if len(missing) > 3 else ''})" if missing else "")
            + _unread_ensures(layout, files, text_of))
    _named_first(rows.bindings, binding_files, manifest, rows.clauses)
    run["status"] = "graded"
    rows.runs.append(run)
    return rows


# An "Ensures" heading of a form contracts do not use: another level than `###`, bold on a
# line of its own, or underlined (setext)
_UNREAD_ENSURES = re.compile(r"(?im)^[ ]{0,3}(?:#{1,2}|#{4,6})[ \t]+[*_]*ensures[*_]*[ \t]*:?"
                             r"[ \t]*#*[ \t]*$|^[ ]{0,3}(?:\*\*|__)ensures:?(?:\*\*|__):?[ \t]*$"
                             r"|^[ ]{0,3}ensures[ \t]*\n[ ]{0,3}(?:=+|-+)[ \t]*$")


def _unread_ensures(layout: Layout, files, text_of) -> str:
    """What a `no-ensures` refusal adds where a contract of the run has an "Ensures" heading
    this grader does not read (`## Ensures`, `**Ensures**`, underlined): it names the file and
    the heading, and the forms that are read."""
    contracts = [layout.program, *sorted(rel for rel in files
                                         if rel.startswith(_snapshot_folders(layout))
                                         and rel.endswith(".md") and rel.count("/") == 1)]
    for rel in contracts:
        heading = rel in files and _unread_heading(rel, text_of)
        if heading:
            return (f"; {rel} has an ensures heading this grader does not read, “{heading}”: "
                    "ensures are read under a `### Ensures` heading or an `ensures:` block")
    return ""


def _unread_heading(rel: str, text_of) -> str | None:
    """The first "Ensures" heading of a form contracts do not use in file `rel` (see
    _UNREAD_ENSURES), on one line; None when it has none, or when `rel` is a section of the
    program file (`program.md#name`: its other components' headings are not this one's)."""
    if "#" in rel:
        return None
    try:  # (read as the run's other files are: a link or a special file is not)
        found = _UNREAD_ENSURES.search(text_of(rel))
    except Refusal:
        return None
    return " ".join(found.group(0).split()) if found else None


def _binding_order(manifest: Manifest, named: frozenset[str] = frozenset()):
    """The sort key of binding paths: by service and output, and of one output published
    twice (`result.md` and `result.json`, or names that compare alike: `Tldr.md` and
    `tldr.md`), the file the manifest wires first, else one of `named` (paths a clause names
    as it writes them), else .md, then .json, then any other (clause_frame grades the first
    of them)."""
    wired = {o.target.removeprefix("./") for w in manifest.services for o in w.outputs
             if o.target}
    rank = {"md": 0, "json": 1}

    def key(rel: str) -> tuple:
        service, _, fname = rel[len("bindings/"):].partition("/")
        stem, dot, ext = fname.rpartition(".")
        return (normalise_name(service), normalise_name(stem if dot else fname),
                rel not in wired, rel not in named, rank.get(ext.lower() if dot else "", 2),
                rel)
    return key


def _named_first(bindings: list[dict], rels: list[str], manifest: Manifest,
                 clauses: list[dict]) -> None:
    """Order `bindings` (read from `rels`, in `_binding_order`) so that of outputs whose
    names compare alike the one a clause names as it writes it (`tldr`; with its extension
    where the clause writes one, `report.md`) comes after the wired file only. v15 took the
    first by path, so the output graded followed the case of the files' names."""
    written = {(c["output_service"] or c["service"], c["output_name"].strip().strip("`"))
               for c in clauses if c["output_name"]}
    named = frozenset(rel for b, rel in zip(bindings, rels, strict=True)
                      if (b["service"], b["name"]) in written
                      or (b["service"], f"{b['name']}.{b['extension']}") in written)
    if named:
        key = _binding_order(manifest, named)
        order = sorted(range(len(rels)), key=lambda i: key(rels[i]))
        bindings[:] = [bindings[i] for i in order]


def _read_bindings(bucket: Bucket, ref: RunRef, rels: list[str], cap: int):
    paths = {f"{ref.path}/{ref.key(rel)}": rel for rel in rels}
    try:
        blobs = bucket.read_many(list(paths), cap)
    except OSError as exc:
        raise Refusal("unreadable-file", f"a binding could not be read: {exc}") from exc
    return {paths[p]: blob for p, blob in blobs.items()}


def comp_error_names(comp: Component) -> list[str]:
    """The errors a component declares: its `### Errors` items' names, an item written as the
    bare name too (`- no-results`, `- rate-limited — when the API says 429`: v18 declared
    none of them, and the service's primary ensures were held against it when it so erred)."""
    names = []
    for item in comp.items("errors"):
        if item.parent_position is not None:
            continue
        if item.name is None:
            bare = error_and_note(item.description)[0] or ""
            item_name = bare if _BARE_ERROR.match(bare) else None
        else:
            item_name = item.name
        if item_name:
            names.append(item_name)
    return names


# An error's name written bare, without the backticks or colon of an item's name
_BARE_ERROR = re.compile(r"^[A-Za-z0-9_][\w.\-]*$")


def _service_contract(layout: Layout, files, text_of, name, source, program: Contract):
    """Find a service's contract: its manifest source, its era's snapshot, or inline.

    A source naming the program file itself (`program.md`, `program.md#name`; era B:
    `root.prose.md`) points at the inline `## name` component, never at the program's own
    sections.
    """
    path, _, anchor = (source or "").lstrip("./").partition("#")
    inline = program.component(anchor or name)
    if path == layout.program:
        return (inline, f"{layout.program}#{inline.name}") if inline else (None, None)
    candidates = [path] if path else []
    candidates += [pattern.format(name) for pattern in layout.snapshots]
    for rel in candidates:
        if rel in files:
            return _contract(text_of(rel), name, "service").main, rel
    # the snapshot named as the manifest names it but for case, `-`, `_` or spaces
    # (`### Fact_Checker`, `source: services/fact-checker.md` for services/fact_checker.md)
    wanted = {normalise_name(n) for rel in candidates if (n := _snapshot_name(layout, rel))}
    folders = _snapshot_folders(layout) if wanted else ()
    for rel in sorted(rel for rel in files if folders and rel.startswith(folders)):
        found = _snapshot_name(layout, rel)
        if found and normalise_name(found) in wanted and files[rel].link_target is None:
            return _contract(text_of(rel), name, "service").main, rel
    if inline is not None:
        return inline, f"{layout.program}#{inline.name}"
    return None, None


def _snapshot_name(layout: Layout, rel: str) -> str | None:
    """The service name of a path where `layout` keeps snapshots (`services/x.prose.md` →
    `x`); None for other paths."""
    for prefix, suffix in _snapshot_shapes(layout):
        name = rel[len(prefix):len(rel) - len(suffix)]
        if rel.startswith(prefix) and rel.endswith(suffix) and name and "/" not in name:
            return name
    return None


@cache
def _snapshot_shapes(layout: Layout) -> tuple[tuple[str, str], ...]:
    """(prefix, suffix) of each of `layout`'s snapshot paths, `.prose.md` before `.md`."""
    return tuple(tuple(pattern.split("{}")) for pattern in
                 sorted(layout.snapshots, key=len, reverse=True))


def _unlisted_services(layout: Layout, files, text_of, program_name: str,
                       wirings: list[ServiceWiring]) -> list[ServiceWiring]:
    """The services a manifest leaves out (it drifted, or was cut short) whose snapshots the
    run holds (`services/x.md`: with ensures, not a link, not of kind test), after the listed
    ones, each graded from its snapshot: left out, their clauses were not accounted for, and a
    run whose manifest was cut after its first service read satisfied at 100 with a failing
    service dropped. A snapshot a listed service is wired to (`source:`), or that one
    delegates to (`delegates:`), is not one, whatever its name (names compare as
    `normalise_name` does). The program's `services:` list and the folders of `bindings/` name
    no service here: a list goes stale, and a folder may be a copy."""
    names = [*(w.name for w in wirings), program_name]
    paths = [w.source for w in wirings if w.source]
    for wiring in wirings:  # ("url-fetcher (services/url-fetcher.md)")
        for delegate in wiring.delegates:
            name, _, where = delegate.partition("(")
            names.append(name)
            paths.append(where.strip(" )"))
    names += [n for path in paths
              if (n := _snapshot_name(layout, path.lstrip("./").partition("#")[0]))]
    taken = {normalise_name(name) for name in names}
    found: list[ServiceWiring] = []
    folders = _snapshot_folders(layout)
    for rel in sorted(rel for rel in files if rel.startswith(folders)):
        name = _snapshot_name(layout, rel)
        if not name or files[rel].link_target is not None or normalise_name(name) in taken:
            continue  # (a link there is no snapshot of a service of its own)
        taken.add(normalise_name(name))
        comp = _contract(text_of(rel), name, "service").main
        if comp.kind != "test" and comp.items("ensures"):
            found.append(ServiceWiring(name=name, heading=name, source=rel))
    return found


def _contract_row(ref: RunRef, service: str, kind: str, description: str, text: str) -> dict:
    """The one clause saying a service's ensures could not be read: MISSING_CONTRACT, the run
    does not hold its contract (`description`: where it was looked for); UNREAD_ENSURES, they
    stand under a heading this grader does not read (`description`: the heading). The report
    says so (check `contract_found`)."""
    return {
        "run_id": ref.run_id, "run_uri": ref.uri, "service": service,
        "clause_id": clause_id(service, kind, 0, description), "position": 0,
        "parent_position": None, "kind": kind, "output_name": None,
        "output_service": service, "condition": None, "text": text,
        "description": description, "optional": False,
    }


def _clause_rows(ref: RunRef, service: str, comp: Component, kind: str,
                 output_service: str | None) -> list[dict]:
    rows = []
    items = comp.items("ensures")
    for item in items:
        # a sub-item `if CONDITION: …` is a conditional of its own, not a detail of the item
        # above (v19 held it as one: its degraded output was asked of every run); it points at
        # the top-level item it stands under, whose output it is judged on, at any depth
        top = item.parent_position is None
        row_kind = "conditional" if item.condition else kind if top else "detail"
        parent = item.parent_position
        while row_kind == "conditional" and parent is not None \
                and items[parent].parent_position is not None:
            parent = items[parent].parent_position
        rows.append({
            "run_id": ref.run_id, "run_uri": ref.uri, "service": service,
            "clause_id": clause_id(service, row_kind, item.position, item.text),
            "position": item.position, "parent_position": parent,
            "kind": row_kind, "output_name": item.name if top and not item.condition else None,
            "output_service": output_service, "condition": item.condition, "text": item.text,
            "description": item.description, "optional": item.optional,
        })
    return rows
