"""A fake Anthropic Messages API server for tests and benchmarks.

Start it on 127.0.0.1 and point the *real* ``anthropic`` SDK at it::

    from agentcli.testing.fake_anthropic import FakeAnthropic, text, message, tool_use_block

    with FakeAnthropic() as fake:
        fake.queue(
            message(tool_use_block("lookup_order", {"order_id": "A1"})),   # stop_reason -> "tool_use"
            text("Your order shipped."),
        )
        client = anthropic.Anthropic(api_key="test", base_url=fake.url, max_retries=0)
        ...
        assert fake.requests[1]["messages"][-1]["role"] == "user"

Each ``POST /v1/messages`` pops one :class:`Reply` from the FIFO queue (or asks
``handler`` when the queue is empty).  A message reply is served as a JSON
``Message`` when the request body has no ``"stream": true`` and as an SSE stream
(chunked transfer encoding, the same event shapes as the real API) when it does.

Standard library only; imports nothing from ``agentcli`` but the shared server scaffold
``agentcli.testing._http``.

Notes for users
---------------
* Event counting for the fault options (``drop_after``, ``malformed_after``,
  ``stall_after``) counts *every* SSE event that the full stream would contain,
  ``ping`` included.  :func:`stream_events` returns that list, so a test can
  compute ``N`` (e.g. "drop right after the first tool-input delta").
* ``handler`` is called from the server's worker threads, possibly concurrently.
* All sleeps (``latency``, ``delay``, ``stall_seconds``) are interrupted by
  :meth:`FakeAnthropic.stop`, so stopping never waits for a stalled stream.
* ``record=False`` keeps no request bodies or headers (long benchmark runs).

Its own process (benchmarks: the server's threads then never share a GIL or a core's
time slice with the process being measured)::

    python -m agentcli.testing.fake_anthropic --serve --latency 0.5 \
        --handler bench/bench_batch.py:scenario --no-record

prints ``http://127.0.0.1:PORT`` as its first stdout line and serves until stdin closes
(the parent exited or closed the pipe) or SIGTERM/SIGINT.  ``--handler`` is
``package.module:function`` or ``path/to/file.py:function``.
"""

from __future__ import annotations

import dataclasses
import json
import uuid
from typing import Any, Callable, Iterable

from ._http import FakeServer, Faults, raw_body
from ._http import split as _split
from .fake_batches import FakeBatches
from .serve import serve_until_stdin_closes

__all__ = [
    "FakeAnthropic",
    "Reply",
    "text_block",
    "tool_use_block",
    "thinking_block",
    "redacted_thinking_block",
    "message",
    "text",
    "error",
    "raw",
    "stream_forever",
    "stream_events",
    "tool_results",
    "ERROR_TYPES",
    "expired",
    "canceled",
]

# Default `error.type` for a status code, as the real API uses them.
ERROR_TYPES: dict[int, str] = {
    400: "invalid_request_error",
    401: "authentication_error",
    402: "billing_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    504: "timeout_error",
    529: "overloaded_error",
}

_AUTO = object()  # sentinel: stop_reason inferred from the blocks


# --------------------------------------------------------------------------- replies


@dataclasses.dataclass
class Reply(Faults):
    """One scripted answer.  Build it with :func:`message`, :func:`text` or :func:`error`."""

    message: dict[str, Any] | None = None  # a full Message body (None for an error reply)
    # streaming faults beyond the shared ones (see `message`)
    omit_message_stop: bool = False
    omit_only_message_stop: bool = False
    batch_result: str | None = None  # "expired" / "canceled": that ending in a Message Batch

    @property
    def is_error(self) -> bool:
        return self.message is None and self.raw is None and self.batch_result is None


def _new_id(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:24]}"


def text_block(text: str) -> dict[str, Any]:
    """A ``text`` content block."""
    return {"type": "text", "text": text}


def tool_use_block(name: str, input: dict[str, Any], id: str | None = None) -> dict[str, Any]:  # noqa: A002
    """A ``tool_use`` content block; ``id`` defaults to a unique ``toolu_...``."""
    return {"type": "tool_use", "id": id or _new_id("toolu"), "name": name, "input": input}


