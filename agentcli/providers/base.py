"""The provider protocol and the shapes a provider hands the loop (``ModelTurn``, ``ToolCall``).

    respond(history, stream=...)  async-yields TextDelta events (and notices as Retry events),
                                  then exactly one ModelTurn, or raises ModelAPIError

A ``ModelTurn`` whose ``stop_reason`` is None is incomplete: the loop never runs its tool calls.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, AsyncIterator, Protocol

from ..events import TextDelta


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

    def add_user_text(self, history: list[Any], text: str) -> None: ...

    def add_assistant(self, history: list[Any], turn: ModelTurn) -> None: ...

    def add_tool_results(self, history: list[Any],
                         results: list[tuple[ToolCall, Any, bool]]) -> None: ...

    def respond(self, history: list[Any], *, stream: bool) -> AsyncIterator[TextDelta | ModelTurn]: ...

    def tool_call_turn(self, calls: list[tuple[str, dict[str, Any]]]) -> ModelTurn:
        """An assistant turn making these calls, in this provider's format (workflow mode:
        lookups agentcli made itself, shown to the model as its own calls)."""
        ...

    async def aclose(self) -> None: ...
