"""Bounds on one model response, enforced on the bytes as they arrive.

The SDKs' ``timeout`` is a per-read timeout: a server that trickles one byte a second never
trips it, neither inside an SSE event nor in a JSON body. The SDKs take an ``httpx2`` client,
and an ``httpx2`` response hook may hand the response a different byte stream (its public
``stream``); :func:`bound_response` wraps it so that

* a streamed (``text/event-stream``) body must complete its next SSE event (a blank line)
  within ``idle`` seconds (``--request-timeout``) of the previous one;
* a non-streamed body, which is one event, must be complete within ``idle`` seconds of its
  headers;
* every body ends within :data:`MAX_RESPONSE_SECONDS` and :data:`MAX_RESPONSE_BYTES`, however
  lively it is (pings or text deltas forever).

Past a bound the read raises :class:`ResponseBoundExceeded` (an ``httpx2.ReadError``, so the
SDKs pass it on as they do a dropped connection): the provider reports a non-streamed body as
a broken response and a stream as an incomplete one, and the loop retries either as a fresh
request (the SDKs retry nothing). Nothing of such a response ever runs.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any, AsyncIterator, Callable

import httpx2

MAX_RESPONSE_SECONDS = 600.0  # one response, first byte of the body to the last
MAX_RESPONSE_BYTES = 16 * 1024 * 1024  # one response body
MAX_TOOL_CALLS = 16  # tool calls one response may make; the rest are answered as errors
MAX_INPUT_DEPTH = 32  # nesting of a tool input (our tools take flat objects)


class ResponseBoundExceeded(httpx2.ReadError):
    """A response went past one of the bounds above (a broken response)."""

    agentcli_bound = True


class _BoundedStream(httpx2.AsyncByteStream):
    def __init__(self, inner: Any, *, sse: bool, idle: float, max_bytes: int,
                 max_seconds: float) -> None:
        self._inner = inner
        self._sse = sse
        self._idle = idle
        self._max_bytes = max_bytes
        self._max_seconds = max_seconds

    async def __aiter__(self) -> AsyncIterator[bytes]:
        start = time.monotonic()
        end = start + self._max_seconds
        next_event = start + self._idle
        size = 0
        tail = b""
        it = self._inner.__aiter__()
        while True:
            wait = min(next_event, end) - time.monotonic()
            try:
                if wait <= 0:
                    raise TimeoutError
                async with asyncio.timeout(wait):
                    chunk = await it.__anext__()
            except StopAsyncIteration:
                return
            except TimeoutError:
                if time.monotonic() >= end - 0.001 and end <= next_event:
                    raise ResponseBoundExceeded(
                        f"the response went on for more than {self._max_seconds:g} s") from None
                what = "the next event" if self._sse else "the rest of the response"
                raise ResponseBoundExceeded(
                    f"{what} did not arrive within {self._idle:g} s (--request-timeout)") from None
            size += len(chunk)
            if size > self._max_bytes:
                raise ResponseBoundExceeded(
                    f"the response is larger than {self._max_bytes // (1024 * 1024)} MiB")
            if self._sse:
                seen = tail + chunk
                if b"\n\n" in seen or b"\r\n\r\n" in seen or b"\r\r" in seen:
                    next_event = time.monotonic() + self._idle
                tail = seen[-3:]
            yield chunk

    async def aclose(self) -> None:
        close = getattr(self._inner, "aclose", None)
        if close is not None:
            await close()


def bound_response(idle: float) -> Callable[[Any], Any]:
    """An ``httpx2`` async response hook applying the bounds (``idle`` = --request-timeout;
    the module's constants are read per response). ``providers.transport.http_client``
    installs it."""

    async def hook(response: httpx2.Response) -> None:
        ctype = response.headers.get("content-type", "").lower()
        response.stream = _BoundedStream(response.stream, sse=ctype.startswith("text/event-stream"),
                                         idle=idle, max_bytes=MAX_RESPONSE_BYTES,
                                         max_seconds=MAX_RESPONSE_SECONDS)

    return hook


def depth_exceeds(value: Any, limit: int = MAX_INPUT_DEPTH) -> bool:
    """True when ``value`` nests lists/dicts deeper than ``limit`` (iterative: no recursion)."""
    stack = [(value, 0)]
    while stack:
        v, d = stack.pop()
        if isinstance(v, dict):
            items = v.values()
        elif isinstance(v, (list, tuple)):
            items = v
        else:
            continue
        if d >= limit:
            return True
        stack.extend((x, d + 1) for x in items)
    return False


def over_the_bound(calls: list[Any], limit: int = MAX_TOOL_CALLS) -> None:
    """Calls past the first ``limit`` of one response get ``input_error``: answered, never run."""
    for c in calls[limit:]:
        if not c.input_error:
            c.input_error = (f"not run: one response may make at most {limit} tool calls; make "
                             "the calls that are still needed in the next response")
