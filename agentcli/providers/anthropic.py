"""The Anthropic Messages API provider (the only module that imports ``anthropic``).

- One ``AsyncAnthropic`` client per process, reused by every question (and every batch task);
  its HTTP client is ``providers.transport.http_client`` (the rate-limit gate, the bounds).
- HTTP-level faults (429 and 529, taken in hand by the gate; 5xx; connection errors before a
  response) are retried by the loop, not the SDK (``max_retries=0``): each retry is a ``Retry``
  event a person sees with its reason and wait (``providers.retry``).
- A stream is read as the SDK's raw events (``messages.create(stream=True)``) and put
  together here (:class:`_Stream`), not by the SDK's accumulator: that one parses every
  tool-input fragment as it comes and raises in the middle of the stream on a fragment that
  is not JSON, so a finished response with a bad tool input could not be told from a cut one.
- Faults *inside* a stream (dropped connection, malformed or out-of-order event, stalled
  stream, no ``message_stop``) surface from the SDK's stream as raw transport, JSON or UTF-8
  errors (anthropic 2.17 on wraps a transport fault in ``APIConnectionError``, taken the same
  way once the stream is open), as our verdict on an event (``_Broken``), or as a message
  whose ``stop_reason`` is None; they become ``IncompleteResponse`` (or a broken response) and the loop retries the
  turn as a fresh request. A stream that brings nothing new for ``--request-timeout`` (pings
  only, empty deltas) or writes more than ``--max-tokens`` allows is cut
  (``bounds.Progress``, ``bounds.OutputBudget``). Only the SDK's own calls are guarded so: an
  exception from our code in ``respond`` is a bug and surfaces as one, never retried.
- A *finished* response (every block closed, a stop reason, ``message_stop``) whose tool input
  is not a JSON object is the model's mistake: the call gets ``input_error`` (an ``is_error``
  result it can correct, never run) and goes back into the history with ``{}`` as its input,
  streaming or not (``bounds.parse_tool_input``).
- The assistant message goes back into the history exactly as received: text, every
  ``tool_use``, ``thinking`` with its signature and ``redacted_thinking``.
- Prompt caching: the tools and system prompt are a stable prefix marked with
  ``cache_control``, and the newest message carries a moving breakpoint so follow-up questions
  read the conversation so far from the cache.
"""

from __future__ import annotations

import copy
import os
from typing import Any, AsyncIterator

import anthropic

from ..errors import ConfigError, IncompleteResponse, ModelAPIError
from ..events import TextDelta
from ..redact import one_line
from .api_errors import (
    Where,
    api_error,
    broken,
    broken_cause,
    is_context_overflow,
    models_answered,
    server_message,
    transport_words,
)
from .base import ModelSettings, ModelTurn, ToolCall
from .bounds import (
    MAX_INPUT_DEPTH,
    InputTooDeep,
    NoProgress,
    OutputBudget,
    Progress,
    depth_exceeds,
    over_the_bound,
    parse_tool_input,
    shown_input,
)
from .endpoint import check_endpoint
from .messages_format import MessagesHistory
from .ratelimit import Gate
from .transport import MALFORMED_BODY, TRANSPORT_FAULTS, http_client, own_bug

_CACHE = {"type": "ephemeral"}
# What reading the SDK's raw event stream raises besides its own errors: transport faults, an
# event's data that is not JSON or UTF-8 (MALFORMED_BODY), and ValueError / TypeError from
# building an event of a shape it does not expect.
_STREAM_FAULTS = (*TRANSPORT_FAULTS, *MALFORMED_BODY, ValueError, TypeError)
_USAGE_FIELDS = ("input_tokens", "output_tokens", "cache_read_input_tokens",
                 "cache_creation_input_tokens")