def thinking_block(thinking: str, signature: str) -> dict[str, Any]:
    """A ``thinking`` content block (its ``signature`` arrives as one ``signature_delta`` when streamed)."""
    return {"type": "thinking", "thinking": thinking, "signature": signature}


def redacted_thinking_block(data: str) -> dict[str, Any]:
    """A ``redacted_thinking`` content block (streamed whole in its ``content_block_start``)."""
    return {"type": "redacted_thinking", "data": data}


def _estimate_tokens(blocks: Iterable[dict[str, Any]]) -> int:
    chars = 0
    for b in blocks:
        if b["type"] == "text":
            chars += len(b["text"])
        elif b["type"] == "thinking":
            chars += len(b["thinking"])
        elif b["type"] == "tool_use":
            chars += len(json.dumps(b["input"]))
    return max(1, chars // 4)


def message(
    *blocks: dict[str, Any],
    stop_reason: Any = _AUTO,
    usage: dict[str, int] | None = None,
    model: str = "claude-test",
    stop_sequence: str | None = None,
    headers: dict[str, str] | None = None,
    delay: float = 0.0,
    drop_after: int | None = None,
    malformed_after: int | None = None,
    stall_after: int | None = None,
    stall_seconds: float = 30.0,
    omit_message_stop: bool = False,
    omit_only_message_stop: bool = False,
    stream_error: tuple[str, str] | None = None,
) -> Reply:
    """A whole assistant message.

    ``stop_reason`` defaults to ``"tool_use"`` when a ``tool_use`` block is present,
    else ``"end_turn"``; pass it explicitly to override (``None`` gives a JSON
    message with ``"stop_reason": null``).  ``usage`` overrides any of
    ``input_tokens`` / ``output_tokens`` / ``cache_creation_input_tokens`` /
    ``cache_read_input_tokens``.

    Fault options (streaming requests; N counts every SSE event, pings included,
    see :func:`stream_events`):

    * ``drop_after=N``: send N events, then close the socket without finishing the
      chunked body.  Non-streaming: close the connection without any response.
    * ``malformed_after=N``: after N events insert an event whose data is not JSON
      (the rest of the stream follows normally).  Non-streaming: a 200 whose body
      is truncated JSON.
    * ``stall_after=N``: after N events go silent for ``stall_seconds``, then close
      the socket (no terminating chunk).  Non-streaming: no response for
      ``stall_seconds``, then close.
    * ``omit_only_message_stop=True``: everything but the final ``message_stop``, then the
      body ends cleanly (a stop reason arrived, yet the message never completed).
    * ``omit_message_stop=True``: everything except the final ``message_delta`` and
      ``message_stop``; the body then ends cleanly.
    * ``stream_error=(type, message)``: an ``event: error`` instead of the
      ``message_delta`` / ``message_stop``; the body then ends cleanly.

    ``delay`` adds a per-reply sleep on top of the server's ``latency``.
    """
    blocks_list = [dict(b) for b in blocks]
    for b in blocks_list:
        if not isinstance(b, dict) or "type" not in b:
            raise TypeError(f"not a content block: {b!r}")
    if drop_after is not None and stall_after is not None:
        raise ValueError("use only one of drop_after / stall_after")
    if stop_reason is _AUTO:
        stop_reason = "tool_use" if any(b["type"] == "tool_use" for b in blocks_list) else "end_turn"
    u = {
        "input_tokens": 10,
        "output_tokens": _estimate_tokens(blocks_list),
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
    }
    u.update(usage or {})
    msg = {
        "id": _new_id("msg"),
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": blocks_list,
        "stop_reason": stop_reason,
        "stop_sequence": stop_sequence,
        "usage": u,
    }
    return Reply(
        message=msg,
        headers=dict(headers or {}),
        delay=delay,
        drop_after=drop_after,
        malformed_after=malformed_after,
        stall_after=stall_after,
        stall_seconds=stall_seconds,
        omit_message_stop=omit_message_stop,
        omit_only_message_stop=omit_only_message_stop,
        stream_error=tuple(stream_error) if stream_error is not None else None,  # type: ignore[arg-type]
    )


def text(s: str, stop_reason: Any = "end_turn", **kw: Any) -> Reply:
    """Shorthand for ``message(text_block(s), stop_reason=..., **kw)``."""
    return message(text_block(s), stop_reason=stop_reason, **kw)


def raw(body: bytes | str | Any, content_type: str = "application/json", status: int = 200, *,
        trickle: float = 0.0, endless: bytes | None = None, endless_every: float | None = None,
        delay: float = 0.0, headers: dict[str, str] | None = None,
        content_length: int | None = None) -> Reply:
    """A reply whose body is exactly ``body``, whatever the request asked for (see
    ``agentcli.testing._http.raw_body`` for the forms and the byte-level faults)."""
    return Reply(status=status, raw=raw_body(body), raw_type=content_type, trickle=trickle,
                 endless=endless, endless_every=endless_every, delay=delay,
                 headers=dict(headers or {}), content_length=content_length)


FOREVER = {  # what stream_forever repeats
    "ping": ("ping", {"type": "ping"}),
    "empty": ("content_block_delta", {"type": "content_block_delta", "index": 0,
                                      "delta": {"type": "text_delta", "text": ""}}),
    "text": ("content_block_delta", {"type": "content_block_delta", "index": 0,
                                     "delta": {"type": "text_delta", "text": "and on "}}),
    "unknown": ("future_event", {"type": "future_event"}),
}


def stream_forever(what: str = "ping", *, every: float | None = None) -> Reply:
    """A stream that starts a message (``message_start``, a text block) and never ends: the
    event ``what`` of :data:`FOREVER` (keep-alive pings, empty text deltas, text deltas, an
    event type the SDK does not know) again and again, every ``every`` s (None: 10 ms; 0: as
    fast as the client reads), until the client leaves."""
    start = stream_events(text("x"))[:2]  # message_start, content_block_start
    name, data = FOREVER[what]
    return raw(b"".join(_sse(n, d) for n, d in start), "text/event-stream",
               endless=_sse(name, data), endless_every=every)


def error(
    status: int,
    message: str = "fake error",
    type: str | None = None,  # noqa: A002
    headers: dict[str, str] | None = None,
    *,
    retry_after: float | None = None,
    delay: float = 0.0,
) -> Reply:
    """An HTTP error with the API's error body ``{"type":"error","error":{"type":..,"message":..}}``.

    ``type`` defaults from the status (see ``ERROR_TYPES``; otherwise ``api_error``).
    ``retry_after`` is a shorthand for ``headers={"retry-after": str(retry_after)}``.
    """
    h = dict(headers or {})
    if retry_after is not None:
        h["retry-after"] = str(retry_after)
    body = {"type": "error", "error": {"type": type or ERROR_TYPES.get(status, "api_error"), "message": message}}
    return Reply(status=status, body=body, headers=h, delay=delay)


def expired() -> Reply:
    """A Message Batches request that ends ``expired`` (live: a 500)."""
    return Reply(status=500, body={"type": "error", "error": {"type": "api_error",
                                                              "message": "fake: expired"}},
                 batch_result="expired")


def canceled() -> Reply:
    """A Message Batches request that ends ``canceled`` (live: a 500)."""
    return Reply(status=500, body={"type": "error", "error": {"type": "api_error",
                                                              "message": "fake: canceled"}},
                 batch_result="canceled")


# --------------------------------------------------------------------------- SSE


def _text_chunks(s: str) -> list[str]:
    # A few chunks: 3 for short texts, ~40-character chunks for long ones.
    return _split(s, max(3, -(-len(s) // 40)))


def stream_events(reply: Reply) -> list[tuple[str, dict[str, Any]]]:
    """The complete, fault-free SSE event list ``[(event_name, data), ...]`` for a message reply.

    Fault options index into this list.
    """
    if reply.message is None:
        raise ValueError("an error reply is not streamed")
    msg = reply.message
    usage = msg["usage"]
    start_msg = {k: v for k, v in msg.items() if k not in ("content", "stop_reason", "stop_sequence", "usage")}
    start_msg.update(
        content=[],
        stop_reason=None,
        stop_sequence=None,
        usage={
            "input_tokens": usage["input_tokens"],
            "cache_creation_input_tokens": usage.get("cache_creation_input_tokens", 0),
            "cache_read_input_tokens": usage.get("cache_read_input_tokens", 0),
            "output_tokens": 1,
        },
    )
    ev: list[tuple[str, dict[str, Any]]] = [("message_start", {"type": "message_start", "message": start_msg})]
    ping = ("ping", {"type": "ping"})
    if not msg["content"]:
        ev.append(ping)
    for index, block in enumerate(msg["content"]):
        t = block["type"]
        deltas: list[dict[str, Any]] = []
        if t == "text":
            start = {"type": "text", "text": ""}
            deltas = [{"type": "text_delta", "text": c} for c in _text_chunks(block["text"])]
        elif t == "tool_use":
            start = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
            raw = json.dumps(block["input"], ensure_ascii=False)
            deltas = [{"type": "input_json_delta", "partial_json": c} for c in _split(raw, max(3, -(-len(raw) // 40)))]
        elif t == "thinking":
            start = {"type": "thinking", "thinking": "", "signature": ""}
            deltas = [{"type": "thinking_delta", "thinking": c} for c in _text_chunks(block["thinking"])]
            deltas.append({"type": "signature_delta", "signature": block["signature"]})
        else:  # redacted_thinking and anything else: whole block in the start event
            start = dict(block)
        ev.append(("content_block_start", {"type": "content_block_start", "index": index, "content_block": start}))
        if index == 0:
            ev.append(ping)
        for d in deltas:
            ev.append(("content_block_delta", {"type": "content_block_delta", "index": index, "delta": d}))
        ev.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
    ev.append(
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": msg["stop_reason"], "stop_sequence": msg["stop_sequence"]},
                "usage": {"output_tokens": usage["output_tokens"]},
            },
        )
    )
    ev.append(("message_stop", {"type": "message_stop"}))
    return ev


def _sse(name: str, data: dict[str, Any]) -> bytes:
    return f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()


_MALFORMED = b'event: content_block_delta\ndata: {"type": "content_block_delta", "index": 0, "delta": {"type": "text_de\n\n'


def _stream_plan(reply: Reply) -> tuple[list[bytes], str]:
    """(encoded events to send, ending) where ending is "clean", "drop" or "stall"."""
    events = stream_events(reply)
    if reply.omit_message_stop or reply.stream_error is not None:
        events = events[:-2]  # drop message_delta + message_stop
    elif reply.omit_only_message_stop:
        events = events[:-1]  # message_delta (with its stop_reason) arrives, message_stop never
    chunks = [_sse(n, d) for n, d in events]
    if reply.stream_error is not None:
        etype, emsg = reply.stream_error
        chunks.append(_sse("error", {"type": "error", "error": {"type": etype, "message": emsg}}))
    if reply.malformed_after is not None:
        chunks.insert(reply.malformed_after, _MALFORMED)
    if reply.drop_after is not None:
        return chunks[: reply.drop_after], "drop"
    if reply.stall_after is not None:
        return chunks[: reply.stall_after], "stall"
    return chunks, "clean"


# --------------------------------------------------------------------------- helpers


def tool_results(request: dict[str, Any]) -> list[dict[str, Any]]:
    """The ``tool_result`` blocks of the last ``user`` message of a recorded request body."""
    for m in reversed(request.get("messages") or []):
        if m.get("role") == "user":
            content = m.get("content")
            if isinstance(content, list):
                return [b for b in content if isinstance(b, dict) and b.get("type") == "tool_result"]
            return []
    return []


# --------------------------------------------------------------------------- server


class FakeAnthropic(FakeServer):
    """A scripted Anthropic Messages API on ``http://127.0.0.1:PORT``.

    Attributes: ``url`` (after :meth:`start`), ``requests`` (parsed JSON bodies of every
    ``POST /v1/messages`` in arrival order), ``request_headers`` (their headers, lower-cased
    names), ``handler`` (``Callable[[dict], Reply]`` used when the queue is empty),
    ``latency`` (seconds slept before answering each request; settable), ``errors``
    (tracebacks of exceptions raised by ``handler``).  Lifecycle, queue and recording come
    from :class:`agentcli.testing._http.FakeServer`.
    """

    name = "FakeAnthropic"
    reply_type = Reply
    routes = ("/v1/messages",)
    request_id_header = "request-id"

    def __init__(self, *, latency: float = 0.0, handler: Callable[[dict[str, Any]], Reply] | None = None,
                 record: bool = True, batch_delay: float = 0.0) -> None:
        super().__init__(latency=latency, handler=handler, record=record)
        self.batches = FakeBatches(self)  # the Message Batches API (agentcli.testing.fake_batches)
        self.batches.delay = batch_delay

    @property
    def batch_delay(self) -> float:
        """Seconds a batch stays in progress (settable)."""
        return self.batches.delay

    @batch_delay.setter
    def batch_delay(self, v: float) -> None:
        self.batches.delay = v

    def _reset_extra(self) -> None:
        self.batches.reset()

    def _serve(self, h: Any) -> None:
        path, _, _ = h.path.partition("?")
        if path.startswith("/v1/messages/batches"):
            length = int(h.headers.get("content-length") or 0)
            raw = h.rfile.read(length) if length else b""
            self.batches.serve_post(h, path, raw)
            return
        super()._serve(h)

    def env(self, api_key: str = "test-key") -> dict[str, str]:
        """Environment variables pointing a subprocess's SDK at this fake."""
        return {"ANTHROPIC_BASE_URL": self.url, "ANTHROPIC_API_KEY": api_key}

    # -- protocol
    def _error_body(self, status: int, msg: str) -> dict[str, Any]:
        return {"type": "error", "error": {"type": ERROR_TYPES.get(status, "api_error"), "message": msg}}

    def _forced_tool(self, body: dict[str, Any]) -> str | None:
        tc = body.get("tool_choice")
        return tc["name"] if isinstance(tc, dict) and tc.get("type") == "tool" and isinstance(tc.get("name"), str) else None

    def _forced_reply(self, name: str, arguments: dict[str, Any]) -> Reply:
        return message(tool_use_block(name, arguments), usage={"input_tokens": 0, "output_tokens": 0})

    def _error_reply(self, status: int, msg: str, headers: dict[str, str]) -> Reply:
        return error(status, msg, headers=headers)

    def _text_reply(self, s: str) -> Reply:
        return text(s)

    models_status = 200  # GET /v1/models answers with this status (agentcli doctor --api)

    def _serve_get(self, h: Any) -> None:
        path, _, query = h.path.partition("?")
        if path.startswith("/v1/messages/batches"):
            self.batches.serve_get(h, path, query)
            return
        if h.path.split("?", 1)[0].rstrip("/") == "/v1/models":
            if self.models_status != 200:
                self._send_json(h, self.models_status, self._error_body(self.models_status, "fake: models"), {})
                return
            self._send_json(h, 200, {"data": [{"type": "model", "id": "claude-sonnet-5-5", "display_name": "fake",
                                               "created_at": "2026-01-01T00:00:00Z"}], "has_more": False,
                                     "first_id": "claude-sonnet-5-5", "last_id": "claude-sonnet-5-5"}, {})
            return
        super()._serve_get(h)

    def _respond(self, h: Any, body: dict[str, Any], reply: Reply) -> None:
        if body.get("stream") is True:
            chunks, ending = _stream_plan(reply)
            self._send_stream(h, reply, chunks, ending)
        else:
            self._send_body(h, reply, json.dumps(reply.message).encode())


# --------------------------------------------------------------------------- own process


def serve(argv: list[str] | None = None) -> None:
    """``python -m agentcli.testing.fake_anthropic --serve ...``: see the module docstring."""

    serve_until_stdin_closes(FakeAnthropic, "python -m agentcli.testing.fake_anthropic", argv)


if __name__ == "__main__":
    # Run the package's copy, not this ``__main__`` one: a handler builds its replies with
    # ``agentcli.testing.fake_anthropic.Reply``, which must be the class the server checks for.
    import importlib

    importlib.import_module("agentcli.testing.fake_anthropic").serve()
