"""Model providers behind one small protocol.

A provider owns its wire format: it builds the messages that go into the history and turns one
model response into a ``ModelTurn``. Each provider module is the only place that imports its
SDK, and it is imported only when chosen (``agentcli --help`` loads none of them).

    respond(history, stream=...)  async-yields TextDelta events, then exactly one ModelTurn,
                                  or raises ModelAPIError (retryable or not)

A ``ModelTurn`` whose ``stop_reason`` is None is incomplete: the loop never runs its tool calls.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any, AsyncIterator, Iterator, Protocol

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


class Provider(Protocol):
    name: str
    model: str

    def add_user_text(self, history: list[Any], text: str) -> None: ...

    def add_assistant(self, history: list[Any], turn: ModelTurn) -> None: ...

    def add_tool_results(self, history: list[Any],
                         results: list[tuple[ToolCall, Any, bool]]) -> None: ...

    def respond(self, history: list[Any], *, stream: bool) -> AsyncIterator[TextDelta | ModelTurn]: ...

    async def aclose(self) -> None: ...


@contextlib.contextmanager
def _sdk_import(sdk: str) -> Iterator[None]:
    """Import the model SDK ``sdk`` with the cycle collector paused, then freeze what it built.

    ``import anthropic`` creates ~10^6 long-lived objects (3,500 modules, pydantic models), and
    the collector would walk them over and over while they are being built. Frozen afterwards,
    later collections (every turn of a REPL, every question of a batch) and the interpreter's
    exit never scan them again: a one-shot ``ask`` went from 1.19-1.36x the time of a bare
    ``import anthropic`` to 0.9-1.0x here. Done once per process, on the SDK's first import (a
    later freeze would also pin whatever else is alive by then).
    """
    import gc
    import sys

    if sdk in sys.modules:
        yield
        return
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if enabled:
            gc.enable()


def make_provider(settings: Any, registry: Any, system_prompt: str) -> Provider:
    """Build the provider the settings name (importing its SDK only now)."""
    if settings.provider == "anthropic":
        with _sdk_import("anthropic"):
            from .anthropic import AnthropicProvider

        return AnthropicProvider(settings, registry, system_prompt)
    if settings.provider == "openai":
        with _sdk_import("openai"):
            from .openai import OpenAIProvider

        return OpenAIProvider(settings, registry, system_prompt)
    from .offline import OfflineProvider

    return OfflineProvider(settings, registry, system_prompt)
