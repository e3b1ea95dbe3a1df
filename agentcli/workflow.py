"""The workflow mode: for the common ticket the first steps are known, so our code takes them.

"Workflow first, then agent." In ``--mode workflow`` (``AGENTCLI_MODE``, ``mode`` in
agentcli.toml) each question goes like this:

1. agentcli finds the order codes in the question (the offline workflow's ``find_codes``: up to
   five, in order, without repeats);
2. it looks each one up with the real ``get_order_status`` tool, through the loop's own tool
   runner: the person sees and the session log records the same ``tool_call`` / ``tool_result``
   events as in agent mode, and the ticket's ``--json`` lists the calls as usual;
3. the history gets what a model that had asked for those lookups would have: an assistant turn
   of tool calls in the provider's own format (``Provider.tool_call_turn``: Messages
   ``tool_use`` blocks, or an OpenAI ``tool_calls`` message) followed by the results, each paired
   with its id;
4. then the model takes over with the tools still offered: it drafts (``draft_reply``), looks up
   what the code could not resolve, and answers.

A small local model that loops or forgets to look up then starts from the facts. The model is
never asked to decide the lookups our code can decide; a question without an order code runs
exactly as in agent mode. No model call is spent on step 1-3, and they do not count against
``--max-turns``.
"""

from __future__ import annotations

from typing import Any

AGENT, WORKFLOW = "agent", "workflow"
LOOKUP_TOOL = "get_order_status"


def lookup_calls(question: str, tool_names: list[str]) -> list[tuple[str, dict[str, Any]]]:
    """The lookups our code makes for ``question`` before the model's first turn."""
    from .providers.offline import LINE_HINTS, find_codes

    if LOOKUP_TOOL not in tool_names or not isinstance(question, str):
        return []
    lines = bool(LINE_HINTS.search(question))
    return [(LOOKUP_TOOL, {"order_code": c, "include_line_items": True} if lines else {"order_code": c})
            for c in find_codes(question)]
