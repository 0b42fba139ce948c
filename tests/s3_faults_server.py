"""moto's S3 server on loopback, with a switch that makes it fail at a chosen request, and
one that denies chosen requests as a bucket policy does, and one that answers a chosen
request `200 OK` with a body of its own once (S3 may report an error inside a success, and a
connection cut mid-body leaves half of one).

The server is real (werkzeug serving moto's S3 app on a free port). Once `fail_from` matches
a request, that request and every later one has its connection reset before any response, as
a dying server or a load balancer in front of one does; `stop()` closes the listening socket so
new connections are refused. Each failed attempt is recorded, so tests can see the client's
retries and their backoff. `start()` after a failure serves the same buckets again.
"""

from __future__ import annotations

import logging
import socket
import threading
import time
from collections.abc import Callable

from moto_s3 import S3Server, free_port

logging.getLogger("werkzeug").setLevel(logging.CRITICAL)


ACCESS_DENIED = (b'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>AccessDenied</Code>'
                 b"<Message>Access Denied</Message><RequestId>denied</RequestId></Error>")


class ConnectionCut(Exception):
    """Raised inside the server after it reset the client's connection."""


class FaultyS3Server(S3Server):
    def __init__(self) -> None:
        super().__init__("127.0.0.1", free_port(), verbose=False)
        self.fail_from: Callable[[dict], bool] | None = None
        # requests answered 403 AccessDenied, as S3 answers those a bucket policy denies
        self.deny: Callable[[dict], bool] | None = None
        self.failing = False
        # (match, body): the first request matched is answered 200 OK with `body`, once
        self.answer_once: tuple[Callable[[dict], bool], bytes] | None = None
        self.attempts: list[tuple[float, str]] = []  # (time, request) of each cut request
        self.requests: list[str] = []

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self._port}"

    def wsgi_app(self):
        app = super().wsgi_app()

        def guarded(environ, start_response):
            request = f"{environ['REQUEST_METHOD']} {environ.get('PATH_INFO', '')}?" \
                      f"{environ.get('QUERY_STRING', '')}"
            self.requests.append(request)
            if self.deny is not None and self.deny(environ):
                start_response("403 Forbidden", [("Content-Type", "application/xml")])
                return [ACCESS_DENIED]
            once = self.answer_once
            if once is not None and once[0](environ):
                self.answer_once = None
                start_response("200 OK", [("Content-Type", "application/xml")])
                return [once[1]]
            if not self.failing and self.fail_from is not None and self.fail_from(environ):
                self.failing = True
            if self.failing:
                self.attempts.append((time.monotonic(), request))
                sock = environ.get("werkzeug.socket")
                if sock is not None:
                    sock.shutdown(socket.SHUT_RDWR)
                raise ConnectionCut(request)
            return app(environ, start_response)

        return guarded

    def start(self) -> None:
        self.failing, self.fail_from = False, None
        super().start()

    def stop(self) -> None:
        server = self._server
        super().stop()
        if server is not None:
            server.server_close()  # refuse new connections instead of queueing them


def is_list_page(number: int) -> Callable[[dict], bool]:
    """Match the `number`-th (1-based) ListObjectsV2 request."""
    seen = {"n": 0}
    lock = threading.Lock()

    def match(environ: dict) -> bool:
        if "list-type=2" not in environ.get("QUERY_STRING", ""):
            return False
        with lock:
            seen["n"] += 1
            return seen["n"] == number

    return match


def lists_prefix(prefix: str) -> Callable[[dict], bool]:
    """Match ListObjectsV2 requests for keys under `prefix` (a bucket policy's `s3:prefix`)."""
    from urllib.parse import parse_qs

    def match(environ: dict) -> bool:
        query = parse_qs(environ.get("QUERY_STRING", ""))
        return "list-type" in query and query.get("prefix", [""])[0].startswith(prefix)

    return match


def is_object_read(after: int) -> Callable[[dict], bool]:
    """Match object reads (GET of a key) once `after` of them have been served."""
    seen = {"n": 0}
    lock = threading.Lock()

    def match(environ: dict) -> bool:
        path = environ.get("PATH_INFO", "")
        if environ["REQUEST_METHOD"] != "GET" or path.count("/") < 2 or "list-type" in \
                environ.get("QUERY_STRING", ""):
            return False
        with lock:
            seen["n"] += 1
            return seen["n"] > after

    return match


def is_head_request() -> Callable[[dict], bool]:
    """Match HEAD requests (discovery asks whether a big folder holds a ledger marker)."""
    return lambda environ: environ["REQUEST_METHOD"] == "HEAD"
