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

from ..errors import ConfigError, IncompleteResponse, ModelAPIError
from ..events import Retry, TextDelta
from . import ModelTurn, ToolCall
from .bounds import MAX_INPUT_DEPTH, depth_exceeds, http_client, over_the_bound
from .api_errors import Where, api_error, broken, broken_cause, error_code, is_context_overflow, short

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

EMPTY_STREAM_NOTICE = ("the model server sent an empty stream (HTTP 200, no choices); asking again "
                       "without streaming")


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


class _Broken(Exception):
    """The response is not what a Chat Completions server sends (why, for the error line)."""


def _get(obj: Any, name: str) -> Any:
    return obj.get(name) if isinstance(obj, dict) else getattr(obj, name, None)


def _count(v: Any, name: str) -> int:
    if v is None:
        return 0
    if type(v) is not int or not 0 <= v < 2**53:
        raise _Broken(f"usage {name} is not a token count")
    return v


def _text(v: Any, what: str) -> str | None:
    if v is None or isinstance(v, str):
        return v
    raise _Broken(f"{what} is {type(v).__name__}, not a string")


def _usage(u: Any) -> dict[str, int]:
    """OpenAI usage -> the Anthropic-shaped counts the rest of agentcli adds up."""
    if u is None:
        return {}
    prompt = _count(_get(u, "prompt_tokens"), "prompt_tokens")
    details = _get(u, "prompt_tokens_details")
    cached = _count(_get(details, "cached_tokens") if details is not None else 0, "cached_tokens")
    cached = min(cached, prompt)
    return {
        "input_tokens": prompt - cached,
        "output_tokens": _count(_get(u, "completion_tokens"), "completion_tokens"),
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


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _parse_arguments(raw: str, name: str) -> tuple[Any, str | None]:
    """(arguments, None) or (None, the error the model hears)."""
    if not name:
        return None, ("the tool call had no function name; nothing was run: call one of the "
                      "tools by name")
    if not raw.strip():
        return {}, None
    try:
        value = json.loads(raw, parse_constant=_no_constant)
    except RecursionError:
        raise _Broken(f"the arguments of a {name} call nest too deeply") from None
    except ValueError as e:
        return None, (f"the arguments of this {name} call are not valid JSON ({getattr(e, 'msg', e)} "
                      f"at character {getattr(e, 'pos', '?')}); nothing was run: call {name} again "
                      "with complete JSON arguments")
    if depth_exceeds(value):
        raise _Broken(f"the arguments of a {name} call nest deeper than {MAX_INPUT_DEPTH} levels")
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

class _Overflow(Exception):
    """The prompt does not fit the model's context: the turn ends for a person to review."""


class _Response:
    """What one response said so far."""

    def __init__(self) -> None:
        self.text: list[str] = []
        self.refusal: list[str] = []
        self.calls = _Calls()
        self.finish: str | None = None
        self.usage: Any = None
        self.saw_choice = False

    def add_calls(self, tool_calls: Any, *, positional: bool) -> None:
        if tool_calls is None:
            return
        if not isinstance(tool_calls, list):
            raise _Broken("tool_calls is not a list")
        for i, tc in enumerate(tool_calls):
            fn = _get(tc, "function")
            name = _text(_get(fn, "name") if fn is not None else None, "a tool call's name")
            cid = _get(tc, "id")
            if cid is not None and not isinstance(cid, (str, int)):
                raise _Broken("a tool call's id is not a string")
            index = i if positional else _get(tc, "index")
            self.calls.add(index, cid, name, _get(fn, "arguments") if fn is not None else None)


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
        self.at = Where(
            label=f"the model server at {self.where}", key_env="OPENAI_API_KEY",
            url_env="OPENAI_BASE_URL",
            not_found_hint="--model (is the model pulled/loaded?) and OPENAI_BASE_URL (it usually "
                           "ends in /v1)",
            timeout_hint="check that it is running, or raise --request-timeout (local models can "
                         "be slow to load)",
            connection_hint="check that it is running and OPENAI_BASE_URL",
            overloaded=(502, 503, 529))
        import openai

        self._sdk = openai
        self.client = openai.AsyncOpenAI(
            api_key=key or PLACEHOLDER_KEY,
            base_url=base_url,
            max_retries=settings.retries,
            timeout=settings.request_timeout,
            http_client=http_client(openai, settings.request_timeout),
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
            # Explicit: some servers (llama-cpp-python) leave the tools out of the prompt without it.
            p["tools"] = self.tools
            p["tool_choice"] = "auto"
        if stream:
            p["stream"] = True
            p["stream_options"] = {"include_usage": True}
        return p

    async def respond(self, history: list[Any], *, stream: bool) -> AsyncIterator[TextDelta | ModelTurn]:
        """One model call. A stream that brings no choice at all (HTTP 200 and an empty body,
        only ``[DONE]``, only a usage chunk: llama-cpp-python does this when the model picks a
        tool) is asked again once without streaming; that is announced by a ``Retry`` event
        (``turn`` 0: the loop knows the turn) before the turn."""
        r = _Response()
        try:
            if stream:
                async for delta in self._read_stream(r, self._params(history, True)):
                    yield TextDelta(delta)
                if not r.saw_choice:
                    yield Retry(0, 1, EMPTY_STREAM_NOTICE, 0.0)
                    r = _Response()
                    await self._read_json(r, self._params(history, False))
            else:
                await self._read_json(r, self._params(history, False))
        except _Overflow:
            yield ModelTurn("model_context_window_exceeded", "", [], {}, None)
            return
        if not r.finish:
            raise IncompleteResponse("the model's response ended without a finish_reason "
                                     "(the stream was cut short)")
        try:
            turn = self._turn(r.finish, "".join(r.text), "".join(r.refusal), r.calls, r.usage)
        except _Broken as e:
            raise broken(self.at, str(e)) from None
        yield turn

    async def _read_stream(self, r: "_Response", params: dict[str, Any]) -> AsyncIterator[str]:
        openai = self._sdk
        opened = False  # True once the response has started: the SDK no longer retries after that
        try:
            s = await self.client.chat.completions.create(**params)
            opened = True
            try:
                async for chunk in s:
                    if getattr(chunk, "usage", None) is not None:
                        r.usage = chunk.usage
                    choices = getattr(chunk, "choices", None)
                    if choices is not None and not isinstance(choices, list):
                        raise _Broken("choices is not a list")
                    for choice in choices or []:
                        if _get(choice, "index") not in (0, None):
                            continue
                        r.saw_choice = True
                        delta = _get(choice, "delta")
                        if delta is not None:
                            content = _text(_get(delta, "content"), "a content delta")
                            if content:
                                r.text.append(content)
                                yield content
                            refusal = _text(_get(delta, "refusal"), "a refusal delta")
                            if refusal:
                                r.refusal.append(refusal)
                                yield refusal
                            r.add_calls(_get(delta, "tool_calls"), positional=False)
                        finish = _text(_get(choice, "finish_reason"), "finish_reason")
                        if finish:
                            r.finish = finish
            finally:
                await s.close()
        except Exception as e:
            raise self._failure(e, opened) from None

    async def _read_json(self, r: "_Response", params: dict[str, Any]) -> None:
        try:
            resp = await self.client.chat.completions.create(**params)
            if not isinstance(getattr(resp, "choices", None), list):
                raise _Broken("not a chat completion (no list of choices)")
            r.usage = getattr(resp, "usage", None)
            choice = resp.choices[0] if resp.choices else None
            if choice is not None:
                r.saw_choice = True
                msg = _get(choice, "message")
                if msg is not None:
                    content = _text(_get(msg, "content"), "the message content")
                    if content:
                        r.text.append(content)
                    refusal = _text(_get(msg, "refusal"), "the refusal")
                    if refusal:
                        r.refusal.append(refusal)
                    r.add_calls(_get(msg, "tool_calls"), positional=True)
                r.finish = _text(_get(choice, "finish_reason"), "finish_reason")
        except Exception as e:
            raise self._failure(e, False) from None

    def _failure(self, e: Exception, opened: bool) -> Exception:
        """The exception to raise for ``e`` caught while calling or reading the response."""
        openai = self._sdk
        if isinstance(e, _Broken):
            return broken(self.at, str(e))
        if isinstance(e, openai.APIStatusError):
            if is_context_overflow(openai, e):
                return _Overflow()
            return api_error(openai, e, 0 if opened else self.retries, self.at)
        if isinstance(e, openai.APIConnectionError) and not opened:  # APITimeoutError included
            return api_error(openai, e, self.retries, self.at)
        if isinstance(e, openai.APIResponseValidationError):
            return broken(self.at, "not a chat completion")
        if isinstance(e, openai.APIError) and not isinstance(e, openai.APIConnectionError):
            # An error object inside a 200 stream (vLLM, llama.cpp and others send these).
            return self._stream_error(e)
        if not opened and not isinstance(e, (openai.OpenAIError, ValueError, RuntimeError, OSError,
                                             AssertionError, AttributeError, TypeError, KeyError,
                                             RecursionError)) \
                and type(e).__module__.split(".")[0] not in ("httpx", "httpx2", "httpcore",
                                                             "httpcore2", "anyio", "h11"):
            return e  # a bug of ours: let it surface as one
        # Malformed JSON in a chunk, a truncated body, an odd chunk shape, a bound exceeded:
        # the response is incomplete and nothing of it may run.
        cause = broken_cause(e)
        if not opened and isinstance(e, (AttributeError, TypeError, KeyError, ValueError)):
            return broken(self.at, f"not a chat completion ({type(e).__name__})")
        return IncompleteResponse(f"the model's response broke: {cause}" if cause else
                                  f"the model's response stream broke ({type(e).__name__})")

    def _turn(self, finish: str, text: str, refusal: str, calls: "_Calls", usage: Any) -> ModelTurn:
        tool_calls, entries = calls.finish()
        over_the_bound(tool_calls)
        stop = _stop_reason(finish, bool(tool_calls), bool(refusal), text)
        shown = text or refusal
        # "" rather than null: some servers (llama-cpp-python) answer 500 to a null content.
        message: dict[str, Any] = {"role": "assistant", "content": text or ("" if entries else shown)}
        if entries:
            message["tool_calls"] = entries
        return ModelTurn(stop_reason=stop, text=shown, tool_calls=tool_calls, usage=_usage(usage),
                         message=message)

    # -- errors ---------------------------------------------------------------------------
    def _stream_error(self, e: Exception) -> ModelAPIError:
        code = error_code(e)
        msg = f"the model server at {self.where} reported an error mid-response: {short(e)}"
        if "rate" in code or "429" in code:
            return ModelAPIError(msg, kind="rate_limited", retryable=True)
        if any(w in code for w in ("invalid_request", "bad_request", "400", "401", "403", "404")):
            return ModelAPIError(msg, kind="bad_request")
        return ModelAPIError(msg, kind="server_error", retryable=True)

    async def aclose(self) -> None:
        await self.client.close()