def _block_to_param(block: Any) -> dict[str, Any]:
    t = block.type
    if t == "text":
        d: dict[str, Any] = {"type": "text", "text": block.text}
        if getattr(block, "citations", None):
            d["citations"] = [c.model_dump(mode="json", exclude_none=True) for c in block.citations]
        return d
    if t == "tool_use":
        # Everything the API sent (e.g. ``caller``), with the input as accumulated. An input
        # that is not an object (a broken server) is the tool layer's to refuse, not a warning.
        d = block.model_dump(mode="json", exclude_none=True, warnings=False)
        d.update(type="tool_use", id=block.id, name=block.name, input=block.input)
        return d
    if t == "thinking":
        return {"type": "thinking", "thinking": block.thinking, "signature": block.signature}
    if t == "redacted_thinking":
        return {"type": "redacted_thinking", "data": block.data}
    # Server tools and future block types: keep them as the API sent them.
    return block.model_dump(mode="json", exclude_none=True, exclude={"parsed_output"})


def _usage(u: Any) -> dict[str, int]:
    if u is None:
        return {}
    return {k: getattr(u, k, None) or 0 for k in _USAGE_FIELDS}


def _problem(msg: Any, budget: OutputBudget) -> str | None:
    """Why ``msg`` (as the SDK built it, unvalidated) is not a Messages API message, or None."""
    content = getattr(msg, "content", None)
    if not isinstance(content, list):
        return f"the content is {type(content).__name__}, not a list of blocks"
    chars = sum(len(v) for b in content for k in ("text", "thinking")
                if isinstance(v := getattr(b, k, None), str))
    if chars > budget.max_chars:
        return f"it holds more text than --max-tokens {budget.max_tokens} allows ({chars} characters)"
    for b in content:
        t = getattr(b, "type", None)
        if not isinstance(t, str):
            return "a content block has no type"
        if t == "text" and not isinstance(getattr(b, "text", None), str):
            return "a text block has no text"
        if t == "tool_use":
            if not (isinstance(getattr(b, "id", None), str) and b.id
                    and isinstance(getattr(b, "name", None), str)):
                return "a tool_use block has no id or name"
            if depth_exceeds(getattr(b, "input", None)):
                return f"a tool input nests deeper than {MAX_INPUT_DEPTH} levels"
        if t == "thinking" and not (isinstance(getattr(b, "thinking", None), str)
                                    and isinstance(getattr(b, "signature", None), str)):
            return "a thinking block has no text or signature"
    if not isinstance(getattr(msg, "stop_reason", None), (str, type(None))):
        return "the stop reason is not a string"
    u = getattr(msg, "usage", None)
    for k in _USAGE_FIELDS:
        v = getattr(u, k, None) if u is not None else None
        if v is not None and (type(v) is not int or not 0 <= v < 2**53):
            return f"usage {k} is not a token count"
    return None


WHERE = Where(label="the Anthropic API", key_env="ANTHROPIC_API_KEY", url_env="ANTHROPIC_BASE_URL",
              not_found_hint="--model and ANTHROPIC_BASE_URL")


class _Broken(Exception):
    """Our verdict on a streamed event: not what the Messages API sends (why, for the line)."""


_INPUT_BLOCKS = ("tool_use", "server_tool_use", "mcp_tool_use")  # blocks whose input streams


