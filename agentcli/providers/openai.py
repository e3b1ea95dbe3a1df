"""The OpenAI-compatible Chat Completions provider (the only module that imports ``openai``).

For local and self-hosted models (Ollama, vLLM, llama.cpp's server, LM Studio) as well as the
OpenAI API itself, behind the same protocol as ``providers.anthropic``:

- The SDK is imported when the provider is built, after the settings are checked, so a
  configuration error (exit 3) is reported without paying for the import.
- ``OPENAI_BASE_URL`` / ``OPENAI_API_KEY`` are honoured; the key is optional (local servers need
  none: the SDK gets a placeholder). ``--model`` is required: there is no sensible default.
- One ``AsyncOpenAI`` client per process, its HTTP client ``providers.transport.http_client``
  (the rate-limit gate, the bounds); HTTP-level faults before a response (429 and 529, taken
  in hand by the gate; 5xx; connection errors) are retried by the loop, not the SDK
  (``max_retries=0``): each retry is a ``Retry`` event a person sees with its reason and wait
  (``providers.retry``); faults inside a stream (dropped, stalled, malformed, no
  ``finish_reason``) become ``IncompleteResponse`` and the loop retries the turn as a fresh
  request. Only what the SDK and the transport raise is caught (and ``_Broken``, our verdict
  on a response's shape): an exception from our own code is a bug and surfaces as one.
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

from ..errors import ConfigError, IncompleteResponse, ModelAPIError
from ..events import Retry, TextDelta
from .api_errors import (
    Where,
    api_error,
    broken,
    broken_cause,
    error_code,
    is_context_overflow,
    models_answered,
    server_message,
    short,
    transport_words,
)
from .base import ModelSettings, ModelTurn, ToolCall
from .bounds import NoProgress, OutputBudget, Progress, over_the_bound
from .endpoint import check_endpoint
from .openai_wire import (
    _Broken,
    _Calls,
    _get,
    _Overflow,
    _Response,
    _server_label,
    _stop_reason,
    _text,
    _tool_schema,
    _usage,
)
from .ratelimit import Gate, LimitAnswer
from .transport import MALFORMED_BODY, TRANSPORT_FAULTS, http_client

PLACEHOLDER_KEY = "not-needed"
# Output a delta may carry besides its content and refusal: tool-call fragments, and the
# reasoning some servers stream (vLLM's ``reasoning_content``, Ollama's ``reasoning``): a model
# thinking for minutes is making progress, and its thinking counts against --max-tokens.
_REASONING = ("reasoning_content", "reasoning")


def _output_chars(delta: Any) -> int:
    """Characters of output in one streamed delta (0: nothing new, a keep-alive)."""
    n = 0
    for k in ("content", "refusal", *_REASONING):
        v = _get(delta, k)
        if isinstance(v, str):
            n += len(v)
    calls = _get(delta, "tool_calls")
    for tc in calls if isinstance(calls, list) else []:
        fn = _get(tc, "function")
        for k in ("name", "arguments"):
            v = _get(fn, k) if fn is not None else None
            n += len(v) if isinstance(v, str) else 0
        n += 1 if _get(tc, "id") else 0
    return n
ERROR_PREFIX = "ERROR: "
EMPTY_STREAM_NOTICE = ("the model server sent an empty stream (HTTP 200, nothing in it); asking "
                       "again without streaming")


class OpenAIProvider:
    name = "openai"

    def __init__(self, model: str | None, model_settings: ModelSettings, registry: Any,
                 system_prompt: str):
        base_url = os.environ.get("OPENAI_BASE_URL") or None
        key = os.environ.get("OPENAI_API_KEY") or None
        if not model:
            raise ConfigError("the openai provider needs a model name: pass --model (e.g. --model "
                              "qwen2.5:7b for Ollama) or set AGENTCLI_MODEL")
        if base_url is None and key is None:
            raise ConfigError("the openai provider needs OPENAI_BASE_URL (your server, e.g. "
                              "http://localhost:11434/v1 for Ollama) or OPENAI_API_KEY (for "
                              "api.openai.com)")
        check_endpoint("OPENAI_API_KEY", key, "OPENAI_BASE_URL", "http://localhost:11434/v1")
        self.model = model
        self.model_settings = model_settings
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
        # What a call of the SDK may raise besides our _Broken: its own errors, the gate's
        # answer (openai passes it through unwrapped), transport faults and a malformed body.
        self._faults = (openai.OpenAIError, LimitAnswer, _Broken, NoProgress, *TRANSPORT_FAULTS,
                        *MALFORMED_BODY)
        self.gate = Gate()
        self.client = openai.AsyncOpenAI(
            api_key=key or PLACEHOLDER_KEY,
            base_url=base_url,
            max_retries=0,  # the loop retries, visibly (a Retry event per wait)
            timeout=model_settings.timeout,
            # every request waits at the shared rate-limit gate; every answer feeds it and is bounded
            http_client=http_client(openai, model_settings.timeout, self.gate),
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

    def tool_call_turn(self, calls: list[tuple[str, dict[str, Any]]]) -> ModelTurn:
        """An assistant message with ``tool_calls`` our code decided on (the workflow mode)."""

        tcs = [ToolCall(f"call_wf_{secrets.token_hex(8)}", name, args) for name, args in calls]
        entries = [{"id": c.id, "type": "function",
                    "function": {"name": c.name, "arguments": json.dumps(c.input, ensure_ascii=False)}}
                   for c in tcs]
        return ModelTurn("tool_use", "", tcs, {}, {"role": "assistant", "content": "", "tool_calls": entries})

    def add_tool_results(self, history: list[Any], results: list[tuple[ToolCall, Any, bool]]) -> None:
        for call, result, is_error in results:
            content = result if isinstance(result, str) else json.dumps(result, ensure_ascii=False)
            if is_error:
                content = ERROR_PREFIX + content
            history.append({"role": "tool", "tool_call_id": call.id, "content": content})

    # -- one model call -----------------------------------------------------------------
    def _params(self, history: list[Any], stream: bool) -> dict[str, Any]:
        p: dict[str, Any] = {"model": self.model, "max_tokens": self.model_settings.max_tokens,
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
                if r.said_nothing():
                    yield Retry(0, 1, EMPTY_STREAM_NOTICE, 0.0)
                    r = _Response()
                    await self._read_json(r, self._params(history, False))
            else:
                await self._read_json(r, self._params(history, False))
        except _Overflow as e:
            yield ModelTurn("model_context_window_exceeded", "", [], {}, None, note=str(e) or None)
            return
        if not r.finish:
            raise IncompleteResponse("the model's response ended without a finish_reason "
                                     "(the stream was cut short)")
        budget = OutputBudget(self.model_settings.max_tokens)
        text = "".join(r.text)
        if len(text) > budget.max_chars:  # a whole body (a stream is counted as it comes)
            raise broken(self.at, f"it holds more text than --max-tokens {budget.max_tokens} "
                                  f"allows ({len(text)} characters)")
        try:
            turn = self._turn(r.finish, text, "".join(r.refusal), r.calls, r.usage)
        except _Broken as e:
            raise broken(self.at, str(e)) from None
        yield turn

    async def _read_stream(self, r: "_Response", params: dict[str, Any]) -> AsyncIterator[str]:
        opened = False  # True once the response has started: the SDK no longer retries after that
        budget = OutputBudget(self.model_settings.max_tokens)
        try:
            s = await self.client.chat.completions.create(**params)
            opened = True
            progress = Progress(self.model_settings.timeout)
            try:
                while True:
                    try:
                        chunk = await progress.next(s)
                    except StopAsyncIteration:
                        break
                    chars, new = 0, False
                    if getattr(chunk, "usage", None) is not None:
                        r.usage = chunk.usage
                        new = True
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
                            n = _output_chars(delta)
                            chars += n
                            new = new or n > 0
                        finish = _text(_get(choice, "finish_reason"), "finish_reason")
                        if finish:
                            r.finish = finish
                            new = True
                    over = budget.add(chars)
                    if over is not None:
                        raise _Broken(over)
                    if new:  # an empty chunk or a keep-alive is no progress
                        progress.moved()
            finally:
                progress.close()
                await s.close()
        except self._faults as e:
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
        except self._faults as e:
            raise self._failure(e, False) from None

    def _failure(self, e: BaseException, opened: bool) -> Exception:
        """The exception to raise for ``e`` (one of ``self._faults``) caught while calling or
        reading the response."""
        openai = self._sdk
        if isinstance(e, _Broken):
            return broken(self.at, str(e))
        if isinstance(e, openai.APIStatusError):
            if is_context_overflow(openai, e):
                return _Overflow(server_message(e))
            return api_error(openai, e, self.at)
        if isinstance(e, LimitAnswer) or (isinstance(e, openai.APIConnectionError) and not opened):
            return api_error(openai, e, self.at)  # APITimeoutError included
        if isinstance(e, openai.APIResponseValidationError):
            return broken(self.at, "not a chat completion")
        if isinstance(e, openai.APIError) and not isinstance(e, openai.APIConnectionError):
            # An error object inside a 200 stream (vLLM, llama.cpp and others send these).
            return self._stream_error(e)
        if not opened and isinstance(e, ValueError):  # a body that is not JSON (or UTF-8)
            return broken(self.at, f"not a chat completion ({type(e).__name__})")
        # A dropped or stalled stream, malformed JSON in a chunk, a bound exceeded: the
        # response is incomplete and nothing of it may run.
        cause = broken_cause(e)
        return IncompleteResponse(f"the model's response broke: {cause}" if cause else
                                  f"the model's response broke off: {transport_words(e)}")

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

    async def forced_call(self, system: str, user: str, tool: dict[str, Any], *,
                          model: str | None = None) -> ModelTurn:
        """One non-streamed request whose answer must call ``tool`` (the only tool offered, with
        ``tool_choice: required``; the function strict): the grounding checks' model layer."""
        params = {"model": model or self.model, "max_tokens": self.model_settings.max_tokens,
                  "messages": [{"role": "system", "content": system}, {"role": "user", "content": user}],
                  "tools": [{"type": "function", "function": {
                      "name": tool["name"], "description": tool.get("description", ""),
                      "parameters": tool["input_schema"], "strict": True}}],
                  # The only tool, and a call required: the same as naming it, and what local
                  # servers accept (llama.cpp's takes only a string here, and ignores an object).
                  "tool_choice": "required"}
        r = _Response()
        try:
            await self._read_json(r, params)
        except _Overflow as e:
            raise ModelAPIError(f"the texts to check do not fit the model's context window ({e})",
                                kind="bad_request") from None
        if not r.finish:
            raise IncompleteResponse("the model's response ended without a finish_reason")
        try:
            return self._turn(r.finish, "".join(r.text), "".join(r.refusal), r.calls, r.usage)
        except _Broken as e:
            raise broken(self.at, str(e)) from None

    # -- errors ---------------------------------------------------------------------------
    def _stream_error(self, e: Exception) -> ModelAPIError:
        code = error_code(e)
        msg = f"the model server at {self.where} reported an error mid-response: {short(e)}"
        if "rate" in code or "429" in code:
            return ModelAPIError(msg, kind="rate_limited", retryable=True)
        if any(w in code for w in ("invalid_request", "bad_request", "400", "401", "403", "404")):
            return ModelAPIError(msg, kind="bad_request")
        return ModelAPIError(msg, kind="server_error", retryable=True)

    async def check_api(self) -> str:
        """GET /v1/models (lists models: no tokens, no cost)."""
        try:
            page = await self.client.models.list()
        except (self._sdk.APIError, LimitAnswer) as e:
            raise api_error(self._sdk, e, self.at) from None
        except MALFORMED_BODY:
            raise broken(self.at, "not a models list") from None
        return models_answered(page)

    async def aclose(self) -> None:
        await self.client.close()
