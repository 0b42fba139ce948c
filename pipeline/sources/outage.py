"""Telling a store outage from a broken run.

A run whose file is missing or unreadable is refused, and the batch goes on. A store that
stops answering (connection refused or reset, timeouts, after the client's own bounded retries
with backoff) says nothing about the run: the grade must stop with nothing of the batch
published, so the run is graded on the next attempt instead of being recorded as refused.
"""

from __future__ import annotations

import functools


class StoreUnavailable(OSError):
    """The runs or results store did not answer; nothing of the current batch is published."""


@functools.cache
def outage_types() -> tuple[type[BaseException], ...]:
    """The exception types that mean a store did not answer (imported on first need: the S3
    clients' modules are slow to import, and a grade of a local folder never needs them)."""
    types: list[type[BaseException]] = [ConnectionError, TimeoutError]
    try:
        from botocore import exceptions as boto

        types += [boto.ConnectionError, boto.HTTPClientError, boto.ConnectTimeoutError,
                  boto.ReadTimeoutError]
    except ImportError:  # S3 support not installed: no remote store to lose
        pass
    try:
        import aiohttp

        types.append(aiohttp.ClientConnectionError)
    except ImportError:
        pass
    try:
        from fsspec.exceptions import FSTimeoutError

        types.append(FSTimeoutError)
    except ImportError:
        pass
    return tuple(types)



def is_outage(exc: BaseException) -> bool:
    """True when `exc`, or an exception it was raised from, means the store did not answer."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, outage_types()):
            return True
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return False


def unavailable(exc: BaseException, what: str) -> StoreUnavailable:
    """A StoreUnavailable naming what could not be reached, for the error message."""
    return StoreUnavailable(f"{what}: the store did not answer after retries "
                            f"({type(exc).__name__}: {exc})")