class _Stream:
    """One streamed response put together from the SDK's raw events, as the SDK's own
    accumulator does, with every field checked (the events are built unvalidated), each tool
    input kept whole and parsed only once the response is finished, the output counted
    against ``--max-tokens`` and progress told from pings and empty events."""

    def __init__(self, budget: OutputBudget) -> None:
        self.msg: Any = None
        self.blocks: list[Any] = []
        self.at: dict[int, int] = {}  # the API's block index -> position in ``blocks``
        self.parts: dict[int, list[str]] = {}  # text, thinking or input JSON of each block
        self.closed: set[int] = set()
        self.stopped = False  # message_stop arrived
        self.budget = budget
        self.input_errors: dict[int, str] = {}  # position -> what the model hears

    def _block(self, ev: Any) -> int:
        i = getattr(ev, "index", None)
        if type(i) is not int or i not in self.at:
            raise _Broken(f"a {ev.type} event for a content block that never started ({i!r})")
        return self.at[i]

    def see(self, ev: Any) -> tuple[str, bool]:
        """Apply one event: (text to show, whether it brought anything new)."""
        t = getattr(ev, "type", None)
        if not isinstance(t, str):
            raise _Broken("an event has no type")
        if self.msg is None and t != "message_start":
            raise _Broken(f"a {t[:40]!r} event came before message_start")
        if t == "message_start":
            if self.msg is not None:
                raise _Broken("a second message_start")
            m = getattr(ev, "message", None)
            if not isinstance(getattr(m, "content", None), list):
                raise _Broken("message_start carries no message with a list of content blocks")
            self.msg = m
            for b in m.content:  # blocks already there (none, from the real API)
                self.blocks.append(b)
            return "", True
        over = None
        text, new = "", False
        if t == "content_block_start":
            i, b = getattr(ev, "index", None), getattr(ev, "content_block", None)
            if type(i) is not int or i in self.at or not isinstance(getattr(b, "type", None), str):
                raise _Broken(f"a content_block_start with index {i!r} is not a new block")
            self.at[i] = len(self.blocks)
            self.blocks.append(b)
            first = getattr(b, "text", None) if b.type == "text" else \
                getattr(b, "thinking", None) if b.type == "thinking" else None
            self.parts[self.at[i]] = [first] if isinstance(first, str) and first else []
            over = self.budget.add(len(first) if isinstance(first, str) else 0)
            new = True
        elif t == "content_block_delta":
            pos = self._block(ev)
            d = getattr(ev, "delta", None)
            dt = getattr(d, "type", None)
            kind = getattr(self.blocks[pos], "type", None)
            piece: Any = None
            if dt == "text_delta":
                piece = getattr(d, "text", None)
                if not isinstance(piece, str):
                    raise _Broken("a text delta carries no text")
                if kind == "text":
                    text = piece
            elif dt == "input_json_delta":
                piece = getattr(d, "partial_json", None)
                if not isinstance(piece, str):
                    raise _Broken("a tool input delta carries no JSON text")
                if kind not in _INPUT_BLOCKS:
                    piece = None
            elif dt == "thinking_delta":
                piece = getattr(d, "thinking", None)
                if not isinstance(piece, str):
                    raise _Broken("a thinking delta carries no text")
                if kind != "thinking":
                    piece = None
            elif dt == "signature_delta":
                sig = getattr(d, "signature", None)
                if not isinstance(sig, str):
                    raise _Broken("a signature delta carries no signature")
                if kind == "thinking":
                    self.blocks[pos].signature = sig
                new = bool(sig)
            elif dt == "citations_delta":
                if kind == "text" and getattr(d, "citation", None) is not None:
                    b = self.blocks[pos]
                    b.citations = [*(getattr(b, "citations", None) or []), d.citation]
                    new = True
            if piece:
                self.parts[pos].append(piece)
                new = True
            over = self.budget.add(len(piece) if isinstance(piece, str) else 0)
        elif t == "content_block_stop":
            self.closed.add(self._block(ev))
            over = self.budget.add(0)
            new = True
        elif t == "message_delta":
            d, u = getattr(ev, "delta", None), getattr(ev, "usage", None)
            stop = getattr(d, "stop_reason", None)
            if not isinstance(stop, (str, type(None))):
                raise _Broken("the stop reason is not a string")
            self.msg.stop_reason = stop
            self.msg.stop_sequence = getattr(d, "stop_sequence", None)
            if u is not None and self.msg.usage is not None:
                for k in _USAGE_FIELDS:  # totals so far: they overwrite, as the SDK does
                    v = getattr(u, k, None)
                    if v is not None:
                        setattr(self.msg.usage, k, v)
            over = self.budget.add(0)
            new = True
        elif t == "message_stop":
            self.stopped = True
            new = True
        else:  # a future event type: read past it, but it is no progress and counts
            over = self.budget.add(0)
        if over is not None:
            raise _Broken(over)
        return text, new

    def message(self) -> Any:
        """The finished message: texts joined, each tool input parsed (an input that is not a
        JSON object is the model's mistake: ``input_errors``). Raises ``_Broken``."""
        for pos, b in enumerate(self.blocks):
            kind = getattr(b, "type", None)
            joined = "".join(self.parts.get(pos, []))
            if kind == "text":
                b.text = joined
            elif kind == "thinking":
                b.thinking = joined
            elif kind == "tool_use":
                name = getattr(b, "name", None)
                if pos not in self.closed:
                    raise _Broken(f"the input of tool call {name!r} never closed")
                if not joined.strip():  # no deltas: the input the block started with, if any
                    start = getattr(b, "input", None)
                    b.input = start if isinstance(start, dict) else {}
                    continue
                try:
                    value, problem = parse_tool_input(joined, str(name or ""), "input")
                except InputTooDeep as e:
                    raise _Broken(str(e)) from None
                if problem is None:
                    b.input = value
                else:
                    b.input = {}  # what goes back into the history: a valid, empty input
                    self.input_errors[pos] = problem
                    self.parts[pos] = [shown_input(joined)]
        self.msg.content = self.blocks
        return self.msg

    def shown(self, pos: int) -> str:
        return "".join(self.parts.get(pos, []))


