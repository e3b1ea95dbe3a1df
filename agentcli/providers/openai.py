"""The OpenAI-compatible Chat Completions provider (the only module that imports ``openai``).

For local and self-hosted models (Ollama, vLLM, llama.cpp's server, LM Studio) as well as the
OpenAI API itself, behind the same protocol as ``providers.anthropic``:

- The SDK is imported when the provider is built, after the settings are checked, so a
  configuration error (exit 3) is reported without paying for the import.
- ``OPENAI_BASE_URL`` / ``OPENAI_API_KEY`` are honoured; the key is optional (local servers need
  none: the SDK gets a placeholder). ``--model`` is required: there is no sensible default.
- One ``AsyncOpenAI`` client per process; HTTP-level faults before a response (429, 5xx,
  connection errors) are retried by the SDK (``max_retries = --retries``), faults inside a
  stream (dropped, stalled, malformed, no ``finish_reason``) become ``IncompleteResponse`` and
  the loop retries the turn as a fresh request.
- History format: ``{"role": "user"}``, the assistant message with its ``tool_calls`` as
  received, then one ``{"role": "tool", "tool_call_id": ...}`` message per call in call order.
  The format has no ``is_error`` flag: a failed call's content starts with ``ERROR: ``.
- Streamed tool calls arrive in fragments and are accumulated per ``index`` (or, for servers
  that omit it, by ``id`` / position); nothing is decided before ``finish_reason`` arrives.
  Arguments that are not a JSON object at the end become ``ToolCall.input_error``: the loop
  answers such a call with the error and never runs it. Because some servers re-parse the
  arguments of the history when rendering their chat template, such a call goes back into the
  history with ``"{}"`` as arguments (its error result says what was wrong).
- ``finish_reason`` -> loop status: ``tool_calls`` -> ``tool_use``, ``stop`` -> ``end_turn``
  (or ``tool_use`` when the message carries complete tool calls: some servers say ``stop``
  there), ``length`` -> ``max_tokens``, ``content_filter`` -> ``refusal``; anything else is
  passed through (the loop stops and asks a person to review).
- Usage is asked for with ``stream_options: {include_usage: true}`` and reported in the
  Anthropic shape (``input_tokens`` excludes cached prompt tokens, which are
  ``cache_read_input_tokens``); a server that sends none gives an empty usage.
"""

from __future__ import annotations

import json
import os
import secrets
from typing import Any, AsyncIterator
from urllib.parse import urlsplit

from .. import ratelimit
from ..errors import ConfigError, IncompleteResponse, ModelAPIError
from ..events import TextDelta
from . import ModelTurn, ToolCall

PLACEHOLDER_KEY = "not-needed"
ERROR_PREFIX = "ERROR: "
MAX_SHOWN_ARGS = 2000  # characters of invalid arguments kept for the trace

STOP_MAP = {
    "tool_calls": "tool_use",
    "function_call": "tool_use",  # the legacy name some servers still send
    "stop": "end_turn",
    "length": "max_tokens",
    "content_filter": "refusal",
}

_CONTEXT_HINTS = ("context_length_exceeded", "context length", "context window", "context size",
                  "maximum context", "exceed_context", "too many tokens", "prompt is too long")


# --------------------------------------------------------------------------- helpers

def _server_label(base_url: str | None) -> str:
    """``host:port`` of the server for messages (never the path, query or credentials)."""
    if not base_url:
        return "api.openai.com"
    try:
        parts = urlsplit(base_url)
        host = parts.hostname or "?"
        return f"{host}:{parts.port}" if parts.port else host
    except ValueError:
        return "the configured server"


def _short(e: Exception) -> str:
    body = getattr(e, "body", None)
    msg = None
    if isinstance(body, dict):
        err = body.get("error", body)
        if isinstance(err, dict):
            msg = err.get("message")
        elif isinstance(err, str):
            msg = err
    msg = str(msg or getattr(e, "message", "") or type(e).__name__)
    return " ".join(msg.split())[:200]


