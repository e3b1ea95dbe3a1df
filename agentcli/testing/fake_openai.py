"""A fake OpenAI-compatible Chat Completions server for tests and benchmarks.

Start it on 127.0.0.1 and point the *real* ``openai`` SDK at it::

    from agentcli.testing.fake_openai import FakeOpenAI, completion, text, tool_call

    with FakeOpenAI() as fake:
        fake.queue(
            completion(tool_call("get_order_status", {"order_code": "GH56JK78MN"})),  # -> tool_calls
            text("Your order is waiting for payment."),
        )
        client = openai.OpenAI(api_key="x", base_url=fake.base_url, max_retries=0)
        ...
        assert fake.requests[1]["messages"][-1]["role"] == "tool"

Each ``POST /v1/chat/completions`` (or ``/chat/completions``) pops one :class:`Reply` from the
FIFO queue (or asks ``handler`` when the queue is empty). A completion reply is served as a
JSON ``chat.completion`` when the request has no ``"stream": true``, and as an SSE stream of
``chat.completion.chunk`` objects ending in ``data: [DONE]`` when it does. ``GET /v1/models``
lists one model.

How a reply is streamed (the shapes real servers send, including the awkward ones):

* the first chunk carries ``delta.role``; text arrives in a few ``delta.content`` pieces;
* each tool call starts with a fragment carrying ``index``, ``id``, ``type`` and
  ``function.name`` (arguments ``""``), then ``function.arguments`` arrives in ``fragments``
  pieces carrying only ``index``;
* ``interleave=True``: the calls' fragments alternate (call 0, call 1, call 0, ...) instead of
  one call after the other;
* ``whole_calls=True``: every call arrives complete in a single chunk (llama.cpp, Ollama);
* ``omit_index=True``: no ``index`` key in the tool-call deltas (some servers): a fragment with
  an ``id`` starts a call, one without continues the last call (not combinable with
  ``interleave``);
* the last choice chunk has an empty delta and ``finish_reason``; when the request asked for
  ``stream_options: {"include_usage": true}`` (and the reply has ``send_usage=True``), every
  chunk carries ``"usage": null`` and one more chunk ``{"choices": [], "usage": {...}}``
  follows, as the OpenAI API does;
* ``chunks=[...]``: send exactly these chunk bodies (dicts; ``id``/``object``/``created``/
  ``model`` are filled in when missing) instead of generating them, for scripts a test wants
  to spell out fragment by fragment.

Faults (streaming; N counts the ``data:`` lines of the full stream, ``[DONE]`` included, see
:func:`stream_chunks`):

* ``drop_after=N``: send N lines, then close the socket without ending the chunked body.
  Non-streaming: close the connection without a response.
* ``malformed_after=N``: insert a line whose data is not JSON after N lines.
  Non-streaming: a 200 whose body is truncated JSON.
* ``stall_after=N``: go silent after N lines for ``stall_seconds``, then close.
  Non-streaming: no response for ``stall_seconds``.
* ``omit_finish_reason=True``: the final chunk carries ``finish_reason: null`` (the stream
  still ends with ``[DONE]``). Non-streaming: ``finish_reason: null``.
* ``omit_done=True``: no ``data: [DONE]`` line; the body ends cleanly.
* ``stream_error=(type, message)``: a ``data: {"error": {...}}`` line instead of the final
  chunk(s); the body then ends cleanly.

Standard library only; imports nothing from ``agentcli`` but the shared server scaffold
``agentcli.testing._http``. ``handler`` runs on
the server's worker threads, possibly concurrently. :meth:`FakeOpenAI.stop` interrupts every
sleep, so stopping never waits for a stalled stream.
"""

from __future__ import annotations

import dataclasses
import json
import time
import uuid
from typing import Any, Callable

from ._http import FakeServer, Faults, raw_body
from ._http import split as _split

__all__ = [
    "FakeOpenAI",
    "Reply",
    "tool_call",
    "completion",
    "text",
    "error",
    "raw",
    "stream_forever",
    "stream_chunks",
    "tool_messages",
    "ERROR_TYPES",
]

