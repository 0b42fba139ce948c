"""File names as the results hold them: UTF-8 text, whatever bytes the file system has."""

from __future__ import annotations


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