def _incomplete(e: BaseException) -> IncompleteResponse:
    cause = broken_cause(e)
    return IncompleteResponse(f"the model's response broke: {cause}" if cause else
                              f"the model's response broke off: {transport_words(e)}")



def _not_reached(e: Exception) -> Exception:
    """What an ``APIConnectionError`` outside a stream is: a bug of ours the SDK wrapped (our
    HTTP hooks raised it), or the transport fault in the API's terms."""
    bug = own_bug(e)
    return bug if bug is not None else api_error(anthropic, e, WHERE)

class AnthropicProvider(MessagesHistory):
    name = "anthropic"

    def __init__(self, model: str, model_settings: ModelSettings, registry: Any, system_prompt: str):
        key = os.environ.get("ANTHROPIC_API_KEY") or os.environ.get("ANTHROPIC_AUTH_TOKEN")
        if not key:
            raise ConfigError("the anthropic provider needs ANTHROPIC_API_KEY; set it, or use "
                              "--provider offline for the offline workflow")
        check_endpoint("ANTHROPIC_API_KEY" if os.environ.get("ANTHROPIC_API_KEY")
                       else "ANTHROPIC_AUTH_TOKEN", key, "ANTHROPIC_BASE_URL",
                       "https://api.anthropic.com")
        self.model = model
        self.model_settings = model_settings
        self.gate = Gate()
        self.client = anthropic.AsyncAnthropic(
            api_key=os.environ.get("ANTHROPIC_API_KEY") or None,
            max_retries=0,  # the loop retries, visibly (a Retry event per wait)
            timeout=model_settings.timeout,
            # every request waits at the shared rate-limit gate; every answer feeds it and is bounded
            http_client=http_client(anthropic, model_settings.timeout, self.gate),
        )
        tools = copy.deepcopy(registry.schemas())
        if tools:
            tools[-1]["cache_control"] = _CACHE
        self.tools = tools
        self.system = [{"type": "text", "text": system_prompt, "cache_control": _CACHE}]

    # -- history ------------------------------------------------------------------------
    def _messages(self, history: list[Any]) -> list[Any]:
        """The request's messages: the history, with a cache breakpoint on the newest block."""
        if not history:
            return history
        msgs = list(history)
        last = dict(msgs[-1])
        content = last["content"]
        if isinstance(content, list) and content:
            content = list(content)
            content[-1] = {**content[-1], "cache_control": _CACHE}
            last["content"] = content
            msgs[-1] = last
        return msgs

    # -- one model call -----------------------------------------------------------------
    def request_params(self, history: list[Any]) -> dict[str, Any]:
        """The Messages request body of the next call on ``history`` (what ``respond`` sends;
        a Message Batches request's ``params``)."""
        return {"model": self.model, "max_tokens": self.model_settings.max_tokens,
                "system": self.system, "tools": self.tools, "messages": self._messages(history)}

    _params = request_params

    def turn_from_message(self, message: Any) -> ModelTurn:
        """The turn of a whole Messages API message given as JSON (a batch result's
        ``message``), checked as a non-streamed answer is; raises ModelAPIError (broken, or
        incomplete without a stop reason) as ``respond`` would."""
        if not isinstance(message, dict):
            raise broken(WHERE, "a batch result's message is not a JSON object")
        if depth_exceeds(message, MAX_INPUT_DEPTH + 8):
            raise broken(WHERE, f"a tool input nests deeper than {MAX_INPUT_DEPTH} levels")
        try:
            msg = anthropic.types.Message.model_validate(message)
        except (ValueError, TypeError):  # pydantic's ValidationError is a ValueError
            raise broken(WHERE, "a batch result's message is not a Messages API message") from None
        return self._finished(msg, OutputBudget(self.model_settings.max_tokens))

    def _finished(self, msg: Any, budget: OutputBudget, acc: "_Stream | None" = None) -> ModelTurn:
        why = _problem(msg, budget)
        if why is not None:
            raise broken(WHERE, why)
        if msg.stop_reason is None:
            raise IncompleteResponse("the model's response ended without a stop reason "
                                     "(the stream was cut short)")
        return self._turn(msg, acc if acc is not None else _Stream(budget))

    async def respond(self, history: list[Any], *, stream: bool) -> AsyncIterator[TextDelta | ModelTurn]:
        params = self._params(history)
        opened = False  # True once the response has started
        budget = OutputBudget(self.model_settings.max_tokens)
        acc = _Stream(budget)
        try:
            if stream:
                s = await self.client.messages.create(**params, stream=True)
                opened = True
                progress = Progress(self.model_settings.timeout)
                try:
                    while True:
                        try:
                            ev = await progress.next(s)
                        except StopAsyncIteration:
                            break
                        except (*_STREAM_FAULTS, NoProgress) as e:  # the SDK's reading, not ours
                            raise _incomplete(e) from None
                        try:
                            text, new = acc.see(ev)
                        except _Broken as e:
                            raise broken(WHERE, str(e)) from None
                        if new:
                            progress.moved()
                        if text:
                            yield TextDelta(text)
                finally:
                    progress.close()
                    await s.close()
                if not acc.stopped:
                    raise IncompleteResponse("the model's response stream ended without message_stop")
                try:
                    msg = acc.message()
                except _Broken as e:
                    raise broken(WHERE, str(e)) from None
            else:
                try:
                    msg = await self.client.messages.create(**params)
                except MALFORMED_BODY as e:  # a body that is not JSON (or UTF-8) at all
                    raise _incomplete(e) from None
        except anthropic.APIStatusError as e:
            if is_context_overflow(anthropic, e):
                yield ModelTurn("model_context_window_exceeded", "", [], {}, None,
                                note=server_message(e) or None)
                return
            if opened:
                # An ``error`` event inside a 200 stream (e.g. overloaded): retry the turn.
                body = getattr(e, "body", None)
                err = body.get("error") if isinstance(body, dict) else None
                etype = err.get("type") if isinstance(err, dict) else None
                if etype in ("overloaded_error", "api_error", "rate_limit_error", "timeout_error"):
                    raise ModelAPIError(f"the Anthropic API failed mid-response ({etype})",
                                        kind=etype.removesuffix("_error"), retryable=True) from None
            raise api_error(anthropic, e, WHERE) from None
        except anthropic.APIResponseValidationError:
            raise broken(WHERE, "not a Messages API response") from None
        except anthropic.APIConnectionError as e:
            bug = own_bug(e)  # the SDK wraps whatever our HTTP hooks raise
            if bug is not None:
                raise bug
            if opened:
                raise _incomplete(e) from None
            raise api_error(anthropic, e, WHERE) from None
        except anthropic.AnthropicError as e:
            raise _incomplete(e) from None
        yield self._finished(msg, budget, acc)

    def _turn(self, msg: Any, acc: _Stream) -> ModelTurn:
        content = [_block_to_param(b) for b in msg.content]
        text = "".join(b.text for b in msg.content if b.type == "text")
        calls = []
        for pos, b in enumerate(msg.content):
            if b.type != "tool_use":
                continue
            problem = acc.input_errors.get(pos)
            if problem is None and not isinstance(b.input, dict):  # a whole body's input
                problem = (f"the input of this {b.name} call must be a JSON object, not "
                           f"{type(b.input).__name__}; nothing was run: call {b.name} again "
                           "with a JSON object")
                content[pos]["input"] = {}
            if problem is None:
                calls.append(ToolCall(b.id, b.name, b.input))
            else:
                shown = acc.shown(pos) if pos in acc.input_errors else b.input
                calls.append(ToolCall(b.id, b.name, shown, input_error=problem))
        over_the_bound(calls)
        return ModelTurn(
            stop_reason=msg.stop_reason,
            text=text,
            tool_calls=calls,
            usage=_usage(msg.usage),
            message={"role": "assistant", "content": content},
        )

    _batches: "MessageBatches | None" = None

    @property
    def batches(self) -> "MessageBatches":
        """The Message Batches API (its own client, built on first use)."""
        if self._batches is None:
            self._batches = MessageBatches(self)
        return self._batches

    def forced_params(self, system: str, user: str, tool: dict[str, Any], *,
                      model: str | None = None) -> dict[str, Any]:
        """The request body of :meth:`forced_call` (a Message Batches request's ``params``)."""
        return {"model": model or self.model, "max_tokens": self.model_settings.max_tokens,
                "system": [{"type": "text", "text": system}],
                "tools": [{"name": tool["name"], "description": tool.get("description", ""),
                           "input_schema": tool["input_schema"], "strict": True}],
                "tool_choice": {"type": "tool", "name": tool["name"]},
                "messages": [{"role": "user", "content": user}]}

    async def forced_call(self, system: str, user: str, tool: dict[str, Any], *,
                          model: str | None = None) -> ModelTurn:
        """One non-streamed request whose answer must call ``tool`` (``tool_choice`` forced,
        the tool strict): the grounding checks' model layer."""
        params = self.forced_params(system, user, tool, model=model)
        budget = OutputBudget(self.model_settings.max_tokens)
        try:
            msg = await self.client.messages.create(**params)
        except MALFORMED_BODY as e:
            raise _incomplete(e) from None
        except anthropic.APIResponseValidationError:
            raise broken(WHERE, "not a Messages API response") from None
        except anthropic.APIConnectionError as e:
            raise _not_reached(e) from None
        except anthropic.APIStatusError as e:
            raise api_error(anthropic, e, WHERE) from None
        except anthropic.AnthropicError as e:
            raise _incomplete(e) from None
        why = _problem(msg, budget)
        if why is not None:
            raise broken(WHERE, why)
        return self._turn(msg, _Stream(budget))

    async def check_api(self) -> str:
        """GET /v1/models (lists models: no tokens, no cost)."""
        try:
            page = await self.client.models.list(limit=1)
        except anthropic.APIConnectionError as e:
            raise _not_reached(e) from None
        except anthropic.APIError as e:
            raise api_error(anthropic, e, WHERE) from None
        except MALFORMED_BODY:
            raise broken(WHERE, "not a models list") from None
        return models_answered(page)

    async def aclose(self) -> None:
        await self.client.close()
        if self._batches is not None:
            await self._batches.aclose()


