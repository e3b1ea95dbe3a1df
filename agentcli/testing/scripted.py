"""A scripted model in this process: loop logic tested without HTTP.

In the spirit of pydantic-ai's ``FunctionModel``: a function decides each response from the
history the loop sends, so a test states exactly what the "model" does and checks what the loop
did with it. It speaks the Messages format (like the offline workflow), so histories look as they
do with the real provider. The real-SDK-against-fake-server tests stay: this one never touches
the wire.

    def model(history, turn):
        if turn == 1:
            return Reply(calls=[("get_order_status", {"order_code": "GH56JK78MN"})])
        return Reply("It is waiting for payment.")

    provider = ScriptedProvider(model)

A function may also return a ``ModelTurn`` (anything the loop must cope with, e.g. a stop reason
of None) or raise ``ModelAPIError`` (a failed request).
"""

from __future__ import annotations

import copy
import itertools
from dataclasses import dataclass, field
from typing import Any, AsyncIterator, Callable, Sequence

from ..events import TextDelta
from ..providers import ModelSettings, ModelTurn, ToolCall
from ..providers.messages_format import MessagesHistory


@dataclass
class Reply:
    """One scripted response: text, tool calls ``(name, input)`` or ``(id, name, input)``, and a
    stop reason (default: ``tool_use`` when there are calls, else ``end_turn``)."""
    text: str = ""
    calls: Sequence[tuple] = ()
    stop_reason: str | None = "default"
    usage: dict[str, int] = field(default_factory=lambda: {"input_tokens": 10, "output_tokens": 5})


ModelFunction = Callable[[list[Any], int], "Reply | ModelTurn"]


class ScriptedProvider(MessagesHistory):
    """A ``Provider`` whose responses come from ``fn(history, turn)``; ``turn`` counts the model
    calls of this provider from 1. ``requests`` keeps a copy of every history it was sent."""

    name = "scripted"
    gate = None  # no API, no rate limits

    def __init__(self, fn: ModelFunction | Sequence[Reply], *, model: str = "scripted-model",
                 model_settings: ModelSettings = ModelSettings()):
        if not callable(fn):
            replies = list(fn)
            fn = lambda history, turn: replies[min(turn, len(replies)) - 1]  # noqa: E731
        self.fn = fn
        self.model = model
        self.model_settings = model_settings
        self.requests: list[list[Any]] = []
        self._ids = itertools.count(1)

    async def respond(self, history: list[Any], *, stream: bool) -> AsyncIterator[TextDelta | ModelTurn]:
        self.requests.append(copy.deepcopy(history))
        reply = self.fn(history, len(self.requests))
        turn = reply if isinstance(reply, ModelTurn) else self._turn(reply)
        if stream and turn.text:
            for i in range(0, len(turn.text), 16):
                yield TextDelta(turn.text[i:i + 16])
        yield turn

    def _turn(self, r: Reply) -> ModelTurn:
        calls = [ToolCall(*c) if len(c) == 3 else ToolCall(f"toolu_s{next(self._ids)}", *c)
                 for c in r.calls]
        content: list[dict[str, Any]] = [{"type": "text", "text": r.text}] if r.text else []
        content += [{"type": "tool_use", "id": c.id, "name": c.name, "input": c.input} for c in calls]
        stop = ("tool_use" if calls else "end_turn") if r.stop_reason == "default" else r.stop_reason
        return ModelTurn(stop, r.text, calls, dict(r.usage), {"role": "assistant", "content": content})

    async def check_api(self) -> str:
        return "scripted model: no model API to reach"

    async def aclose(self) -> None:
        return None
