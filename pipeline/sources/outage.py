"""Telling a store outage from a broken run.

A run whose file is missing or unreadable is refused, and the batch goes on. A store that
stops answering (connection refused or reset, timeouts, after the client's own bounded retries
with backoff) says nothing about the run: the grade must stop with nothing of the batch
published, so the run is graded on the next attempt instead of being recorded as refused.
"""

from __future__ import annotations

import sys


class StoreUnavailable(OSError):
    """The runs or results store did not answer; nothing of the current batch is published."""


def outage_types() -> tuple[type[BaseException], ...]:
    """The exception types that mean a store did not answer.

    The S3 clients' types count only once their modules are loaded: an exception of a type
    whose module was never imported cannot have been raised, and importing them to find out
    would cost a grade of a local folder a tenth of a second in every worker.
    """
    types: list[type[BaseException]] = [ConnectionError, TimeoutError]
    boto = sys.modules.get("botocore.exceptions")
    if boto is not None and hasattr(boto, "ReadTimeoutError"):  # (not one mid-import)
        types += [boto.ConnectionError, boto.HTTPClientError, boto.ConnectTimeoutError,
                  boto.ReadTimeoutError]
    aiohttp = sys.modules.get("aiohttp")
    if aiohttp is not None and hasattr(aiohttp, "ClientConnectionError"):
        types.append(aiohttp.ClientConnectionError)
    fsspec = sys.modules.get("fsspec.exceptions")
    if fsspec is not None and hasattr(fsspec, "FSTimeoutError"):
        types.append(fsspec.FSTimeoutError)
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


def no_credentials(exc: BaseException) -> bool:
    """Whether `exc` says S3 credentials could not be found or read (none in the
    environment, a profile half written, a role that would not answer)."""
    botocore = sys.modules.get("botocore.exceptions")  # (raised only once it is loaded)
    return botocore is not None and isinstance(exc, (
        botocore.NoCredentialsError, botocore.PartialCredentialsError,
        botocore.CredentialRetrievalError))


def unavailable(exc: BaseException, what: str) -> StoreUnavailable:
    """A StoreUnavailable naming what could not be reached, for the error message."""
    return StoreUnavailable(f"{what}: the store did not answer after retries "
                            f"({type(exc).__name__}: {exc})")
