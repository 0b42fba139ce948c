"""`--judge-cmd`: a local executable asked in batches over JSON Lines.

One process per batch: it reads one JSON request per line on stdin and writes one JSON answer
per line on stdout (any order, matched by `id`). The command is split like a shell would
(shlex) but never run through a shell. A process that overruns its time is killed with its
whole process group.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import shutil
import signal
import subprocess
import threading
from pathlib import Path

from .answers import Answer, Failure, answers_from_lines
from .identity import JudgeConfigError, judge_name, name_from_command
from .openai_compat import REPLY_CAP

STDERR_NOTE = 200
ERR_KEPT = 64 << 10  # of a judge's stderr, the tail kept: its last line says why it failed


class CommandJudge:
    """Asks an executable; `name` defaults to the stem of the script it runs."""

    kind = "command"

    def __init__(self, command: str | list[str], name: str | None = None,
                 batch_size: int = 16):
        self.argv = shlex.split(command) if isinstance(command, str) else list(command)
        if not self.argv:
            raise JudgeConfigError("--judge-cmd is empty: give the command that runs your "
                                   "judge, e.g. --judge-cmd 'python3 my_judge.py'")
        self.name = judge_name(name) if name else name_from_command(self.argv)
        self.batch_size = max(1, batch_size)
        self._running: set[subprocess.Popen] = set()  # (for `cancel`)
        self._lock = threading.Lock()

    def check_ready(self) -> None:
        """Refuses a command whose executable cannot be found."""
        exe = self.argv[0]
        if shutil.which(exe) is None and not (Path(exe).is_file() and os.access(exe, os.X_OK)):
            raise JudgeConfigError(f"judge command {exe!r} was not found or is not "
                                   "executable: give a path or a program on PATH")

    def ask(self, requests: list[dict], timeout: float) -> dict[str, Answer | Failure]:
        """One process for `requests`; an answer or a failure for every request id."""
        ids = [r["id"] for r in requests]
        payload = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in requests)
        try:
            proc = subprocess.Popen(self.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, start_new_session=True)
        except OSError as exc:
            return dict.fromkeys(ids, Failure(f"judge command could not start: {exc}",
                                              retryable=False))
        with self._lock:
            self._running.add(proc)
        try:
            out, err, timed_out, over = _exchange(proc, payload.encode("utf-8"), timeout)
        finally:
            with self._lock:
                self._running.discard(proc)
        if over:
            return dict.fromkeys(ids, Failure(
                f"judge wrote more than {REPLY_CAP >> 20} MiB on its standard output; not "
                "read (it was stopped)"))
        found, notes = answers_from_lines(out.decode("utf-8", "replace"), set(ids))
        if len(found) == len(ids):
            return found
        missing = Failure(_why_missing(proc.returncode, timed_out, timeout, err, notes))
        return {rid: found.get(rid, missing) for rid in ids}

    def cancel(self) -> None:
        """Kill every judge process still running, with its process group: the grade is
        stopping, and a process in a session of its own would outlive it, a paid model's
        call and all."""
        with self._lock:
            running = list(self._running)
        for proc in running:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)


def _exchange(proc: subprocess.Popen, payload: bytes, timeout: float
              ) -> tuple[bytes, bytes, bool, bool]:
    """Send `payload` to the judge and read what it writes, for at most `timeout` seconds:
    (stdout, the last ERR_KEPT bytes of stderr, timed out, stdout over REPLY_CAP). A judge
    that overruns either is killed with its process group. (`communicate` held all it wrote:
    a judge printing in a loop took 64 s past a 1 s timeout, and 7.7 GB.)"""
    out, err = bytearray(), bytearray()
    over = threading.Event()

    def send() -> None:
        with contextlib.suppress(OSError):  # (a judge that exits unread: a broken pipe)
            proc.stdin.write(payload)
            proc.stdin.close()

    def read(stream, into: bytearray, cap: int | None) -> None:
        with contextlib.suppress(OSError, ValueError):  # (closed once killed)
            while chunk := stream.read1(1 << 16):
                into += chunk
                if cap is None and len(into) > ERR_KEPT:  # stderr: its tail is kept
                    del into[:-ERR_KEPT]
                elif cap is not None and len(into) > cap:
                    over.set()
                    _kill_group(proc)
                    return

    threads = [threading.Thread(target=send, daemon=True),
               threading.Thread(target=read, args=(proc.stdout, out, REPLY_CAP), daemon=True),
               threading.Thread(target=read, args=(proc.stderr, err, None), daemon=True)]
    for thread in threads:
        thread.start()
    timed_out = False
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        _kill_group(proc)
        proc.wait()
    for thread in threads[1:]:
        thread.join(5)
        if thread.is_alive():  # a descendant that left the group still holds a pipe
            for stream in (proc.stdout, proc.stderr):
                with contextlib.suppress(OSError):
                    stream.close()
    return bytes(out), bytes(err), timed_out, over.is_set()


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        with contextlib.suppress(ProcessLookupError):
            proc.kill()


def _why_missing(code: int | None, timed_out: bool, timeout: float, err: bytes,
                 notes: list[str]) -> str:
    lines = [ln.strip() for ln in err.decode("utf-8", "replace").splitlines() if ln.strip()]
    said = f": {lines[-1][:STDERR_NOTE]}" if lines else ""
    if timed_out:
        return f"judge timed out after {timeout:g}s"
    if code is not None and code < 0:
        return f"judge was killed by signal {-code}{said}"
    if code:
        return f"judge exited with code {code}{said}"
    if notes and all(note.startswith("no known request id") for note in notes):
        return (f"judge answered only requests it was not asked ({len(notes)} line(s), "
                f"first: {notes[0]})")
    if notes:
        return (f"judge answered malformed JSON ({len(notes)} line(s) not understood, first: "
                f"{notes[0]})")
    return "judge printed no answer for this request"