# `error.type` for a status code, as the OpenAI API uses them.
ERROR_TYPES: dict[int, str] = {
    400: "invalid_request_error",
    401: "invalid_request_error",
    403: "invalid_request_error",
    404: "invalid_request_error",
    429: "rate_limit_exceeded",
    500: "server_error",
    502: "server_error",
    503: "server_error",
}

_AUTO = object()  # sentinel: finish_reason inferred from the tool calls


@dataclasses.dataclass
class Reply(Faults):
    """One scripted answer. Build it with :func:`completion`, :func:`text` or :func:`error`."""

    message: dict[str, Any] | None = None  # the assistant message (None for an error reply)
    finish_reason: str | None = None
    usage: dict[str, Any] | None = None
    model: str = "fake-model"
    send_usage: bool = True
    # stream shapes
    fragments: int = 3
    interleave: bool = False
    whole_calls: bool = False
    omit_index: bool = False
    chunks: list[dict[str, Any]] | None = None
    # faults beyond the shared ones
    omit_finish_reason: bool = False
    omit_done: bool = False

    @property
    def is_error(self) -> bool:
        return self.message is None and self.chunks is None and self.raw is None


def _new_id(prefix: str) -> str:
    return f"{prefix}{uuid.uuid4().hex[:24]}"


def tool_call(name: str, arguments: Any, id: str | None = None) -> dict[str, Any]:  # noqa: A002
    """One ``tool_calls`` entry. ``arguments``: a dict (JSON-encoded here) or a raw string
    (sent verbatim, e.g. invalid JSON); ``id`` defaults to a unique ``call_...``."""
    raw = arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)
    return {"id": id or _new_id("call_"), "type": "function", "function": {"name": name, "arguments": raw}}


