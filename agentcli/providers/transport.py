"""The HTTP client both SDKs are given, and what a broken transport or body raises.

    http_client(sdk, idle, gate)  the SDK's own default async client (its connection limits,
                                  keep-alive socket options, proxies from the environment), not
                                  following redirects, with two event hooks: every request first waits at the rate-limit
                                  gate; every response feeds the gate and is bounded
                                  (``providers.bounds``), and a 429/529 raises the gate's
                                  :class:`~agentcli.providers.ratelimit.LimitAnswer` in place
                                  of the answer (the SDK never sees it)
    TRANSPORT_FAULTS              the exception classes a failing connection raises
    MALFORMED_BODY                what parsing a broken body raises inside the SDKs
    own_bug(e)                    the bug of ours an SDK's connection error wraps, or None

Event hooks rather than a custom ``httpx2.AsyncBaseTransport``: both SDKs take an ``httpx2``
client, and anthropic's ``DefaultAsyncHttpxClient`` builds its transport (keep-alive socket
options, the environment's proxies as mounts) only when it is given none, while ``httpx2``
ignores the environment's proxies once a transport is passed. A wrapping transport would
drop both or reach into the client's private attributes; the hooks are httpx's public seam,
and an exception a response hook raises ends that request (httpx closes the response).

How the SDKs pass these on (anthropic 2.x, openai 3.x): anthropic wraps whatever the client
raises in ``APIConnectionError`` (``APITimeoutError`` for a timeout), the original as its
``__cause__``; openai wraps only ``httpx2.RequestError``, ``ssl.SSLError`` and
``anyio.EndOfStream`` and lets anything else through as it is. While a stream is being read
both raise transport errors and malformed JSON or UTF-8 raw, unwrapped.
"""

from __future__ import annotations

import collections
import contextlib
import json
import ssl
import time
from typing import Any

import anyio
import httpx2

from .bounds import bound_response
from .ratelimit import LIMIT_STATUSES, Gate, LimitAnswer

# httpx2's transport maps every httpcore2 exception (and httpcore2 every h11 one) to its own
# RequestError family (``httpx2._transports.default.map_httpcore_exceptions``), so those never
# arrive raw and are not imported here (40 ms before the openai provider's settings check).
# What still escapes unmapped: TLS failures and anyio's stream errors (openai's own list of
# request exceptions names ``ssl.SSLError`` and ``anyio.EndOfStream``).
TRANSPORT_FAULTS: tuple[type[BaseException], ...] = (
    httpx2.RequestError, ssl.SSLError, anyio.EndOfStream, anyio.BrokenResourceError,
    anyio.ClosedResourceError)

# A body (or an SSE event's data) that is not valid JSON / UTF-8, or nests deeper than the
# parser's recursion limit. Both SDKs raise these raw from ``json.loads`` / ``bytes.decode``.
MALFORMED_BODY: tuple[type[BaseException], ...] = (json.JSONDecodeError, UnicodeDecodeError,
                                                   RecursionError)

LIMIT_BODY_BYTES = 64 * 1024  # of a 429/529's body kept for the server's words


def own_bug(e: BaseException) -> BaseException | None:
    """The exception behind an SDK's connection error when it is neither a transport fault nor
    the gate's answer: raised by our own code inside the HTTP client (a hook), a bug."""
    cause = e.__cause__
    if cause is None or isinstance(cause, (*TRANSPORT_FAULTS, LimitAnswer)):
        return None
    return cause


async def _start_of(response: httpx2.Response) -> str:
    """The first :data:`LIMIT_BODY_BYTES` of a limit answer's body (bounded like any body)."""
    data = b""
    try:
        async with contextlib.aclosing(response.aiter_bytes()) as chunks:
            async for chunk in chunks:
                data += chunk
                if len(data) >= LIMIT_BODY_BYTES:
                    break
    except TRANSPORT_FAULTS:
        pass  # the status is the answer; its words are a courtesy
    return data[:LIMIT_BODY_BYTES].decode("utf-8", "replace")


def gate_hooks(gate: Gate) -> dict[str, list[Any]]:
    """The request and response hooks of the rate-limit gate (the response hook must come
    after the bounds' hook: it reads a limit answer's body). Each answer tells the gate how
    long ago its request went (how old the rate-limit headers may be)."""
    # when each request in flight went (by id: a request that never gets an answer leaves
    # its entry; bounded so a long run of connection failures cannot grow it)
    _sent: "collections.OrderedDict[int, float]" = _Sent()

    async def on_request(request: httpx2.Request) -> None:
        try:
            size = len(request.content)
        except httpx2.RequestNotRead:  # a streamed body: no size to estimate from
            size = 0
        await gate.before_request(size)
        _sent[id(request)] = time.monotonic()

    async def on_response(response: httpx2.Response) -> None:
        sent = _sent.pop(id(response.request), None)
        age = time.monotonic() - sent if sent is not None else 0.0
        gate.after_response(response.status_code, response.headers, age)
        if response.status_code in LIMIT_STATUSES:
            raise gate.limit_answer(response.status_code, response.headers,
                                    await _start_of(response))

    return {"request": [on_request], "response": [on_response]}


class _Sent(collections.OrderedDict):
    """Send times by request id, the oldest dropped beyond :data:`MAX_IN_FLIGHT_TIMES`."""

    def __setitem__(self, key: Any, value: Any) -> None:
        super().__setitem__(key, value)
        if len(self) > MAX_IN_FLIGHT_TIMES:
            self.popitem(last=False)


MAX_IN_FLIGHT_TIMES = 4096


def http_client(sdk: Any, idle: float, gate: Gate, max_bytes: int | None = None) -> httpx2.AsyncClient:
    """``sdk.DefaultAsyncHttpxClient`` with the response bounds (``idle`` = --request-timeout,
    ``max_bytes`` a body's size bound when not the default) and the rate-limit gate's hooks."""
    hooks = gate_hooks(gate)
    # No redirects: the SDKs' clients follow them, so a base URL that answers 307 would send
    # the conversation (and, on the same origin, the key) wherever it points, and a failure
    # there would be reported as this server's. A redirect is said as one (api_errors).
    return sdk.DefaultAsyncHttpxClient(follow_redirects=False, event_hooks={
        "request": hooks["request"],
        "response": [bound_response(idle, max_bytes), *hooks["response"]]})
