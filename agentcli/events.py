"""The events the loop yields: one discriminated union, consumed by renderers and the session log.

The loop never prints. Everything a person, a script or a log sees is derived from these.
Each event has a ``type`` tag and serialises to a flat JSON object with ``to_dict``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Union

from .vocab import CallRecord, Outcome


@dataclass(slots=True)
class Question:
    text: str
    customer: str | None
    session_id: str
    type: str = "question"


@dataclass(slots=True)
class ModelRequest:
    """A model call is about to start (turn ``turn`` of this question; ``attempt`` > 1 on retry)."""
    turn: int
    attempt: int = 1
    type: str = "model_request"


@dataclass(slots=True)
class TextDelta:
    text: str
    type: str = "text_delta"


@dataclass(slots=True)
class ModelResponse:
    """A complete model response, as appended to the history."""
    turn: int
    stop_reason: str | None
    text: str
    tool_calls: list[dict[str, Any]]
    usage: dict[str, int]
    content: Any = None  # the provider-format message, exactly as appended to the history
    type: str = "model_response"


@dataclass(slots=True)
class Retry:
    """A model request failed in a retryable way and is being tried again; with ``waiting``,
    it was not sent: the API's rate limit asks to wait ``wait_s`` first (no retry spent)."""
    turn: int
    attempt: int
    reason: str
    wait_s: float
    waiting: bool = False
    type: str = "retry"


@dataclass(slots=True)
class ToolCallStarted:
    id: str
    name: str
    input: Any
    type: str = "tool_call"


@dataclass(slots=True)
class ToolResult:
    id: str
    name: str
    input: Any
    result: Any
    is_error: bool
    duration_ms: float
    outcome: Outcome = Outcome.OK
    # A lookup's order customer: our code's metadata (a draft's customer), never the model's.
    customer: str | None = None
    # Not run: the same read-only call was already answered in this ticket, and this is that
    # result (with a note saying so) given again.
    repeated: bool = False
    type: str = "tool_result"

    def record(self) -> CallRecord:
        """The one shape of a finished tool call (``--json``, ``/history``, provenance)."""
        return CallRecord(self.id, self.name, self.input, self.result, self.is_error,
                          self.duration_ms, self.outcome)


@dataclass(slots=True)
class DraftSaved:
    id: str
    path: str
    order_code: str | None
    created: bool  # False when an identical draft of this conversation already existed
    type: str = "draft_saved"


@dataclass(slots=True)
class Usage:
    """A token counter (not an event: usage travels on ``ModelResponse`` and ``TurnFinished``)."""
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_input_tokens: int = 0
    cache_creation_input_tokens: int = 0

    def add(self, other: dict[str, int] | "Usage") -> None:
        d = other if isinstance(other, dict) else other.to_counts()
        self.input_tokens += int(d.get("input_tokens") or 0)
        self.output_tokens += int(d.get("output_tokens") or 0)
        self.cache_read_input_tokens += int(d.get("cache_read_input_tokens") or 0)
        self.cache_creation_input_tokens += int(d.get("cache_creation_input_tokens") or 0)

    def to_counts(self) -> dict[str, int]:
        return {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cache_read_input_tokens": self.cache_read_input_tokens,
            "cache_creation_input_tokens": self.cache_creation_input_tokens,
        }


@dataclass(slots=True)
class TurnFinished:
    """The question is done. ``status`` is ok | incomplete | error | cancelled."""
    status: str
    stop_reason: str | None
    answer: str
    turns: int
    message: str | None = None  # why it stopped, for a person, when not ok
    usage: dict[str, int] = field(default_factory=dict)
    type: str = "turn_finished"


@dataclass(slots=True)
class Error:
    """A failure the person must see (model API failure, database gone). ``kind`` names it."""
    kind: str
    message: str
    exit_code: int
    type: str = "error"


@dataclass(slots=True)
class Checked:
    """The grounding findings of a question over its whole ticket (``Finding.to_dict()`` each),
    and the question's status and stop reason once they are taken into account (after
    ``TurnFinished``; an ``ok`` question becomes ``incomplete`` when a person must look)."""
    findings: list[dict[str, Any]]
    status: str
    stop_reason: str | None
    message: str | None = None
    # Which layers ran (``floor``: the patterns, always; ``model``: claims read by a model through
    # one forced tool call), and that call's model, tokens, time and why it did not run.
    layers: list[str] = field(default_factory=lambda: ["floor"])
    model: str | None = None
    usage: dict[str, int] = field(default_factory=dict)
    duration_ms: float = 0.0
    note: str | None = None
    type: str = "checked"


@dataclass(slots=True)
class Repair:
    """The model's work ended with error-level grounding findings and turns remained: the
    findings went back to it once, as a user-side message (``message``, exactly as sent), and the
    loop goes on. ``findings`` are the ones sent (each a ``Finding.to_dict()`` whose strings are
    one-line and redacted), ``draft`` the live draft they flagged (None: the answer alone),
    ``turn`` the model call whose result was flagged, ``answer`` the answer it ended with."""
    turn: int
    findings: list[dict[str, Any]]
    message: str
    draft: str | None = None
    answer: str = ""
    type: str = "repair"


Event = Union[Question, ModelRequest, TextDelta, ModelResponse, Retry, ToolCallStarted,
              ToolResult, DraftSaved, TurnFinished, Error, Checked, Repair]


def to_dict(event: Event) -> dict[str, Any]:
    # A shallow copy: the session log's redaction rebuilds every container anyway.
    d = {name: getattr(event, name) for name in event.__slots__}
    d["ts"] = round(time.time(), 3)
    return d
