"""The Anthropic Messages API provider (the only module that imports ``anthropic``).

- One ``AsyncAnthropic`` client per process, reused by every question (and every batch task).
- HTTP-level faults (429 with ``retry-after``, 5xx, 529, connection errors before a response)
  are retried by the SDK's own machinery (``max_retries = --retries``).
- Faults *inside* a stream (dropped connection, malformed event, stalled stream, no
  ``message_stop``) surface as raw transport/JSON errors or as a message whose ``stop_reason``
  is None; they become ``IncompleteResponse`` and the loop retries the turn as a fresh request.
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

from .. import ratelimit
from ..errors import ConfigError, IncompleteResponse, ModelAPIError
from ..events import TextDelta
from . import ModelTurn, ToolCall
from .messages_format import MessagesHistory

_CACHE = {"type": "ephemeral"}


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
    return {
        "input_tokens": int(getattr(u, "input_tokens", 0) or 0),
        "output_tokens": int(getattr(u, "output_tokens", 0) or 0),
        "cache_read_input_tokens": int(getattr(u, "cache_read_input_tokens", 0) or 0),
        "cache_creation_input_tokens": int(getattr(u, "cache_creation_input_tokens", 0) or 0),
    }


def _api_error(e: Exception, retries: int) -> ModelAPIError:
    after = f" after {retries} retries" if retries else ""
    if isinstance(e, anthropic.AuthenticationError):
        return ModelAPIError("the Anthropic API rejected the API key (401): check ANTHROPIC_API_KEY",
                             kind="authentication")
    if isinstance(e, anthropic.PermissionDeniedError):
        return ModelAPIError("the Anthropic API refused access (403): check the key's permissions",
                             kind="permission")
    if isinstance(e, anthropic.NotFoundError):
        return ModelAPIError("the Anthropic API answered 404: check --model and ANTHROPIC_BASE_URL",
                             kind="not_found")
    if isinstance(e, anthropic.RateLimitError):
        return ModelAPIError(f"rate limited by the Anthropic API (429){after}; wait a minute or "
                             "lower batch --concurrency", kind="rate_limited")
    if isinstance(e, anthropic.APIStatusError) and e.status_code == 529:
        return ModelAPIError(f"the Anthropic API is overloaded (529){after}; try again shortly",
                             kind="overloaded")
    if isinstance(e, anthropic.APIStatusError) and e.status_code >= 500:
        return ModelAPIError(f"the Anthropic API failed ({e.status_code}){after}; try again shortly",
                             kind="server_error")
    if isinstance(e, anthropic.BadRequestError):
        return ModelAPIError(f"the Anthropic API refused the request (400): {_short(e)}",
                             kind="bad_request")
    if isinstance(e, anthropic.APIStatusError):
        return ModelAPIError(f"the Anthropic API answered {e.status_code}: {_short(e)}",
                             kind="api_error")
    if isinstance(e, anthropic.APITimeoutError):
        return ModelAPIError(f"the Anthropic API did not answer in time{after}; check the network "
                             "or raise --request-timeout", kind="timeout")
    if isinstance(e, anthropic.APIConnectionError):
        return ModelAPIError(f"cannot reach the Anthropic API{after}; check the network and "
                             "ANTHROPIC_BASE_URL", kind="connection")
    return ModelAPIError(f"the Anthropic API failed ({type(e).__name__})", kind="api_error")


def _short(e: Exception) -> str:
    body = getattr(e, "body", None)
    msg = None
    if isinstance(body, dict):
        err = body.get("error")
        if isinstance(err, dict):
            msg = err.get("message")
    msg = str(msg or getattr(e, "message", "") or type(e).__name__)
    return " ".join(msg.split())[:200]


def _error_type(e: Exception) -> str | None:
    body = getattr(e, "body", None)
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        return body["error"].get("type")
    return None


def _is_context_overflow(e: Exception) -> bool:
    return isinstance(e, anthropic.BadRequestError) and (
        "prompt is too long" in _short(e).lower() or "context window" in _short(e).lower())


class AnthropicProvider(MessagesHistory):
    name = "anthropic"

    def __init__(self, settings: Any, registry: Any, system_prompt: str):
        key = os.environ.get("ANTHROPIC_API_KEY") or os.environ.get("ANTHROPIC_AUTH_TOKEN")
        if not key:
            raise ConfigError("the anthropic provider needs ANTHROPIC_API_KEY; set it, or use "
                              "--provider offline for the offline workflow")
        self.model = settings.model
        self.max_tokens = settings.max_tokens
        self.retries = settings.retries
        self.gate = ratelimit.Gate()
        self.client = anthropic.AsyncAnthropic(
            api_key=os.environ.get("ANTHROPIC_API_KEY") or None,
            max_retries=settings.retries,
            timeout=settings.request_timeout,
            # every request waits at the shared rate-limit gate; every answer feeds it
            http_client=anthropic.DefaultAsyncHttpxClient(event_hooks=ratelimit.event_hooks(self)),
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
        return {"model": self.model, "max_tokens": self.max_tokens, "system": self.system,
                "tools": self.tools, "messages": self._messages(history)}

    async def respond(self, history: list[Any], *, stream: bool) -> AsyncIterator[TextDelta | ModelTurn]:
        params = self._params(history)
        opened = False  # True once the response has started: the SDK no longer retries after that
        stopped = not stream  # a stream is complete only once message_stop has arrived
        try:
            if stream:
                async with self.client.messages.stream(**params) as s:
                    opened = True
                    async for ev in s:
                        if ev.type == "text":
                            yield TextDelta(ev.text)
                        elif ev.type == "message_stop":
                            stopped = True
                    msg = await s.get_final_message()
            else:
                msg = await self.client.messages.create(**params)
        except anthropic.APIStatusError as e:
            if _is_context_overflow(e):
                yield ModelTurn("model_context_window_exceeded", "", [], {}, None)
                return
            if opened:
                # An ``error`` event inside a 200 stream (e.g. overloaded): retry the turn.
                etype = _error_type(e)
                if etype in ("overloaded_error", "api_error", "rate_limit_error", "timeout_error"):
                    raise ModelAPIError(f"the Anthropic API failed mid-response ({etype})",
                                        kind=etype.removesuffix("_error"), retryable=True) from None
            raise _api_error(e, 0 if opened else self.retries) from None
        except anthropic.APIConnectionError as e:
            if opened:
                raise IncompleteResponse(f"the model's response stream broke ({type(e).__name__})") from None
            raise _api_error(e, self.retries) from None
        except (anthropic.AnthropicError, ValueError, RuntimeError, OSError, AssertionError) as e:
            # Raw transport errors (httpx2), malformed JSON in an event, an out-of-order stream:
            # the response is incomplete and nothing of it may run.
            raise IncompleteResponse(f"the model's response stream broke ({type(e).__name__})") from None
        except Exception as e:
            # Once the response has started, anything the SDK raises while reading it (a raw
            # transport error, an event that does not fit the message so far) means the
            # response is incomplete: nothing of it runs, the turn is retried.
            if opened or type(e).__module__.split(".")[0] in ("httpx", "httpx2", "httpcore", "anyio", "h11"):
                raise IncompleteResponse(f"the model's response stream broke ({type(e).__name__})") from None
            raise
        if not stopped:
            raise IncompleteResponse("the model's response stream ended without message_stop")
        if msg.stop_reason is None:
            raise IncompleteResponse("the model's response ended without a stop reason "
                                     "(the stream was cut short)")
        yield self._turn(msg)

    def _turn(self, msg: Any) -> ModelTurn:
        content = [_block_to_param(b) for b in msg.content]
        text = "".join(b.text for b in msg.content if b.type == "text")
        calls = [ToolCall(b.id, b.name, b.input) for b in msg.content if b.type == "tool_use"]
        return ModelTurn(
            stop_reason=msg.stop_reason,
            text=text,
            tool_calls=calls,
            usage=_usage(msg.usage),
            message={"role": "assistant", "content": content},
        )

    async def aclose(self) -> None:
        await self.client.close()