def _error_code(e: Exception) -> str:
    body = getattr(e, "body", None)
    parts = [str(getattr(e, "code", "") or ""), str(getattr(e, "type", "") or "")]
    if isinstance(body, dict):
        err = body.get("error", body)
        if isinstance(err, dict):
            parts += [str(err.get("code") or ""), str(err.get("type") or "")]
    return " ".join(parts).lower()


def _is_context_overflow(openai: Any, e: Exception) -> bool:
    if not isinstance(e, openai.BadRequestError):
        return False
    text = f"{_error_code(e)} {_short(e)}".lower()
    return any(h in text for h in _CONTEXT_HINTS)


def _usage(u: Any) -> dict[str, int]:
    """OpenAI usage -> the Anthropic-shaped counts the rest of agentcli adds up."""
    if u is None:
        return {}

    def get(obj: Any, name: str) -> Any:
        return obj.get(name) if isinstance(obj, dict) else getattr(obj, name, None)

    prompt = int(get(u, "prompt_tokens") or 0)
    details = get(u, "prompt_tokens_details")
    cached = int((get(details, "cached_tokens") if details is not None else 0) or 0)
    cached = min(cached, prompt)
    return {
        "input_tokens": prompt - cached,
        "output_tokens": int(get(u, "completion_tokens") or 0),
        "cache_read_input_tokens": cached,
        "cache_creation_input_tokens": 0,
    }


def _tool_schema(s: dict[str, Any]) -> dict[str, Any]:
    return {"type": "function",
            "function": {"name": s["name"], "description": s.get("description", ""),
                         "parameters": s.get("input_schema") or {"type": "object", "properties": {}}}}


class _Calls:
    """Accumulates streamed tool-call fragments.

    Keyed by ``index`` when the server sends one. Without ``index``: a fragment whose ``id`` is
    new starts a call, a fragment with a known ``id`` continues that call, and a fragment with no
    ``id`` continues the most recent call.
    """

    def __init__(self) -> None:
        self._slots: dict[Any, dict[str, Any]] = {}
        self._by_id: dict[str, Any] = {}
        self._last: Any = None
        self._n = 0

    def add(self, index: Any, id: Any, name: Any, arguments: Any) -> None:  # noqa: A002
        if isinstance(index, int) and not isinstance(index, bool):
            key: Any = ("i", index)
        elif id and id in self._by_id:
            key = self._by_id[id]
        elif self._last is not None and (not id or not self._slots[self._last]["id"]):
            key = self._last
        else:
            key = ("n", self._n)
        slot = self._slots.get(key)
        if slot is None:
            slot = self._slots[key] = {"id": None, "name": "", "args": [], "seq": self._n}
            self._n += 1
        if id and not slot["id"]:
            slot["id"] = str(id)
            self._by_id[str(id)] = key
        if name:
            name = str(name)
            # Most servers send the name once; some repeat it whole in every fragment.
            if not slot["name"]:
                slot["name"] = name
            elif name != slot["name"]:
                slot["name"] += name
        if arguments is not None:
            slot["args"].append(arguments if isinstance(arguments, str)
                                else json.dumps(arguments, ensure_ascii=False))
        self._last = key

    def __bool__(self) -> bool:
        return bool(self._slots)

    def finish(self) -> tuple[list[ToolCall], list[dict[str, Any]]]:
        """(ToolCalls for the loop, ``tool_calls`` entries for the history), in call order."""
        ordered = sorted(self._slots.items(),
                         key=lambda kv: (0, kv[0][1]) if kv[0][0] == "i" else (1, kv[1]["seq"]))
        calls: list[ToolCall] = []
        entries: list[dict[str, Any]] = []
        seen: set[str] = set()
        for _, slot in ordered:
            cid = slot["id"]
            if not cid or cid in seen:  # missing or duplicated ids would break the pairing
                cid = f"call_{secrets.token_hex(12)}"
            seen.add(cid)
            name = slot["name"]
            raw = "".join(slot["args"])
            value, problem = _parse_arguments(raw, name)
            if problem is None:
                calls.append(ToolCall(cid, name, value))
                history_args = raw if raw.strip() else "{}"
            else:
                shown = raw if len(raw) <= MAX_SHOWN_ARGS else raw[:MAX_SHOWN_ARGS] + " [truncated]"
                calls.append(ToolCall(cid, name, shown, input_error=problem))
                history_args = "{}"
            entries.append({"id": cid, "type": "function",
                            "function": {"name": name, "arguments": history_args}})
        return calls, entries


