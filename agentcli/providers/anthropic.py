"""The Anthropic Messages API provider (the only module that imports ``anthropic``).

- One ``AsyncAnthropic`` client per process, reused by every question (and every batch task);
  its HTTP client is ``providers.transport.http_client`` (the rate-limit gate, the bounds).
- HTTP-level faults (429 and 529, taken in hand by the gate; 5xx; connection errors before a
  response) are retried by the loop, not the SDK (``max_retries=0``): each retry is a ``Retry``
  event a person sees with its reason and wait (``providers.retry``).
- Faults *inside* a stream (dropped connection, malformed or out-of-order event, stalled
  stream, no ``message_stop``) surface from the SDK's stream as raw transport, JSON or UTF-8
  errors, as what its event accumulator raises (:data:`_ACCUMULATOR_FAULTS`), or as a message
  whose ``stop_reason`` is None; they become ``IncompleteResponse`` and the loop retries the
  turn as a fresh request. Only the SDK's own calls are guarded so: an exception from our code
  in ``respond`` is a bug and surfaces as one, never retried as a broken response.
- The assistant message goes back into the history exactly as received: text, every
  ``tool_use``, ``thinking`` with its signature and ``redacted_thinking``.
- Prompt caching: the tools and system prompt are a stable prefix marked with
  ``cache_control``, and the newest message carries a moving breakpoint so follow-up questions
  read the conversation so far from the cache.
"""

from __future__ import annotations

import copy
import json
import os
from typing import Any, AsyncIterator

import anthropic

from ..errors import ConfigError, IncompleteResponse, ModelAPIError
from ..events import TextDelta
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
from .bounds import MAX_INPUT_DEPTH, depth_exceeds, over_the_bound
from .messages_format import MessagesHistory
from .ratelimit import Gate
from .transport import MALFORMED_BODY, TRANSPORT_FAULTS, http_client, own_bug

_CACHE = {"type": "ephemeral"}
# What the SDK's stream raises on a malformed or out-of-order event, besides transport and JSON
# errors: its accumulator works on unvalidated models (``lib/streaming/_messages.py``). Seen
# against the fake server: AssertionError (no message_start before the end), IndexError and
# TypeError (a delta for a block index that does not exist or is not a number),
# AttributeError (a null message, block, delta or usage), ValueError (a tool input's JSON the
# partial parser refuses, bytes that are not UTF-8), RuntimeError (documented: an event
# before message_start; RecursionError is one too).
_ACCUMULATOR_FAULTS = (AssertionError, AttributeError, IndexError, RuntimeError, TypeError,
                       ValueError)
_STREAM_FAULTS = (*TRANSPORT_FAULTS, *MALFORMED_BODY, *_ACCUMULATOR_FAULTS)
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


def _strict_json(raw: str) -> Any:
    """``raw`` parsed strictly (no NaN/Infinity); ValueError when it is not complete JSON."""
    def no_constant(name: str) -> Any:
        raise ValueError(f"{name} is not JSON")

    try:
        return json.loads(raw, parse_constant=no_constant)
    except RecursionError:
        raise ValueError("nested too deeply") from None


def _problem(msg: Any) -> str | None:
    """Why ``msg`` (as the SDK built it, unvalidated) is not a Messages API message, or None."""
    content = getattr(msg, "content", None)
    if not isinstance(content, list):
        return f"the content is {type(content).__name__}, not a list of blocks"
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


class _ToolInputs:
    """What a stream said about each tool_use block: its input JSON and whether it closed."""

    def __init__(self) -> None:
        self.parts: dict[int, list[str]] = {}
        self.closed: set[int] = set()

    def see(self, ev: Any) -> None:
        t = ev.type
        if t == "content_block_delta" and getattr(ev.delta, "type", None) == "input_json_delta":
            self.parts.setdefault(ev.index, []).append(ev.delta.partial_json)
        elif t == "content_block_stop":
            self.closed.add(ev.index)

    def problem(self, msg: Any) -> str | None:
        """Replace each streamed tool input by its strict parse; why not, when one is broken."""
        for i, b in enumerate(msg.content):
            if b.type != "tool_use":
                continue
            if i not in self.closed:
                return f"the input of tool call {b.name!r} never closed"
            raw = "".join(p for p in self.parts.get(i, []) if isinstance(p, str))
            try:
                value = _strict_json(raw) if raw.strip() else {}
            except ValueError:
                return f"the input of tool call {b.name!r} is not complete JSON"
            if not isinstance(value, dict):
                return f"the input of tool call {b.name!r} is not a JSON object"
            if depth_exceeds(value):
                return f"a tool input nests deeper than {MAX_INPUT_DEPTH} levels"
            b.input = value
        return None


