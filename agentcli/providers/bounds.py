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

Bytes arriving are not the same as a response making progress: a server may send keep-alive
pings (Anthropic's ``ping`` events, SSE comments), empty deltas or empty chunks forever, or
text without end. The providers read the SDK's events through :class:`Progress` and
:class:`OutputBudget`:

* ``Progress``: an event that adds nothing to the message (a ping never even reaches the
  provider; an empty delta does) does not count; no progress for ``idle`` seconds
  (``--request-timeout``) ends the read;
* ``OutputBudget``: a response may write what ``--max-tokens`` allows and no more: at most
  :data:`DELTAS_PER_TOKEN` pieces per token (every delta carries at least part of one; a
  little slack for servers that split) and :data:`MAX_CHARS_PER_TOKEN` characters per token.
  Past either it is a broken response, reached in seconds however fast the flood.

A tool call whose input is not a JSON object once the response has *finished* properly is the
model's mistake, not a broken response: :func:`parse_tool_input` says why in words the model
can act on (``ToolCall.input_error``: answered as an ``is_error`` result, never run). Only an
input nested deeper than :data:`MAX_INPUT_DEPTH` is a broken response (:class:`InputTooDeep`).
"""

from __future__ import annotations

import asyncio
import json
import zlib
from typing import Any, AsyncIterator, Callable

import httpx2

MAX_RESPONSE_SECONDS = 600.0  # one response, first byte of the body to the last
MAX_RESPONSE_BYTES = 16 * 1024 * 1024  # one response body
MAX_TOOL_CALLS = 16  # tool calls one response may make; the rest are answered as errors
MAX_INPUT_DEPTH = 32  # nesting of a tool input (our tools take flat objects)
MAX_CHARS_PER_TOKEN = 64  # far above any tokenizer's longest token (a run of spaces, a URL)
DELTAS_PER_TOKEN = 2  # stream events per output token allowed (+ EVENT_SLACK)
EVENT_SLACK = 64  # message_start, block starts and stops, message_delta, empty role chunks
MAX_SHOWN_INPUT = 2000  # characters of an invalid tool input kept for the trace


class ResponseBoundExceeded(httpx2.ReadError):
    """A response went past one of the bounds above (a broken response)."""

    agentcli_bound = True


class DeadlinePassed(TimeoutError):
    """:meth:`Deadline.wait` found its deadline passed (not a TimeoutError of what it awaited)."""


class Deadline:
    """One timer for a whole stream, in place of an ``asyncio.timeout`` around every read (6 us
    each, and a stream has a read per chunk and one per event): :attr:`at` (loop time) moves
    by plain assignment, and only later while a wait is under way (an earlier one counts from
    the next wait); :meth:`wait` awaits under it. The timer is armed once and, when it
    fires before the current :attr:`at`, re-arms itself for it; it cancels the task only while
    the task waits in :meth:`wait`, and, as ``asyncio.timeout`` does, a cancellation it did not
    cause (Ctrl-C, a stop) passes through as it is."""

    __slots__ = ("_fired", "_handle", "_loop", "_task", "_waiting", "at")

    def __init__(self, at: float) -> None:
        self._loop = asyncio.get_running_loop()
        self._task: asyncio.Task | None = None  # the task of the wait under way
        self.at = at
        self._handle: asyncio.TimerHandle | None = None
        self._waiting = False
        self._fired = False

    def _fire(self) -> None:
        self._handle = None
        if not self._waiting:
            return  # the next wait looks at the deadline itself
        if self._loop.time() < self.at:  # moved on since it was armed
            self._handle = self._loop.call_at(self.at, self._fire)
            return
        self._fired = True
        if self._task is not None:
            self._task.cancel()

    async def wait(self, step: Callable[[], Any]) -> Any:
        """``await step()``; :class:`DeadlinePassed` once :attr:`at` has passed first (then
        ``step`` is not called at all when it had passed before)."""
        if self._loop.time() >= self.at:
            raise DeadlinePassed
        h = self._handle
        if h is None or h.when() > self.at:  # none yet, or armed past a deadline moved earlier
            if h is not None:
                h.cancel()
            self._handle = self._loop.call_at(self.at, self._fire)
        task = self._task = asyncio.current_task()
        cancelling = task.cancelling() if task is not None else 0
        self._waiting = True
        try:
            return await step()
        except asyncio.CancelledError:
            if self._fired and task is not None:
                self._fired = False
                if task.uncancel() <= cancelling:
                    raise DeadlinePassed from None
            raise
        finally:
            if self._fired and task is not None:
                # it cancelled the task, but the step swallowed that or raised something else:
                # take its request back, or a later Ctrl-C would end asyncio.run as a cancel
                task.uncancel()
            self._waiting = self._fired = False
            self._task = None

    def close(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None


class _BoundedStream(httpx2.AsyncByteStream):
    def __init__(self, inner: Any, *, sse: bool, idle: float, max_bytes: int,
                 max_seconds: float) -> None:
        self._inner = inner
        self._sse = sse
        self._idle = idle
        self._max_bytes = max_bytes
        self._max_seconds = max_seconds

    async def __aiter__(self) -> AsyncIterator[bytes]:
        now = asyncio.get_running_loop().time
        start = now()
        end = start + self._max_seconds
        next_event = start + self._idle
        size = 0
        tail = b""
        it = self._inner.__aiter__()
        deadline = Deadline(min(next_event, end))
        try:
            while True:
                try:
                    chunk = await deadline.wait(it.__anext__)
                except StopAsyncIteration:
                    return
                except DeadlinePassed:
                    if now() >= end - 0.001 and end <= next_event:
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
                        next_event = now() + self._idle
                        deadline.at = min(next_event, end)
                    tail = seen[-3:]
                yield chunk
        finally:
            deadline.close()

    async def aclose(self) -> None:
        close = getattr(self._inner, "aclose", None)
        if close is not None:
            await close()


DECODE_PIECE = 64 * 1024  # bytes one step of decompression may produce


class _Decompressed(httpx2.AsyncByteStream):
    """A gzip or deflate body decompressed here, a bounded piece at a time, so the bounds above
    count what it expands to: a few kilobytes of gzip must not become gigabytes in memory."""

    def __init__(self, inner: Any, coding: str) -> None:
        self._inner = inner
        self._coding = coding

    async def __aiter__(self) -> AsyncIterator[bytes]:
        gzip = self._coding in ("gzip", "x-gzip")
        d = zlib.decompressobj(zlib.MAX_WBITS | 16 if gzip else zlib.MAX_WBITS)
        first = not gzip  # deflate: a zlib stream, or (some servers) raw deflate
        try:
            async for chunk in self._inner:
                data = chunk
                while data:
                    try:
                        out = d.decompress(data, DECODE_PIECE)
                    except zlib.error:
                        if not first:
                            raise
                        d = zlib.decompressobj(-zlib.MAX_WBITS)
                        out = d.decompress(data, DECODE_PIECE)
                    first = False
                    if out:
                        yield out
                    data = d.unconsumed_tail
            tail = d.flush()
            if tail:
                yield tail
        except zlib.error as e:
            raise httpx2.DecodingError(f"{self._coding}: {e}") from None

    async def aclose(self) -> None:
        close = getattr(self._inner, "aclose", None)
        if close is not None:
            await close()


def bound_response(idle: float, max_bytes: int | None = None) -> Callable[[Any], Any]:
    """An ``httpx2`` async response hook applying the bounds (``idle`` = --request-timeout;
    the module's constants are read per response; ``max_bytes`` in place of
    :data:`MAX_RESPONSE_BYTES` for a client whose answers are files, the Message Batches
    API's results). ``providers.transport.http_client``
    installs it. A gzip or deflate body is decompressed by :class:`_Decompressed` (the header
    removed, so the client does not decode it again) and bounded as it expands; any other
    content-encoding, which no request of ours accepts, is a broken response."""

    async def hook(response: httpx2.Response) -> None:
        ctype = response.headers.get("content-type", "").lower()
        stream: Any = response.stream
        coding = response.headers.get("content-encoding", "").strip().lower()
        if coding and coding != "identity":
            if coding not in ("gzip", "x-gzip", "deflate"):
                raise ResponseBoundExceeded(
                    f"the body is in content-encoding {coding[:40]!r}, which agentcli does not ask for")
            stream = _Decompressed(stream, coding)
            del response.headers["content-encoding"]
        response.stream = _BoundedStream(stream, sse=ctype.startswith("text/event-stream"),
                                         idle=idle, max_bytes=max_bytes or MAX_RESPONSE_BYTES,
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


class OutputBudget:
    """What one response may write under ``--max-tokens``: :meth:`add` each event's output
    (characters of text, thinking or tool input; 0 for an event without any); it returns why
    the response went past what ``max_tokens`` allows, or None."""

    def __init__(self, max_tokens: int) -> None:
        self.max_tokens = max(1, int(max_tokens))
        self.max_events = DELTAS_PER_TOKEN * self.max_tokens + EVENT_SLACK
        self.max_chars = MAX_CHARS_PER_TOKEN * self.max_tokens
        self.events = 0
        self.chars = 0

    def add(self, chars: int) -> str | None:
        self.events += 1
        self.chars += chars
        if self.events > self.max_events or self.chars > self.max_chars:
            return (f"it went on past what --max-tokens {self.max_tokens} allows ({self.events} "
                    f"events, {self.chars} characters) without ending")
        return None


class NoProgress(Exception):
    """A stream that sent nothing new (only pings, empty deltas) for ``idle`` seconds."""

    agentcli_bound = True  # said as it is (``api_errors.broken_cause``)


class Progress:
    """The wait for the next event of a stream that brings something: :meth:`next` raises
    :class:`NoProgress` when ``idle`` seconds pass after the last :meth:`moved` (or the start)
    without one. An event that brings nothing is read through it without calling ``moved``."""

    def __init__(self, idle: float) -> None:
        self.idle = idle
        self._now = asyncio.get_running_loop().time
        self._deadline = Deadline(self._now() + idle)

    def moved(self) -> None:
        self._deadline.at = self._now() + self.idle

    async def next(self, events: Any) -> Any:
        """``await events.__anext__()`` within the deadline (StopAsyncIteration passes)."""
        try:
            return await self._deadline.wait(events.__anext__)
        except DeadlinePassed:
            raise NoProgress(self.message()) from None

    def close(self) -> None:
        self._deadline.close()

    def message(self) -> str:
        return (f"nothing new arrived for {self.idle:g} s (--request-timeout): the stream sent "
                "only keep-alive pings or empty events")


class InputTooDeep(Exception):
    """A tool input nested deeper than :data:`MAX_INPUT_DEPTH` (a broken response)."""


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def parse_tool_input(raw: str, name: str, what: str = "arguments") -> tuple[Any, str | None]:
    """(the input, None) or (None, the error the model hears) for a *finished* tool call's raw
    JSON ``raw`` (``what``: "arguments" or "input", as the API calls it). Strict: NaN and
    Infinity are not JSON, nor are two objects in a row. Raises :class:`InputTooDeep`."""
    if not name:
        return None, ("the tool call had no function name; nothing was run: call one of the "
                      "tools by name")
    if not raw.strip():
        return {}, None
    try:
        value = json.loads(raw, parse_constant=_no_constant)
    except RecursionError:
        raise InputTooDeep(f"the {what} of a {name} call nest too deeply") from None
    except ValueError as e:
        return None, (f"the {what} of this {name} call are not valid JSON ({getattr(e, 'msg', e)} "
                      f"at character {getattr(e, 'pos', '?')}); nothing was run: call {name} again "
                      f"with complete JSON {what}")
    if depth_exceeds(value):
        raise InputTooDeep(f"the {what} of a {name} call nest deeper than {MAX_INPUT_DEPTH} levels")
    if not isinstance(value, dict):
        return None, (f"the {what} of this {name} call must be a JSON object, not "
                      f"{type(value).__name__}; nothing was run: call {name} again with a JSON object")
    return value, None


def shown_input(raw: str) -> str:
    """An invalid tool input as the trace shows it (bounded)."""
    return raw if len(raw) <= MAX_SHOWN_INPUT else raw[:MAX_SHOWN_INPUT] + " [truncated]"
