"""`--judge-url`: an OpenAI-compatible chat-completions endpoint, one request per judgment.

POSTs `{"model", "messages", "temperature": 0}` to `<url>/chat/completions` (or to the URL
itself when it already ends so) with `Authorization: Bearer <key>` when a key is given, and
reads the answer object from `choices[0].message.content`. Rate limits (429), server errors
(5xx), timeouts and dropped connections are retryable; other HTTP errors are not.
"""

from __future__ import annotations

import json
import time
from urllib.parse import urlsplit

from .answers import Answer, Failure, MalformedAnswer, answer_from_text
from .identity import JudgeConfigError, judge_name, slug

NOTE = 200
NOTE_READ = 64 << 10  # the most of an error's body read for its note
# The most of a reply read: a chat completion of `max_tokens` is a few KB, and a reply read
# whole held 150 MB a call for a proxy that sent that (times the calls side by side)
REPLY_CAP = 4 << 20


def chat_url(url: str) -> str:
    """The chat-completions URL for a base URL (`http://host/v1` -> `…/v1/chat/completions`)."""
    url = url.rstrip("/")
    return url if url.endswith("/chat/completions") else f"{url}/chat/completions"


class ChatJudge:
    """Asks a hosted or local model; `name` defaults to the model name."""

    kind = "openai"
    batch_size = 1

    def __init__(self, url: str, model: str, name: str | None = None,
                 api_key: str | None = None, max_tokens: int = 600):
        if not model:
            raise JudgeConfigError("--judge-url needs --judge-model: the model name the "
                                   "endpoint serves, e.g. --judge-model gpt-4o-mini")
        self.url, self.endpoint = url, chat_url(url)  # (the first as given, for messages)
        self.model = model
        self.name = judge_name(name) if name else slug(model)
        self._api_key = api_key
        self.max_tokens = max_tokens

    def check_ready(self) -> None:
        """Refuses a URL that is not http(s)://host/…."""
        parts = urlsplit(self.endpoint)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise JudgeConfigError(f"--judge-url {self.url!r} is not an http(s) URL: "
                                   "give the endpoint's base URL, e.g. "
                                   "https://api.openai.com/v1")

    def _note(self, start: bytes) -> str:
        """The start of what the endpoint said, as the results keep it: NOTE characters on
        one line, without the API key (a gateway may echo the request's headers in its
        errors), nor a part of it where the note's end cuts it."""
        note = " ".join(start.decode("utf-8", "replace").split())
        key = self._api_key
        if key:
            note = note.replace(key, "[API key]")
        note = note[:NOTE]
        if key:
            cut = next((n for n in range(min(len(key), len(note)), 3, -1)
                        if note.endswith(key[:n])), 0)
            note = note[:len(note) - cut] + ("[API key]" if cut else "")
        return note

    def ask(self, requests: list[dict], timeout: float) -> dict[str, Answer | Failure]:
        return {r["id"]: self.ask_one(r, timeout) for r in requests}

    def ask_one(self, request: dict, timeout: float) -> Answer | Failure:
        """One chat completion for one judgment request."""
        # (here, not at the top: urllib.request loads http.client, 20-30 ms that every grade
        # paid, judged or not)
        import urllib.error
        import urllib.request

        body = {"model": self.model, "messages": request["messages"], "temperature": 0,
                "max_tokens": self.max_tokens}
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        http = urllib.request.Request(self.endpoint, data=json.dumps(body).encode("utf-8"),
                                      headers=headers, method="POST")
        deadline = time.monotonic() + timeout
        try:
            with urllib.request.urlopen(http, timeout=timeout) as resp:
                # (urllib's timeout bounds each read, not the reply: one sent a byte at a
                # time would hold the call for as long as it drips)
                chunks, size = [], 0
                while chunk := resp.read1(1 << 16):
                    chunks.append(chunk)
                    size += len(chunk)
                    if size > REPLY_CAP:
                        return Failure(f"judge endpoint reply is larger than "
                                       f"{REPLY_CAP >> 20} MiB; not read")
                    if time.monotonic() > deadline:
                        raise TimeoutError
                raw = b"".join(chunks)
        except urllib.error.HTTPError as exc:
            said = self._note(exc.read(NOTE_READ))
            retryable = exc.code in (408, 409, 429) or exc.code >= 500
            return Failure(f"judge endpoint answered HTTP {exc.code}"
                           + (f": {said}" if said else ""), retryable)
        except TimeoutError:
            return Failure(f"judge timed out after {timeout:g}s")
        except urllib.error.URLError as exc:
            if isinstance(exc.reason, TimeoutError):
                return Failure(f"judge timed out after {timeout:g}s")
            return Failure(f"judge endpoint unreachable: {exc.reason}")
        except OSError as exc:  # reset or dropped connection
            return Failure(f"judge endpoint connection failed: {exc}")
        try:
            content = json.loads(raw)["choices"][0]["message"]["content"]
            if not isinstance(content, str):
                raise TypeError
        except (ValueError, KeyError, IndexError, TypeError):
            said = self._note(raw[:NOTE_READ])
            return Failure(f"judge endpoint reply is not a chat completion: {said!r}")
        try:
            return answer_from_text(content)
        except MalformedAnswer as exc:
            return Failure(f"judge answered malformed JSON: {exc}")
