"""File names as the results hold them: UTF-8 text, whatever bytes the file system has."""

from __future__ import annotations

import hashlib

# The bytes of a run id a report's file name holds: with a uri tag or two (`~{8 hex}`),
# `.json`, and the tag a staged copy's name starts with, a name stays within the 255 bytes a
# file name may take (a run folder named with 242 bytes or more failed every grade).
NAME_BYTES = 200
# Characters a run id may hold (a ledger's runId is any string) that a file name may not: a
# report named `/../../x.json` was written outside the results, `a/b.json` below `reports/a/`
NOT_IN_NAMES = ("/", "\0")
# The end of a staged report's name that stands for a refused run: an empty file, which
# removes the report the run held when its batch publishes (a refusal is never a verdict)
REFUSED_MARK = ".refused"


def shown(name: str) -> str:
    """`name` as results hold it: a file name that is not UTF-8 (Python holds its undecodable
    bytes as lone surrogates) with those bytes written `\\xNN`, and any other name as it is.
    Parquet, JSON reports and terminals take UTF-8 only; the run is still read by its path."""
    try:
        name.encode()
        return name
    except UnicodeEncodeError:
        try:
            return name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
        except UnicodeEncodeError:  # a surrogate no file name decodes to
            return name.encode("utf-8", "backslashreplace").decode()


def shown_in(value):
    """`value` with every string in it (in lists, tuples and dicts too) as `shown` writes it."""
    if isinstance(value, str):
        return shown(value)
    if isinstance(value, list | tuple):
        return [shown_in(v) for v in value]
    if isinstance(value, dict):
        return {shown_in(k): shown_in(v) for k, v in value.items()}
    return value


def report_stem(run_id: str) -> str:
    """A report's file name before `.json`: the run id; one longer than NAME_BYTES bytes, or
    holding a character no file name may (NOT_IN_NAMES), with those characters made `_`, cut
    (at a character) and followed by `~` and 12 hex digits of the whole id's SHA-1."""
    raw = run_id.encode()
    if len(raw) <= NAME_BYTES and not any(c in run_id for c in NOT_IN_NAMES):
        return run_id
    safe = run_id.translate({ord(c): "_" for c in NOT_IN_NAMES}).encode()
    return f"{safe[:NAME_BYTES - 13].decode(errors='ignore')}~{hashlib.sha1(raw).hexdigest()[:12]}"


def uri_tag(uri: str) -> str:
    """8 hex digits of the SHA-1 of a run's uri: what tells apart the reports of two runs with
    one run id (`{run_id}~{uri tag}.json`)."""
    return hashlib.sha1(uri.encode()).hexdigest()[:8]


def first_few(names: list[str], shown: int = 3) -> str:
    """`names` for a message: the first `shown`, and how many more."""
    more = f" and {len(names) - shown} more" if len(names) > shown else ""
    return ", ".join(names[:shown]) + more
