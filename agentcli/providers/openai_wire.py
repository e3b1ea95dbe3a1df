"""The Chat Completions wire format, without the SDK: accumulating streamed tool-call fragments,
strict argument parsing, usage and finish-reason mapping, and the checks that a response has
the shape a Chat Completions server sends (a wrong type is :class:`_Broken`). Used by
``providers.openai``; importing it imports no SDK."""

from __future__ import annotations

import json
import secrets
from typing import Any
from urllib.parse import urlsplit

from .base import ToolCall
from .bounds import InputTooDeep, parse_tool_input, shown_input

STOP_MAP = {
    "tool_calls": "tool_use",
    "function_call": "tool_use",  # the legacy name some servers still send
    "stop": "end_turn",
    "length": "max_tokens",
    "content_filter": "refusal",
}


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
                calls.append(ToolCall(cid, name, shown_input(raw), input_error=problem))
                history_args = "{}"
            entries.append({"id": cid, "type": "function",
                            "function": {"name": name, "arguments": history_args}})
        return calls, entries


def _parse_arguments(raw: str, name: str) -> tuple[Any, str | None]:
    """(arguments, None) or (None, the error the model hears); too deep is ``_Broken``."""
    try:
        return parse_tool_input(raw, name, "arguments")
    except InputTooDeep as e:
        raise _Broken(str(e)) from None


def _stop_reason(finish: str, has_calls: bool, refusal: bool, text: str) -> str:
    if finish == "stop" and has_calls:
        return "tool_use"  # complete tool calls under "stop" (some servers): run them
    if finish == "stop" and refusal and not text:
        return "refusal"
    return STOP_MAP.get(finish, finish)


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

    def said_nothing(self) -> bool:
        """No choice at all, or choices that carried no text, no refusal and no tool call (a
        server that failed after its 200, as llama-cpp-python's does for a streamed tool choice)."""
        return not self.saw_choice or not (any(self.text) or any(self.refusal) or self.calls)

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