MAX_RESULTS_BYTES = 8 * 1024 ** 3  # one batch's results file (a batch holds up to 256 MB of requests)


def _batch_summary(b: Any) -> dict[str, Any]:
    """A message batch as plain JSON: id, processing_status, request_counts, times."""
    counts = getattr(b, "request_counts", None)
    out: dict[str, Any] = {"id": getattr(b, "id", None),
                           "processing_status": getattr(b, "processing_status", None),
                           "request_counts": {k: getattr(counts, k, 0) or 0 for k in
                                              ("processing", "succeeded", "errored", "canceled",
                                               "expired")}}
    for k in ("created_at", "ended_at", "expires_at", "cancel_initiated_at"):
        v = getattr(b, k, None)
        out[k] = v.timestamp() if hasattr(v, "timestamp") else None
    if not isinstance(out["id"], str) or not isinstance(out["processing_status"], str):
        raise broken(WHERE, "not a message batch")
    return out


class MessageBatches:
    """The Message Batches API of the Anthropic provider, in plain JSON: ``create``,
    ``retrieve``, ``results`` (an async iterator of ``(custom_id, kind, value)``: a
    ``ModelTurn`` checked as a live answer is, for ``succeeded``), ``cancel``, ``list``. Its own
    client (a results file is far bigger than a message: :data:`MAX_RESULTS_BYTES`) and its own
    rate-limit gate (the batch endpoints' limits are not the Messages API's). SDK errors are
    ``ModelAPIError`` (retryable or not), as everywhere."""

    def __init__(self, provider: AnthropicProvider) -> None:
        self.provider = provider
        self.gate = Gate()
        timeout = provider.model_settings.timeout
        self.client = anthropic.AsyncAnthropic(
            api_key=os.environ.get("ANTHROPIC_API_KEY") or None, max_retries=0, timeout=timeout,
            http_client=http_client(anthropic, timeout, self.gate, MAX_RESULTS_BYTES))

    async def _call(self, fn: Any, *args: Any, **kw: Any) -> Any:
        try:
            return await fn(*args, **kw)
        except anthropic.APIConnectionError as e:
            raise _not_reached(e) from None
        except anthropic.APIError as e:
            raise api_error(anthropic, e, WHERE) from None
        except (*MALFORMED_BODY, ValueError, TypeError):
            raise broken(WHERE, "not a message batch") from None

    async def create(self, requests: list[dict[str, Any]]) -> dict[str, Any]:
        return _batch_summary(await self._call(self.client.messages.batches.create,
                                               requests=requests))

    async def retrieve(self, batch_id: str) -> dict[str, Any]:
        return _batch_summary(await self._call(self.client.messages.batches.retrieve, batch_id))

    async def cancel(self, batch_id: str) -> dict[str, Any]:
        return _batch_summary(await self._call(self.client.messages.batches.cancel, batch_id))

    async def list(self, limit: int = 100) -> list[dict[str, Any]]:
        """The newest batches of the workspace (one page)."""
        page = await self._call(self.client.messages.batches.list, limit=limit)
        out = []
        for b in getattr(page, "data", None) or []:
            try:
                out.append(_batch_summary(b))
            except ModelAPIError:
                continue
        return out

    async def results(self, batch_id: str) -> AsyncIterator[tuple[str, str, Any]]:
        """Each result of an ended batch, in the file's order: ``(custom_id, "succeeded",
        ModelTurn)``, ``(custom_id, "broken", ModelAPIError)`` (a message that is not one),
        ``(custom_id, "errored", (error type, message))``, ``(custom_id, "canceled" or
        "expired", None)``. A line that is not a result is skipped."""
        decoder = await self._call(self.client.messages.batches.results, batch_id)
        it = decoder.__aiter__()
        while True:
            try:
                r = await it.__anext__()
            except StopAsyncIteration:
                return
            except anthropic.APIError as e:
                raise api_error(anthropic, e, WHERE) from None
            except (*_STREAM_FAULTS, RecursionError) as e:
                raise ModelAPIError(f"the results of batch {one_line(batch_id, 80)} broke off: "
                                    f"{transport_words(e)}", kind="connection",
                                    retryable=True) from None
            cid = getattr(r, "custom_id", None)
            res = getattr(r, "result", None)
            kind = getattr(res, "type", None)
            if not isinstance(cid, str) or not isinstance(kind, str):
                continue
            if kind == "succeeded":
                m = getattr(res, "message", None)
                try:
                    d = m.model_dump(mode="json", warnings=False) if hasattr(m, "model_dump") else m
                    yield cid, kind, self.provider.turn_from_message(d)
                except ModelAPIError as e:
                    yield cid, "broken", e
                except (ValueError, TypeError, RecursionError):
                    yield cid, "broken", broken(WHERE, "a batch result's message is not a message")
            elif kind == "errored":
                err = getattr(getattr(res, "error", None), "error", None)
                etype, emsg = getattr(err, "type", None), getattr(err, "message", None)
                yield cid, kind, (etype if isinstance(etype, str) else "api_error",
                                  emsg if isinstance(emsg, str) else "")
            elif kind in ("canceled", "expired"):
                yield cid, kind, None

    async def aclose(self) -> None:
        await self.client.close()

