"""The Messages API history format, shared by the providers that speak it (anthropic and the
offline workflow). Plain dicts only: importing this never imports an SDK."""

from __future__ import annotations

import json
import secrets
from typing import Any

from .base import ModelTurn, ToolCall


class MessagesHistory:
    """``add_*`` methods of the Provider protocol for Messages-format histories."""

    def add_user_text(self, history: list[Any], text: str) -> None:
        block = {"type": "text", "text": text}
        if history and history[-1]["role"] == "user":
            # After a cancelled turn the history can end with tool results: keep roles alternating.
            content = history[-1]["content"]
            if isinstance(content, str):
                content = [{"type": "text", "text": content}]
            history[-1] = {"role": "user", "content": [*content, block]}
        else:
            history.append({"role": "user", "content": [block]})

    def add_assistant(self, history: list[Any], turn: ModelTurn) -> None:
        # An empty reply (it happens right after tool results) would make every later request
        # invalid ("messages must have non-empty content"): it is not kept.
        if turn.message.get("content"):
            history.append(turn.message)

    def tool_call_turn(self, calls: list[tuple[str, dict[str, Any]]]) -> ModelTurn:
        """An assistant turn of tool_use blocks our code decided on (the workflow mode's lookups),
        in this format, so the model reads their results as those of its own calls."""
        tcs = [ToolCall(f"toolu_wf_{secrets.token_hex(8)}", name, args) for name, args in calls]
        content = [{"type": "tool_use", "id": c.id, "name": c.name, "input": c.input} for c in tcs]
        return ModelTurn("tool_use", "", tcs, {}, {"role": "assistant", "content": content})

    def add_tool_results(self, history: list[Any], results: list[tuple[ToolCall, Any, bool]]) -> None:
        """All results of one turn in ONE user message, one tool_result per tool_use, in order."""
        blocks = []
        for call, result, is_error in results:
            content = result if isinstance(result, str) else json.dumps(result, ensure_ascii=False)
            b: dict[str, Any] = {"type": "tool_result", "tool_use_id": call.id, "content": content}
            if is_error:
                b["is_error"] = True
            blocks.append(b)
        history.append({"role": "user", "content": blocks})