def _parse_arguments(raw: str, name: str) -> tuple[Any, str | None]:
    """(arguments, None) or (None, the error the model hears)."""
    if not name:
        return None, ("the tool call had no function name; nothing was run: call one of the "
                      "tools by name")
    if not raw.strip():
        return {}, None
    try:
        value = json.loads(raw)
    except ValueError as e:
        return None, (f"the arguments of this {name} call are not valid JSON ({getattr(e, 'msg', e)} "
                      f"at character {getattr(e, 'pos', '?')}); nothing was run: call {name} again "
                      "with complete JSON arguments")
    if not isinstance(value, dict):
        return None, (f"the arguments of this {name} call must be a JSON object, not "
                      f"{type(value).__name__}; nothing was run: call {name} again with a JSON object")
    return value, None


def _stop_reason(finish: str, has_calls: bool, refusal: bool, text: str) -> str:
    if finish == "stop" and has_calls:
        return "tool_use"  # complete tool calls under "stop" (some servers): run them
    if finish == "stop" and refusal and not text:
        return "refusal"
    return STOP_MAP.get(finish, finish)


# --------------------------------------------------------------------------- provider

class OpenAIProvider:
    name = "openai"

    def __init__(self, settings: Any, registry: Any, system_prompt: str):
        base_url = os.environ.get("OPENAI_BASE_URL") or None
        key = os.environ.get("OPENAI_API_KEY") or None
        if not settings.model:
            raise ConfigError("the openai provider needs a model name: pass --model (e.g. --model "
                              "qwen2.5:7b for Ollama) or set AGENTCLI_MODEL")
        if base_url is None and key is None:
            raise ConfigError("the openai provider needs OPENAI_BASE_URL (your server, e.g. "
                              "http://localhost:11434/v1 for Ollama) or OPENAI_API_KEY (for "
                              "api.openai.com)")
        if base_url is not None and not base_url.lower().startswith(("http://", "https://")):
            raise ConfigError("OPENAI_BASE_URL must be an http:// or https:// URL, e.g. "
                              "http://localhost:11434/v1")
        self.model = settings.model
        self.max_tokens = settings.max_tokens
        self.retries = settings.retries
        self.where = _server_label(base_url)
        import openai

        self._sdk = openai
        self.gate = ratelimit.Gate()
        self.client = openai.AsyncOpenAI(
            api_key=key or PLACEHOLDER_KEY,
            base_url=base_url,
            max_retries=settings.retries,
            timeout=settings.request_timeout,
            # every request waits at the shared rate-limit gate; every answer feeds it
            http_client=openai.DefaultAsyncHttpxClient(event_hooks=ratelimit.event_hooks(self)),
        )
        self.tools = [_tool_schema(s) for s in registry.schemas()]
        self.system = {"role": "system", "content": system_prompt}

    # -- history ------------------------------------------------------------------------
    def add_user_text(self, history: list[Any], text: str) -> None:
        if history and history[-1].get("role") == "user":
            # Keep roles alternating for chat templates that insist on it.
            prev = history[-1]["content"]
            history[-1] = {"role": "user", "content": f"{prev}\n\n{text}" if prev else text}
        else:
            history.append({"role": "user", "content": text})

    def add_assistant(self, history: list[Any], turn: ModelTurn) -> None:
        history.append(turn.message)

    def add_tool_results(self, history: list[Any], results: list[tuple[ToolCall, Any, bool]]) -> None:
        for call, result, is_error in results:
            content = result if isinstance(result, str) else json.dumps(result, ensure_ascii=False)
            if is_error:
                content = ERROR_PREFIX + content
            history.append({"role": "tool", "tool_call_id": call.id, "content": content})

    # -- one model call -----------------------------------------------------------------
    def _params(self, history: list[Any], stream: bool) -> dict[str, Any]:
        p: dict[str, Any] = {"model": self.model, "max_tokens": self.max_tokens,
                             "messages": [self.system, *history]}
        if self.tools:
            p["tools"] = self.tools
        if stream:
            p["stream"] = True
            p["stream_options"] = {"include_usage": True}
        return p

    async def respond(self, history: list[Any], *, stream: bool) -> AsyncIterator[TextDelta | ModelTurn]:
        openai = self._sdk
        params = self._params(history, stream)
        opened = False  # True once the response has started: the SDK no longer retries after that
        text: list[str] = []
        refusal: list[str] = []
        calls = _Calls()
        finish: str | None = None
        usage: Any = None
        try:
            if stream:
                s = await self.client.chat.completions.create(**params)
                opened = True
                try:
                    async for chunk in s:
                        if getattr(chunk, "usage", None) is not None:
                            usage = chunk.usage
                        for choice in chunk.choices or []:
                            if getattr(choice, "index", 0) not in (0, None):
                                continue
                            delta = choice.delta
                            if delta is not None:
                                if delta.content:
                                    text.append(delta.content)
                                    yield TextDelta(delta.content)
                                if getattr(delta, "refusal", None):
                                    refusal.append(delta.refusal)
                                    yield TextDelta(delta.refusal)
                                for tc in delta.tool_calls or []:
                                    fn = getattr(tc, "function", None)
                                    calls.add(getattr(tc, "index", None), getattr(tc, "id", None),
                                              getattr(fn, "name", None), getattr(fn, "arguments", None))
                            if choice.finish_reason:
                                finish = choice.finish_reason
                finally:
                    await s.close()
            else:
                resp = await self.client.chat.completions.create(**params)
                usage = getattr(resp, "usage", None)
                choice = resp.choices[0] if resp.choices else None
                if choice is not None:
                    msg = choice.message
                    if msg is not None:
                        if msg.content:
                            text.append(msg.content)
                        if getattr(msg, "refusal", None):
                            refusal.append(msg.refusal)
                        for i, tc in enumerate(msg.tool_calls or []):
                            fn = getattr(tc, "function", None)
                            calls.add(i, getattr(tc, "id", None), getattr(fn, "name", None),
                                      getattr(fn, "arguments", None))
                    finish = choice.finish_reason
        except openai.APIStatusError as e:
            if _is_context_overflow(openai, e):
                yield ModelTurn("model_context_window_exceeded", "", [], {}, None,
                                raw_stop_reason="context_length_exceeded")
                return
            raise self._api_error(e, 0 if opened else self.retries) from None
        except openai.APIConnectionError as e:  # APITimeoutError included
            if opened:
                raise IncompleteResponse(f"the model's response stream broke ({type(e).__name__})") from None
            raise self._api_error(e, self.retries) from None
        except openai.APIResponseValidationError:
            raise IncompleteResponse("the model's response could not be read (malformed)") from None
        except openai.APIError as e:
            # An error object inside a 200 stream (vLLM, llama.cpp and others send these).
            raise self._stream_error(e) from None
        except (openai.OpenAIError, ValueError, RuntimeError, OSError, AssertionError,
                AttributeError, TypeError) as e:
            # Malformed JSON in a chunk, a truncated body, an odd chunk shape: incomplete.
            raise IncompleteResponse(f"the model's response stream broke ({type(e).__name__})") from None
        except Exception as e:
            if type(e).__module__.split(".")[0] in ("httpx", "httpx2", "httpcore", "httpcore2", "anyio", "h11"):
                raise IncompleteResponse(f"the model's response stream broke ({type(e).__name__})") from None
            raise
        if not finish:
            raise IncompleteResponse("the model's response ended without a finish_reason "
                                     "(the stream was cut short)")
        yield self._turn(finish, "".join(text), "".join(refusal), calls, usage)

    def _turn(self, finish: str, text: str, refusal: str, calls: _Calls, usage: Any) -> ModelTurn:
        tool_calls, entries = calls.finish()
        stop = _stop_reason(finish, bool(tool_calls), bool(refusal), text)
        shown = text or refusal
        message: dict[str, Any] = {"role": "assistant", "content": text or None}
        if not entries and message["content"] is None:
            message["content"] = shown or ""
        if entries:
            message["tool_calls"] = entries
        return ModelTurn(stop_reason=stop, text=shown, tool_calls=tool_calls, usage=_usage(usage),
                         message=message, raw_stop_reason=finish)

    # -- errors ---------------------------------------------------------------------------
    def _api_error(self, e: Exception, retries: int) -> ModelAPIError:
        openai = self._sdk
        after = f" after {retries} retries" if retries else ""
        at = self.where
        if isinstance(e, openai.AuthenticationError):
            return ModelAPIError(f"the model server at {at} rejected the API key (401): check "
                                 "OPENAI_API_KEY", kind="authentication")
        if isinstance(e, openai.PermissionDeniedError):
            return ModelAPIError(f"the model server at {at} refused access (403): check the key's "
                                 "permissions", kind="permission")
        if isinstance(e, openai.NotFoundError):
            return ModelAPIError(f"the model server at {at} answered 404: check --model (is the model "
                                 "pulled/loaded?) and OPENAI_BASE_URL (it usually ends in /v1)",
                                 kind="not_found")
        if isinstance(e, openai.RateLimitError):
            return ModelAPIError(f"rate limited by the model server at {at} (429){after}; wait a "
                                 "minute or lower batch --concurrency", kind="rate_limited")
        if isinstance(e, openai.APIStatusError) and e.status_code in (502, 503, 529):
            return ModelAPIError(f"the model server at {at} is overloaded or unavailable "
                                 f"({e.status_code}){after}; try again shortly", kind="overloaded")
        if isinstance(e, openai.APIStatusError) and e.status_code >= 500:
            return ModelAPIError(f"the model server at {at} failed ({e.status_code}){after}; try "
                                 "again shortly", kind="server_error")
        if isinstance(e, (openai.BadRequestError, openai.UnprocessableEntityError)):
            return ModelAPIError(f"the model server at {at} refused the request "
                                 f"({e.status_code}): {_short(e)}", kind="bad_request")
        if isinstance(e, openai.APIStatusError):
            return ModelAPIError(f"the model server at {at} answered {e.status_code}: {_short(e)}",
                                 kind="api_error")
        if isinstance(e, openai.APITimeoutError):
            return ModelAPIError(f"the model server at {at} did not answer in time{after}; check "
                                 "that it is running, or raise --request-timeout (local models can "
                                 "be slow to load)", kind="timeout")
        if isinstance(e, openai.APIConnectionError):
            return ModelAPIError(f"cannot reach the model server at {at}{after}; check that it is "
                                 "running and OPENAI_BASE_URL", kind="connection")
        return ModelAPIError(f"the model server at {at} failed ({type(e).__name__})", kind="api_error")

    def _stream_error(self, e: Exception) -> ModelAPIError:
        code = _error_code(e)
        msg = f"the model server at {self.where} reported an error mid-response: {_short(e)}"
        if "rate" in code or "429" in code:
            return ModelAPIError(msg, kind="rate_limited", retryable=True)
        if any(w in code for w in ("invalid_request", "bad_request", "400", "401", "403", "404")):
            return ModelAPIError(msg, kind="bad_request")
        return ModelAPIError(msg, kind="server_error", retryable=True)

    async def aclose(self) -> None:
        await self.client.close()