def _incomplete(e: BaseException) -> IncompleteResponse:
    cause = broken_cause(e)
    return IncompleteResponse(f"the model's response broke: {cause}" if cause else
                              f"the model's response broke off: {transport_words(e)}")


class AnthropicProvider(MessagesHistory):
    name = "anthropic"

    def __init__(self, model: str, model_settings: ModelSettings, registry: Any, system_prompt: str):
        key = os.environ.get("ANTHROPIC_API_KEY") or os.environ.get("ANTHROPIC_AUTH_TOKEN")
        if not key:
            raise ConfigError("the anthropic provider needs ANTHROPIC_API_KEY; set it, or use "
                              "--provider offline for the offline workflow")
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
    def _params(self, history: list[Any]) -> dict[str, Any]:
        return {"model": self.model, "max_tokens": self.model_settings.max_tokens,
                "system": self.system, "tools": self.tools, "messages": self._messages(history)}

    async def respond(self, history: list[Any], *, stream: bool) -> AsyncIterator[TextDelta | ModelTurn]:
        params = self._params(history)
        opened = False  # True once the response has started
        stopped = not stream  # a stream is complete only once message_stop has arrived
        inputs = _ToolInputs()
        try:
            if stream:
                async with self.client.messages.stream(**params) as s:
                    opened = True
                    events = s.__aiter__()
                    while True:
                        try:
                            ev = await events.__anext__()
                        except StopAsyncIteration:
                            break
                        except _STREAM_FAULTS as e:  # the SDK's own reading, nothing of ours
                            raise _incomplete(e) from None
                        inputs.see(ev)
                        if ev.type == "text":
                            if isinstance(ev.text, str):
                                yield TextDelta(ev.text)
                        elif ev.type == "message_stop":
                            stopped = True
                    try:
                        msg = await s.get_final_message()
                    except _STREAM_FAULTS as e:
                        raise _incomplete(e) from None
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
        if not stopped:
            raise IncompleteResponse("the model's response stream ended without message_stop")
        why = _problem(msg)
        if why is None and stream:
            why = inputs.problem(msg)
        if why is not None:
            raise broken(WHERE, why)
        if msg.stop_reason is None:
            raise IncompleteResponse("the model's response ended without a stop reason "
                                     "(the stream was cut short)")
        yield self._turn(msg)

    def _turn(self, msg: Any) -> ModelTurn:
        content = [_block_to_param(b) for b in msg.content]
        text = "".join(b.text for b in msg.content if b.type == "text")
        calls = [ToolCall(b.id, b.name, b.input) for b in msg.content if b.type == "tool_use"]
        over_the_bound(calls)
        return ModelTurn(
            stop_reason=msg.stop_reason,
            text=text,
            tool_calls=calls,
            usage=_usage(msg.usage),
            message={"role": "assistant", "content": content},
        )

    async def check_api(self) -> str:
        """GET /v1/models (lists models: no tokens, no cost)."""
        try:
            page = await self.client.models.list(limit=1)
        except anthropic.APIConnectionError as e:
            bug = own_bug(e)
            if bug is not None:
                raise bug
            raise api_error(anthropic, e, WHERE) from None
        except anthropic.APIError as e:
            raise api_error(anthropic, e, WHERE) from None
        except MALFORMED_BODY:
            raise broken(WHERE, "not a models list") from None
        return models_answered(page)

    async def aclose(self) -> None:
        await self.client.close()

