"""The provider protocol, the settings every request of a provider carries (``ModelSettings``)
and the shapes a provider hands the loop (``ModelTurn``, ``ToolCall``).

    respond(history, stream=...)  async-yields TextDelta events (and a provider's own notices
                                  as Retry events), then exactly one ModelTurn, or raises
                                  ModelAPIError; anything else it raises is a bug of ours
    await check_api()             one free request (the models list): what answered, one line
    await forced_call(system, user, tool, model=)  one request answered by a call of ``tool``
                                  (the checks' model layer; not on the offline provider)
    gate                          the rate-limit gate every HTTP request passes (None: no API)
    model_settings                max_tokens and timeout, sent with every request

A provider that speaks the Message Batches API (anthropic) also has ``request_params(history)``
(the Messages request body of the next call), ``turn_from_message(message)`` (a whole message as
JSON -> ModelTurn, checked as a live answer) and ``batches`` (``anthropic.MessageBatches``); the
others have none (``batch --via batches`` says so, exit 2).

A ``ModelTurn`` whose ``stop_reason`` is None is incomplete: the loop never runs its tool calls.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, AsyncIterator, Protocol

from ..events import TextDelta

if TYPE_CHECKING:
    from .ratelimit import Gate


@dataclass(frozen=True)
class ModelSettings:
    """What each request asks of the model, as pydantic-ai's ``ModelSettings``: fixed when the
    provider is built, from ``config.Settings`` (:meth:`of`)."""

    max_tokens: int = 2048  # output tokens one response may use (--max-tokens)
    timeout: float = 120.0  # seconds: the SDK's per-read timeout and the wait for each event
    #                         of a stream or for a whole JSON body (--request-timeout)

    @classmethod
    def of(cls, settings: Any) -> "ModelSettings":
        return cls(max_tokens=settings.max_tokens, timeout=float(settings.request_timeout))


@dataclass
class ToolCall:
    id: str
    name: str
    input: Any
    # Set when the provider could not decode the arguments (e.g. invalid JSON): the call is
    # answered with this error and never executed.
    input_error: str | None = None


@dataclass
class ModelTurn:
    stop_reason: str | None
    text: str
    tool_calls: list[ToolCall]
    usage: dict[str, int]
    message: Any  # provider-format assistant message(s), appended to the history as-is
    note: str | None = None  # the server's own words about a stop (a context overflow's sizes)


class Provider(Protocol):
    name: str
    model: str
    model_settings: ModelSettings
    # The rate-limit gate (providers.ratelimit) every HTTP request of this provider passes:
    # the batch engine sizes its concurrency by it and stops on its quota verdict. None for a
    # provider without an API (the offline workflow, the scripted test model).
    gate: Gate | None

    def add_user_text(self, history: list[Any], text: str) -> None: ...

    def add_assistant(self, history: list[Any], turn: ModelTurn) -> None: ...

    def add_tool_results(self, history: list[Any],
                         results: list[tuple[ToolCall, Any, bool]]) -> None: ...

    def respond(self, history: list[Any], *, stream: bool) -> AsyncIterator[TextDelta | ModelTurn]: ...

    def tool_call_turn(self, calls: list[tuple[str, dict[str, Any]]]) -> ModelTurn:
        """An assistant turn making these calls, in this provider's format (workflow mode:
        lookups agentcli made itself, shown to the model as its own calls)."""
        ...

    async def forced_call(self, system: str, user: str, tool: dict[str, Any], *,
                          model: str | None = None) -> ModelTurn:
        """One request with no history and no stream whose answer must be a call of ``tool``
        (``{"name", "description", "input_schema"}``, sent strict, ``tool_choice`` forced): the
        grounding checks' model layer (``checks.model_layer``). ``model``: another model of
        the same API (``check_model``). Raises ModelAPIError. A provider without a model API
        (the offline workflow, the scripted test model) has no such method."""
        ...

    async def check_api(self) -> str:
        """Ask the API something that costs nothing (the models list) and say, in one clean
        line, what answered; raises ModelAPIError (one line) when it does not answer."""
        ...

    async def aclose(self) -> None: ...