def completion(
    *calls: dict[str, Any],
    content: str | None = None,
    finish_reason: Any = _AUTO,
    usage: dict[str, Any] | None = None,
    model: str = "fake-model",
    refusal: str | None = None,
    send_usage: bool = True,
    headers: dict[str, str] | None = None,
    delay: float = 0.0,
    fragments: int = 3,
    interleave: bool = False,
    whole_calls: bool = False,
    omit_index: bool = False,
    chunks: list[dict[str, Any]] | None = None,
    drop_after: int | None = None,
    malformed_after: int | None = None,
    stall_after: int | None = None,
    stall_seconds: float = 30.0,
    omit_finish_reason: bool = False,
    omit_done: bool = False,
    stream_error: tuple[str, str] | None = None,
) -> Reply:
    """An assistant message with optional ``content`` and tool ``calls`` (see :func:`tool_call`).

    ``finish_reason`` defaults to ``"tool_calls"`` when there are calls, else ``"stop"``.
    ``usage`` overrides ``prompt_tokens`` / ``completion_tokens`` (``total_tokens`` follows) and
    may add ``prompt_tokens_details``; ``send_usage=False`` never sends usage (a server that
    ignores ``stream_options``). See the module docstring for the stream shapes and faults.
    """
    if drop_after is not None and stall_after is not None:
        raise ValueError("use only one of drop_after / stall_after")
    if omit_index and interleave:
        raise ValueError("omit_index cannot be combined with interleave (no index to tell calls apart)")
    for c in calls:
        if not isinstance(c, dict) or "function" not in c:
            raise TypeError(f"not a tool call: {c!r}")
    if finish_reason is _AUTO:
        finish_reason = "tool_calls" if calls else "stop"
    msg: dict[str, Any] = {"role": "assistant", "content": content}
    if refusal is not None:
        msg["refusal"] = refusal
    if calls:
        msg["tool_calls"] = [json.loads(json.dumps(c)) for c in calls]
    out_chars = len(content or "") + sum(len(c["function"]["arguments"]) for c in calls)
    u: dict[str, Any] = {"prompt_tokens": 20, "completion_tokens": max(1, out_chars // 4)}
    u.update(usage or {})
    u["total_tokens"] = u["prompt_tokens"] + u["completion_tokens"]
    return Reply(message=msg, finish_reason=finish_reason, usage=u, model=model,
                 headers=dict(headers or {}), delay=delay, send_usage=send_usage,
                 fragments=fragments, interleave=interleave, whole_calls=whole_calls,
                 omit_index=omit_index, chunks=chunks, drop_after=drop_after,
                 malformed_after=malformed_after, stall_after=stall_after,
                 stall_seconds=stall_seconds, omit_finish_reason=omit_finish_reason,
                 omit_done=omit_done,
                 stream_error=tuple(stream_error) if stream_error is not None else None)  # type: ignore[arg-type]


def text(s: str, finish_reason: Any = "stop", **kw: Any) -> Reply:
    """Shorthand for ``completion(content=s, finish_reason=..., **kw)``."""
    return completion(content=s, finish_reason=finish_reason, **kw)


def raw(body: bytes | str | Any, content_type: str = "application/json", status: int = 200, *,
        trickle: float = 0.0, endless: bytes | None = None, endless_every: float | None = None,
        delay: float = 0.0, headers: dict[str, str] | None = None,
        content_length: int | None = None) -> Reply:
    """A reply whose body is exactly ``body``, whatever the request asked for (see
    ``agentcli.testing._http.raw_body`` for the forms and the byte-level faults)."""
    return Reply(status=status, raw=raw_body(body), raw_type=content_type, trickle=trickle,
                 endless=endless, endless_every=endless_every, delay=delay,
                 headers=dict(headers or {}), content_length=content_length)


def _chunk_event(delta: dict[str, Any] | None) -> bytes:
    choices = [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": None}]
    return ("data: " + json.dumps({"id": "chatcmpl-forever", "object": "chat.completion.chunk",
                                    "created": 0, "model": "fake-model", "choices": choices})
            + "\n\n").encode()


FOREVER = {  # what stream_forever repeats
    "keepalive": b": keep-alive\n\n",  # an SSE comment (what many servers send to idle clients)
    "empty": _chunk_event({}),  # a chunk with an empty delta
    "no_choices": _chunk_event(None),  # a chunk with no choices at all
    "text": _chunk_event({"content": "and on "}),
}


def stream_forever(what: str = "keepalive", *, every: float | None = None) -> Reply:
    """A stream that starts (a role chunk) and never ends: :data:`FOREVER`'s ``what`` again and
    again, every ``every`` s (None: 10 ms; 0: as fast as the client reads)."""
    return raw(_chunk_event({"role": "assistant", "content": ""}), "text/event-stream",
               endless=FOREVER[what], endless_every=every)


def error(status: int, message: str = "fake error", type: str | None = None,  # noqa: A002
          code: str | None = None, headers: dict[str, str] | None = None, *,
          retry_after: float | None = None, delay: float = 0.0) -> Reply:
    """An HTTP error with the API's body ``{"error": {"message", "type", "param", "code"}}``."""
    h = dict(headers or {})
    if retry_after is not None:
        h["retry-after"] = str(retry_after)
    body = {"error": {"message": message, "type": type or ERROR_TYPES.get(status, "server_error"),
                      "param": None, "code": code}}
    return Reply(status=status, body=body, headers=h, delay=delay)


# --------------------------------------------------------------------------- SSE


def _call_deltas(reply: Reply) -> list[dict[str, Any]]:
    """The tool-call deltas, one per chunk, in the order the stream sends them."""
    calls = (reply.message or {}).get("tool_calls") or []
    per_call: list[list[dict[str, Any]]] = []
    for i, c in enumerate(calls):
        fn = c["function"]
        if reply.whole_calls:
            seq = [{"index": i, "id": c["id"], "type": "function",
                    "function": {"name": fn["name"], "arguments": fn["arguments"]}}]
        else:
            seq = [{"index": i, "id": c["id"], "type": "function",
                    "function": {"name": fn["name"], "arguments": ""}}]
            seq += [{"index": i, "function": {"arguments": p}}
                    for p in _split(fn["arguments"], reply.fragments)]
        if reply.omit_index:
            for d in seq:
                d.pop("index")
        per_call.append(seq)
    if not reply.interleave:
        return [d for seq in per_call for d in seq]
    out: list[dict[str, Any]] = []
    for k in range(max((len(s) for s in per_call), default=0)):
        out.extend(seq[k] for seq in per_call if k < len(seq))
    return out


def stream_chunks(reply: Reply, *, include_usage: bool = False) -> list[dict[str, Any] | str]:
    """The complete, fault-free list of ``data:`` payloads for a reply (``"[DONE]"`` last).

    Fault options index into this list.
    """
    if reply.is_error:
        raise ValueError("an error reply is not streamed")
    cid, created = _new_id("chatcmpl-"), int(time.time())
    with_usage = include_usage and reply.send_usage

    def chunk(delta: dict[str, Any] | None, finish: str | None = None) -> dict[str, Any]:
        c: dict[str, Any] = {"id": cid, "object": "chat.completion.chunk", "created": created,
                             "model": reply.model,
                             "choices": [{"index": 0, "delta": delta or {}, "logprobs": None,
                                          "finish_reason": finish}]}
        if with_usage:
            c["usage"] = None
        return c

    if reply.chunks is not None:
        out: list[dict[str, Any] | str] = []
        for c in reply.chunks:
            full = {"id": cid, "object": "chat.completion.chunk", "created": created, "model": reply.model}
            full.update(c)
            out.append(full)
    else:
        msg = reply.message or {}
        out = [chunk({"role": "assistant", "content": ""})]
        for piece in _split(msg.get("content") or "", max(3, -(-len(msg.get("content") or "") // 40))):
            out.append(chunk({"content": piece}))
        if msg.get("refusal"):
            out.append(chunk({"refusal": msg["refusal"]}))
        for d in _call_deltas(reply):
            out.append(chunk({"tool_calls": [d]}))
        out.append(chunk({}, None if reply.omit_finish_reason else reply.finish_reason))
    if with_usage and reply.usage is not None:
        out.append({"id": cid, "object": "chat.completion.chunk", "created": created,
                    "model": reply.model, "choices": [], "usage": reply.usage})
    out.append("[DONE]")
    return out


def _line(payload: dict[str, Any] | str) -> bytes:
    data = payload if isinstance(payload, str) else json.dumps(payload, ensure_ascii=False)
    return f"data: {data}\n\n".encode()


_MALFORMED = b'data: {"id": "chatcmpl-x", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"cont\n\n'


def _stream_plan(reply: Reply, include_usage: bool) -> tuple[list[bytes], str]:
    """(encoded lines to send, ending) where ending is "clean", "drop" or "stall"."""
    payloads = stream_chunks(reply, include_usage=include_usage)
    if reply.stream_error is not None:
        # Everything up to (not including) the final choice chunk, then the error.
        last_choice = max(i for i, p in enumerate(payloads) if isinstance(p, dict) and p.get("choices"))
        etype, emsg = reply.stream_error
        payloads = payloads[:last_choice] + [{"error": {"message": emsg, "type": etype, "param": None,
                                                         "code": None}}]
    elif reply.omit_done:
        payloads = payloads[:-1]
    lines = [_line(p) for p in payloads]
    if reply.malformed_after is not None:
        lines.insert(reply.malformed_after, _MALFORMED)
    if reply.drop_after is not None:
        return lines[: reply.drop_after], "drop"
    if reply.stall_after is not None:
        return lines[: reply.stall_after], "stall"
    return lines, "clean"


def _completion_body(reply: Reply) -> dict[str, Any]:
    body: dict[str, Any] = {
        "id": _new_id("chatcmpl-"), "object": "chat.completion", "created": int(time.time()),
        "model": reply.model,
        "choices": [{"index": 0, "message": reply.message, "logprobs": None,
                     "finish_reason": None if reply.omit_finish_reason else reply.finish_reason}],
    }
    if reply.send_usage and reply.usage is not None:
        body["usage"] = reply.usage
    return body


# --------------------------------------------------------------------------- helpers


def tool_messages(request: dict[str, Any]) -> list[dict[str, Any]]:
    """The trailing ``role: "tool"`` messages of a recorded request body, in order."""
    out: list[dict[str, Any]] = []
    for m in reversed(request.get("messages") or []):
        if m.get("role") != "tool":
            break
        out.append(m)
    return out[::-1]


# --------------------------------------------------------------------------- server


def _err_body(status: int, msg: str) -> dict[str, Any]:
    return {"error": {"message": msg, "type": ERROR_TYPES.get(status, "server_error"), "param": None,
                      "code": None}}


class FakeOpenAI(FakeServer):
    """A scripted OpenAI-compatible Chat Completions API on ``http://127.0.0.1:PORT``.

    Attributes: ``url`` (the server root, after :meth:`start`), ``base_url`` (``url + "/v1"``,
    what ``OPENAI_BASE_URL`` should be), ``requests`` (parsed JSON bodies of every chat
    completions POST in arrival order), ``request_headers`` (lower-cased names), ``paths``
    (the request paths), ``handler`` (``Callable[[dict], Reply]`` used when the queue is empty),
    ``latency`` (seconds slept before each answer; settable), ``errors`` (tracebacks raised by
    ``handler``).  Lifecycle, queue and recording come from
    :class:`agentcli.testing._http.FakeServer`.
    """

    name = "FakeOpenAI"
    reply_type = Reply
    routes = ("/v1/chat/completions", "/chat/completions")
    request_id_header = "x-request-id"

    def __init__(self, *, latency: float = 0.0, handler: Callable[[dict[str, Any]], Reply] | None = None) -> None:
        self.paths: list[str] = []
        super().__init__(latency=latency, handler=handler)

    @property
    def base_url(self) -> str:
        return self.url + "/v1"

    def env(self, api_key: str | None = None) -> dict[str, str]:
        """Environment variables pointing a subprocess's SDK at this fake (key only if given)."""
        out = {"OPENAI_BASE_URL": self.base_url}
        if api_key is not None:
            out["OPENAI_API_KEY"] = api_key
        return out

    # -- protocol
    def _record_extra(self, h: Any, path: str) -> None:
        self.paths.append(path)

    def _reset_extra(self) -> None:
        self.paths.clear()

    def _error_body(self, status: int, msg: str) -> dict[str, Any]:
        return _err_body(status, msg)

    def _error_reply(self, status: int, msg: str, headers: dict[str, str]) -> Reply:
        return error(status, msg, headers=headers)

    def _text_reply(self, s: str) -> Reply:
        return text(s)

    def _forced_tool(self, body: dict[str, Any]) -> str | None:
        """A named function, or ``required`` with exactly one tool offered."""
        tc, tools = body.get("tool_choice"), body.get("tools")
        if tc == "required" and isinstance(tools, list) and len(tools) == 1 and isinstance(tools[0], dict):
            fn = tools[0].get("function")
        else:
            fn = tc.get("function") if isinstance(tc, dict) and tc.get("type") == "function" else None
        return fn["name"] if isinstance(fn, dict) and isinstance(fn.get("name"), str) else None

    def _forced_reply(self, name: str, arguments: dict[str, Any]) -> Reply:
        return completion(tool_call(name, arguments), usage={"prompt_tokens": 0, "completion_tokens": 0})

    def _serve_get(self, h: Any) -> None:
        path = h.path.split("?", 1)[0].rstrip("/")
        if path in ("/v1/models", "/models"):
            self._send_json(h, 200, {"object": "list", "data": [
                {"id": "fake-model", "object": "model", "created": 0, "owned_by": "fake"}]}, {})
            return
        super()._serve_get(h)

    def _respond(self, h: Any, body: dict[str, Any], reply: Reply) -> None:
        if body.get("stream") is True:
            opts = body.get("stream_options")
            include_usage = isinstance(opts, dict) and opts.get("include_usage") is True
            lines, ending = _stream_plan(reply, include_usage)
            self._send_stream(h, reply, lines, ending)
            return
        if reply.chunks is not None:
            raise ValueError("a reply scripted with chunks= is for streaming requests only")
        self._send_body(h, reply, json.dumps(_completion_body(reply)).encode())
