"""A small OpenAI-compatible chat-completions server on loopback, for the judge tests.

It answers with the same rule as judge_script.py, reading the output from between the
prompt's <<<OUTPUT / OUTPUT>>> markers. `mode` makes it misbehave; every request is recorded
(path, headers, body) so tests count what rungrade really sent.
"""

from __future__ import annotations

import json
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class ChatServer:
    def __init__(self, mode: str = "rule", api_key: str | None = None, fail_first: int = 0):
        self.mode = mode
        self.api_key = api_key
        self.fail_first = fail_first  # mode "flaky": this many 500s before answering
        self.requests: list[dict] = []  # each as it is answered
        self.arrived = 0  # requests received, answered or not
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._server.block_on_close = False
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def __enter__(self) -> ChatServer:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def answer(self, body: dict, authorization: str | None = None) -> tuple[int, str]:
        """Status and reply text for one chat request."""
        with self._lock:
            n = len(self.requests)
        if self.mode == "echo":  # a gateway's error that repeats the request's headers
            return 500, ("upstream failed for the request with headers " + "x" * 100
                         + f" Authorization: {authorization} (try again)")
        if self.mode == "echo_spaced":  # the same, indented (pretty-printed JSON, HTML)
            return 500, "error:" + " " * 200 + f"Authorization: {authorization}\n"
        if self.mode == "huge":  # a runaway reply: more than any chat completion
            return 200, json.dumps({"choices": [{"message": {"content": "x" * (5 << 20)}}]})
        if self.mode == "flaky" and n < self.fail_first:
            return 500, json.dumps({"error": {"message": "overloaded, try again"}})
        if self.mode == "slow":
            time.sleep(1.0)
        if self.mode == "stall":  # a judge far slower than anyone waits for
            time.sleep(30.0)
        if self.mode == "garbage":
            content = "It looks good to me, I would pass it."
        else:
            user = body["messages"][-1]["content"]
            output = re.search(r"<<<OUTPUT\n(.*)\nOUTPUT>>>", user, re.S).group(1)
            lines = [ln.strip() for ln in output.splitlines() if ln.strip()]
            bad = [ln for ln in lines if "BAD" in ln.split()]
            verdict = ({"outcome": "failed", "evidence": bad[0]} if bad
                       else {"outcome": "passed", "evidence": lines[0]})
            # fenced, as chat models often answer
            content = "```json\n" + json.dumps({**verdict, "confidence": 75,
                                                "rationale": "by the BAD rule"}) + "\n```"
        reply = {"id": "chatcmpl-test", "object": "chat.completion", "model": body.get("model"),
                 "choices": [{"index": 0, "finish_reason": "stop",
                              "message": {"role": "assistant", "content": content}}]}
        return 200, json.dumps(reply)

    def _handler(self):
        server = self

        class Handler(BaseHTTPRequestHandler):
            timeout = 10

            def do_POST(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length))
                with server._lock:
                    server.arrived += 1
                if server.api_key and (self.headers.get("Authorization")
                                       != f"Bearer {server.api_key}"):
                    status, text = 401, json.dumps({"error": {"message": "bad key"}})
                elif not self.path.endswith("/chat/completions"):
                    status, text = 404, "{}"
                else:
                    status, text = server.answer(body, self.headers.get("Authorization"))
                with server._lock:
                    server.requests.append({"path": self.path, "body": body,
                                            "authorization": self.headers.get("Authorization")})
                data = text.encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    if server.mode == "drip":  # the reply a byte at a time, 20 ms apart
                        for i in range(len(data)):
                            self.wfile.write(data[i:i + 1])
                            self.wfile.flush()
                            time.sleep(0.02)
                    else:
                        self.wfile.write(data)
                except OSError:  # the client gave up (a timeout test)
                    pass

            def log_message(self, *args):
                pass

        return Handler
