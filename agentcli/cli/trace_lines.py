"""The trace's lines, built in one place: a tool call starting ("→ name input"), its result
("← name ok (1.2 ms): summary"), a grounding finding, a draft as quoted text. The live trace, the
REPL, ``drafts show`` and the log replay all use these (through ``render``).
"""

from __future__ import annotations

import json
import textwrap
from typing import Any

from ..redact import clean_for_terminal
from ..vocab import ToolName

FOLD_CHARS = 600
DRAFT_TOOL = ToolName.DRAFT
DRAFT_LINES = 40  # lines of a draft shown in the trace; the rest is in the file


def compact(obj: Any, limit: int = FOLD_CHARS) -> str:
    """A value as one line of JSON (or its text), redacted, cleaned and cut at ``limit``."""
    s = obj if isinstance(obj, str) else json.dumps(obj, ensure_ascii=False)
    s = " ".join(clean_for_terminal(s).split())
    if len(s) > limit:
        s = s[:limit] + f"… ({len(s) - limit} more characters)"
    return s


def flat(v: Any) -> str:
    """A field that is one line on screen (a tool name, an outcome, a stop or retry reason, a
    log's provider or path): cleaned, and every line break it holds (a CR, U+2028/U+2029 that
    cleaning turns into one, a newline) a space, so no value can start a line of its own and pass
    for one of ours ("✓ approved")."""
    return " ".join(clean_for_terminal(str(v)).split())


def _word(v: Any, limit: int = 60) -> str:
    s = flat(v)
    return s if len(s) <= limit else s[: limit - 1] + "…"


def result_summary(result: Any) -> str:
    """A tool result as one short line: an order lookup as "CODE status · product · dates",
    anything else as compact JSON. The full result is in the session log and ``/history``."""
    if isinstance(result, dict) and isinstance(result.get("found"), bool) and "order_code" in result:
        code = _word(result.get("order_code"), 40)
        if not result["found"]:
            return f"{code} not found"
        parts = [f"{code} {_word(result.get('status'), 30)}"]
        if result.get("product"):
            parts.append(_word(result["product"], 40))
        if result.get("placed_on"):
            parts.append(f"placed {_word(result['placed_on'], 20)}")
        if result.get("estimated_delivery"):
            parts.append(f"delivery {_word(result['estimated_delivery'], 20)}")
        if result.get("license_issued") is True:
            parts.append("license issued")
        items = result.get("line_items")
        if isinstance(items, list):
            parts.append(f"{len(items)} line item{'s' if len(items) != 1 else ''}")
        if result.get("status_detail"):
            parts.append(f"“{_word(result['status_detail'], 80)}”")
        return " · ".join(parts)
    return compact(result, 300)


def tool_call_line(name: Any, input: Any) -> tuple[str, str]:
    """The line shown when a tool call starts, and its style."""
    return f"→ {flat(name)} {compact(input, 300)}", "cyan"


def tool_result_head(name: Any, outcome: Any, is_error: bool, duration_ms: Any,
                     repeated: bool = False) -> tuple[str, str]:
    """"← name ok (1.2 ms)" / "✗ name timeout (…)", and its style: a result line without the
    result. ``repeated``: "← name repeated, not run again (0.0 ms)" (answered from the ticket)."""
    try:
        ms = f"{float(duration_ms or 0):.1f} ms"
    except (TypeError, ValueError):
        ms = "? ms"
    name = flat(name)
    if is_error:
        return f"✗ {name} {flat(outcome)} ({ms})", "red"
    tag = "not found" if outcome == "not_found" else "ok"
    if repeated is True:
        return f"← {name} repeated, not run again: {tag} ({ms})", "yellow"
    return f"← {name} {tag} ({ms})", "green"


def tool_result_line(name: Any, outcome: Any, is_error: bool, duration_ms: Any,
                     result: Any, repeated: bool = False) -> tuple[str, str]:
    """The line shown when a tool call ends (result or error, and duration), and its style."""
    head, style = tool_result_head(name, outcome, is_error, duration_ms, repeated)
    return f"{head}: {compact(result, 300) if is_error else result_summary(result)}", style


def finding_line(finding: Any) -> tuple[str, str]:
    """"⚑ grounding: kind: message" for one grounding finding, and its style (errors stand out)."""
    f = finding if isinstance(finding, dict) else {}
    sev = "error" if f.get("severity") == "error" else "warning"
    text = compact(f"{f.get('kind')}: {f.get('message')}", 300)
    return (f"⚑ grounding: {text}" if sev == "error" else f"⚑ grounding (warning): {text}",
            "bold magenta" if sev == "error" else "yellow")


def checks_line(ev: Any) -> tuple[str, str] | None:
    """"✓ checks: floor + model (NAME: N tokens, 0.8 s)" when the checks' model layer was
    called (its tokens and time are the question's too), or why it did not run; None when only
    the pattern floor was meant to run (the offline workflow)."""
    model, note = getattr(ev, "model", None), getattr(ev, "note", None)
    if model is None and note is None:
        return None
    usage = getattr(ev, "usage", None) or {}
    tokens = sum(int(v) for v in usage.values() if isinstance(v, int))
    ms = getattr(ev, "duration_ms", 0.0) or 0.0
    layers = " + ".join(str(x) for x in (getattr(ev, "layers", None) or ["floor"]))
    what = compact(f"{model}: {tokens:,} tokens, {ms / 1000:.1f} s", 120)
    if note:
        return f"⚑ checks: {layers} only ({compact(str(note), 160)})", "yellow"
    return f"✓ checks: {layers} ({what})", "dim"


def repair_lines(findings: Any, draft: Any) -> list[tuple[str, str]]:
    """The repair turn in the trace: what went back to the model, one line a finding."""
    fs = [f for f in findings if isinstance(f, dict)] if isinstance(findings, list) else []
    n = len(fs)
    what = f"draft {_word(draft, 40)}" if isinstance(draft, str) and draft else "the answer"
    out = [(f"↺ repair: {n} error-level finding{'s' if n != 1 else ''} on {what} sent back to "
            "the model, once, to correct", "bold yellow")]
    for f in fs[:10]:
        out.append(("  " + compact(f"{f.get('kind')}: {f.get('message')}", 300), "yellow"))
    if n > 10:
        out.append((f"  … {n - 10} more in --json and the session log", "yellow"))
    return out


def draft_block(text: Any, width: int | None) -> list[str]:
    """A draft's text as a quoted block ("  │ line"), wrapped at word boundaries to ``width``
    (None: not wrapped), every line cleaned; line separators (U+2028, U+0085…) end a line."""
    lines = clean_for_terminal(str(text or "")).splitlines() or [""]
    out: list[str] = []
    used = 0  # lines of the text shown
    for ln in lines:
        ln = ln.rstrip()
        if width and width > 12 and len(ln) > width - 4:
            rows = textwrap.wrap(ln, width - 4, break_long_words=False, break_on_hyphens=False) or [""]
        else:
            rows = [ln]
        if len(out) + len(rows) > DRAFT_LINES:
            break
        out += rows
        used += 1
    shown = ["  │ " + ln if ln else "  │" for ln in out]
    if used < len(lines):
        n = len(lines) - used
        shown.append(f"  … {n} more line{'s' if n > 1 else ''} in the draft file")
    return shown
