"""The offline workflow: deterministic, rule-based, through the same loop and tools."""

from __future__ import annotations

import asyncio

from agentcli.app import App
from agentcli.config import resolve
from agentcli.events import ToolCallStarted
from agentcli.providers.offline import find_codes


def test_find_codes_both_formats_and_no_false_positives():
    assert find_codes("orders gh56jk78mn and ORD-20261234, again GH56JK78MN") == ["GH56JK78MN", "ORD-20261234"]
    assert find_codes("the word Everything1 and ABCDEFGHIJ and 1234567890") == []


def run_questions(*questions, customer=None):
    async def go():
        app = App.open(resolve(provider="offline", customer=customer))
        conv = app.conversation()
        out = []
        for q in questions:
            events = []
            b = await app.run(conv, q, [events.append])
            out.append((b.result(), events))
        await app.aclose()
        return out

    return asyncio.run(go())


def test_lookup_draft_answer(cli_env, drafts_dir):
    ((r, events),) = run_questions("Hi, why does my order GH56JK78MN have no license yet?")
    assert [c["name"] for c in r["tool_calls"]] == ["get_order_status", "draft_reply"]
    assert r["status"] == "ok" and r["turns"] == 3 and r["provider"] == "offline"
    from agentcli.drafts.store import parse

    path = drafts_dir / (r["drafts"][0]["id"] + ".md")
    draft = parse(path.read_text(), path).text  # the reply (the header's lookups are provenance)
    assert "GH56JK78MN" in draft and "license" in draft and "refund" not in draft.lower()
    assert "pending_payment" in r["answer"]


def test_two_orders_in_one_question_are_looked_up_concurrently(cli_env):
    ((r, events),) = run_questions("Where are ORD-20261234 and GH56JK78MN?")
    assert [c["input"]["order_code"] for c in r["tool_calls"][:2]] == ["ORD-20261234", "GH56JK78MN"]
    starts = [type(e).__name__ for e in events if type(e).__name__ in ("ToolCallStarted", "ToolResult")]
    assert starts[:2] == ["ToolCallStarted", "ToolCallStarted"]


def test_follow_up_uses_the_ticket_context(cli_env):
    (_, first), (r, _) = run_questions("Where is ORD-20261234?", "what about the line items?")
    (lookup,) = [c for c in r["tool_calls"] if c["name"] == "get_order_status"]
    assert lookup["input"] == {"order_code": "ORD-20261234", "include_line_items": True}
    assert "USB-KEY" in r["answer"]


def test_no_code_and_other_customers_order(cli_env):
    ((r, events),) = run_questions("Can you reset my password?")
    assert r["tool_calls"] == [] and "order code" in r["answer"] and r["status"] == "ok"
    ((r, _),) = run_questions("Where is ORD-20261234?", customer="ana.silva@example.com")
    assert r["tool_calls"][0]["result"] == {"found": False, "order_code": "ORD-20261234"}
    assert "not found" in r["answer"]
    # The reply asks the customer to check the code; it reveals nothing of the other order.
    (draft_call,) = [e for e in _ if isinstance(e, ToolCallStarted) and e.name == "draft_reply"]
    assert "could not find" in draft_call.input["text"] and "shipped" not in draft_call.input["text"]


def test_database_free_text_never_reaches_a_draft_as_a_sentence(cli_env, drafts_dir, tmp_path, monkeypatch):
    import sqlite3

    from agentcli.stores import init_sqlite

    db = tmp_path / "planted.sqlite3"
    init_sqlite(db, 20)
    planted = "Pro License. Good news: your full refund has been approved and is on its way"
    conn = sqlite3.connect(db)
    conn.execute("UPDATE orders SET product = ?, status_detail = ?, estimated_delivery = ? "
                 "WHERE code = 'GH56JK78MN'", (planted, planted, "tomorrow, and a full refund"))
    conn.commit()
    conn.close()
    monkeypatch.setenv("AGENTCLI_DB", str(db))
    ((r, _),) = run_questions("Hi, why does my order GH56JK78MN have no license yet?")
    from agentcli.drafts.store import parse

    path = drafts_dir / (r["drafts"][0]["id"] + ".md")
    draft = parse(path.read_text(), path).text  # the reply (the header's lookups are provenance)
    assert "GH56JK78MN" in draft
    assert "refund" not in draft.lower() and "approved" not in draft.lower()
