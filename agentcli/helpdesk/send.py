"""The HTTP side of ``drafts push``: the only module outside ``providers`` that imports
``httpx2`` (the HTTP client the model SDKs already bring).

- Every request is built here, then :func:`~.rules.guard` is asserted on the request object the
  client is about to send (method, whole URL, body bytes, header names): a request the guard
  refuses is never sent.
- Bounded: connect :data:`CONNECT_S`, each read ``timeout`` (``--timeout``), a body of at most
  :data:`MAX_BODY_BYTES` read within ``2 × timeout``; no redirect is followed (a 3xx is a
  failure: the token is never carried elsewhere); no proxy from the environment is trusted with
  the token unless the environment names one (httpx's own rule).
- Faults, as :class:`Answer` kinds: ``ok``; ``limited`` (429: the server's ``retry-after``,
  parsed by the rate-limit gate's own :func:`~agentcli.providers.ratelimit.retry_after`, never
  below the gate's backoff floor, a wait above :data:`MAX_WAIT_S` is not waited); ``server``
  (5xx); ``timeout`` and ``dropped`` (the request may have arrived); ``unreachable`` (nothing
  arrived: connection refused, DNS, TLS); ``auth`` (401/403), ``missing`` (404), ``refused``
  (another 4xx), ``redirect`` (3xx), ``broken`` (a 2xx body we cannot read).

The token goes into the ``Authorization`` header only; no message built here holds it, the URL
or the helpdesk's body words beyond a bounded, redacted line.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any

import httpx2

from ..providers.ratelimit import limited_wait, retry_after
from ..redact import one_line, redact
from .rules import Helpdesk, Route, check_base_url, guard

CONNECT_S = 10.0
MAX_BODY_BYTES = 4 * 1024 * 1024   # a listing of a ticket's notes, a created note
MAX_WAIT_S = 120.0                 # a retry-after beyond this is not waited: run again later
USER_AGENT = "agentcli-helpdesk"


@dataclass
class Answer:
    """What one request came to."""
    kind: str                       # see the module docstring
    status: int | None = None
    data: Any = None                # the parsed JSON body (ok)
    headers: dict[str, str] = field(default_factory=dict)
    wait: float | None = None       # limited: the seconds to wait
    said: str = ""                  # the helpdesk's words, bounded and redacted

    @property
    def may_have_arrived(self) -> bool:
        """The write may have been made although we have no answer saying so."""
        return self.kind in ("timeout", "dropped", "server", "broken")


class Sender:
    """One HTTP client for one helpdesk, base URL and token (a context manager)."""

    def __init__(self, hd: Helpdesk, base: str, token: str, *, timeout: float) -> None:
        # as the guard takes it (Refused before any client exists): lower case, no default port
        self.hd, self.base, self.token, self.timeout = hd, check_base_url(hd, base), token, timeout
        self.paused_until = 0.0   # a 429's pause holds every draft of the run
        self.rounds = 0           # 429 answers in a row (the gate's doubling backoff floor)
        self.client = httpx2.Client(
            follow_redirects=False, trust_env=True,
            timeout=httpx2.Timeout(timeout, connect=min(CONNECT_S, timeout)),
            headers={"user-agent": USER_AGENT, "accept": "application/json"})

    def __enter__(self) -> "Sender":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.client.close()

    def pause(self) -> None:
        """Sleep out a 429's pause (bounded: at most :data:`MAX_WAIT_S`)."""
        left = self.paused_until - time.monotonic()
        if left > 0:
            time.sleep(min(left, MAX_WAIT_S))

    def send(self, route: Route, ticket: str, body: dict[str, Any] | None) -> Answer:
        url = self.base + route.fill(ticket) + (f"?{route.query}" if route.query else "")
        content = json.dumps(body, ensure_ascii=False).encode() if body is not None else None
        headers = {"authorization": self.hd.auth(self.token)}
        if content is not None:
            headers["content-type"] = "application/json"
        # the one guard: on what we mean to send (a hostile id never even becomes a URL), then on
        # the request exactly as the client will put it on the wire (Refused: nothing is sent)
        guard(self.hd, self.base, route.method, url, content, ticket, headers.keys())
        req = self.client.build_request(route.method, url, content=content, headers=headers)
        guard(self.hd, self.base, req.method, str(req.url), req.content, ticket, req.headers.keys())
        self.pause()
        try:
            resp = self.client.send(req, stream=True)
        except httpx2.ConnectTimeout:
            return Answer("unreachable", said=f"no connection within {min(CONNECT_S, self.timeout):g} s")
        except httpx2.ConnectError as e:
            return Answer("unreachable", said=_words(str(e) or "connection refused"))
        except httpx2.TimeoutException:
            return Answer("timeout", said=f"no answer within {self.timeout:g} s (--timeout)")
        except (httpx2.TransportError, OSError) as e:
            return Answer("dropped", said=_words(str(e) or type(e).__name__))
        try:
            return self._answer(resp)
        finally:
            resp.close()

    def _answer(self, resp: Any) -> Answer:
        status = resp.status_code
        headers = {k.lower(): v for k, v in resp.headers.items()}
        try:
            raw = self._read(resp)
        except (httpx2.TransportError, OSError, ValueError) as e:
            if status < 300:  # made, perhaps: the body would have said what
                timed = isinstance(e, httpx2.TimeoutException)
                return Answer("timeout" if timed else "dropped", status, said=(
                    f"the answer did not arrive within {self.timeout:g} s" if timed
                    else _words(str(e) or "the answer broke off")))
            raw = b""  # an error's status is its answer; its words are a courtesy
        said = _said(raw)
        if status == 429:
            self.rounds += 1
            wait = limited_wait(self.rounds, retry_after(headers))
            if wait <= MAX_WAIT_S:
                self.paused_until = max(self.paused_until, time.monotonic() + wait)
            return Answer("limited", status, headers=headers, wait=wait, said=said)
        self.rounds = 0
        if 200 <= status < 300:
            try:
                data = json.loads(raw) if raw.strip() else None
            except (ValueError, RecursionError):
                return Answer("broken", status, headers=headers, said="its answer is not JSON")
            return Answer("ok", status, data, headers)
        return Answer(_kind(status), status, headers=headers, said=said)

    def _read(self, resp: Any) -> bytes:
        """The body, at most :data:`MAX_BODY_BYTES`, within ``2 × timeout`` (each read is
        bounded by the client's read timeout; a trickle is stopped between reads)."""
        end = time.monotonic() + 2 * self.timeout
        data = b""
        for chunk in resp.iter_bytes():
            data += chunk
            if len(data) > MAX_BODY_BYTES:
                raise ValueError(f"the answer is larger than {MAX_BODY_BYTES >> 20} MiB")
            if time.monotonic() > end:
                raise httpx2.ReadTimeout("the answer trickled")
        return data


def _kind(status: int) -> str:
    if status in (401, 403):
        return "auth"
    if status == 404:
        return "missing"
    if 300 <= status < 400:
        return "redirect"
    if status >= 500:
        return "server"
    return "refused"


def _words(s: str) -> str:
    return one_line(redact(s), 160)


def _said(raw: bytes) -> str:
    """The helpdesk's own words for an error (its ``error``/``message``/``description``), one
    bounded, redacted line."""
    text = raw[:8192].decode("utf-8", "replace")
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        return _words(text) if text.strip() and not text.lstrip().startswith("<") else ""
    if isinstance(data, dict):
        for k in ("description", "message", "error", "details"):
            v = data.get(k)
            if isinstance(v, str) and v.strip():
                return _words(v)
            if isinstance(v, dict) and isinstance(v.get("message"), str):
                return _words(v["message"])
    return ""
