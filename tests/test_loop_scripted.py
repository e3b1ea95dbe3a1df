"""Loop logic with a scripted in-process model (agentcli.testing.scripted): no HTTP, real tools,
a real SQLite database and real draft files. The wire-level behaviour is tested through the real
SDKs against the fake servers (test_loop.py, test_openai_provider.py)."""

from __future__ import annotations

import asyncio
import json

import pytest

from agentcli.app import App
from agentcli.config import resolve
from agentcli.errors import ModelAPIError
from agentcli.events import DraftSaved, Retry, ToolResult
from agentcli.providers import ModelTurn, ToolCall
from agentcli.testing.scripted import Reply, ScriptedProvider
from agentcli.tools import default_registry


def run_question(provider, question, *, conv=None, app=None, **settings):
    async def go():
        nonlocal app
        owned = app is None
        if owned:
            app = App.open(resolve(provider="offline", **settings), registry=default_registry())
            app.provider = provider
        c = conv or app.conversation()
        events = []
        builder = await app.run(c, question, [events.append])
        if owned:
            await app.aclose()
        return c, builder, events

    return asyncio.run(go())


@pytest.fixture(autouse=True)
def _env(cli_env):
    return cli_env


def last_user(history):
    return history[-1]


def test_all_results_of_a_turn_go_back_in_one_message_paired_in_order():
    provider = ScriptedProvider([
        Reply(calls=[("get_order_status", {"order_code": "GH56JK78MN"}),
                     ("no_such_tool", {}),
                     ("get_order_status", {"order_code": "ORD-20261234"})]),
        Reply("Both looked up."),
    ])
    conv, b, events = run_question(provider, "GH56JK78MN and ORD-20261234?")
    assert b.result()["status"] == "ok" and b.result()["answer"] == "Both looked up."
    second = provider.requests[1]
    results = last_user(second)["content"]
    uses = [blk for blk in second[-2]["content"] if blk["type"] == "tool_use"]
    assert [r["tool_use_id"] for r in results] == [u["id"] for u in uses]
    assert [bool(r.get("is_error")) for r in results] == [False, True, False]
    assert "unknown tool" in results[1]["content"]


def test_the_turn_limit_stops_with_a_visible_incomplete_status():
    provider = ScriptedProvider(lambda h, t: Reply(calls=[("get_order_status", {"order_code": "GH56JK78MN"})]))
    conv, b, _ = run_question(provider, "loop forever", max_turns=3)
    r = b.result()
    assert (r["status"], r["stop_reason"], r["turns"]) == ("incomplete", "turn_limit", 3)
    assert b.exit_code == 1
    # every tool_use of the history has its result: the ticket stays usable
    assert conv.history[-1]["role"] == "user"


@pytest.mark.parametrize("stop", ["max_tokens", None, "refusal"])
def test_tool_calls_of_a_cut_or_refused_response_never_run(stop, drafts_dir):
    turn = ModelTurn(stop, "", [ToolCall("toolu_x", "draft_reply", {"text": "Dear customer"})], {},
                     {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_x",
                                                         "name": "draft_reply", "input": {"text": "Dear customer"}}]})
    provider = ScriptedProvider(lambda h, t: turn)
    conv, b, events = run_question(provider, "write a reply", retries=0)
    assert not [e for e in events if isinstance(e, (ToolResult, DraftSaved))]
    assert not list(drafts_dir.glob("*.md")) if drafts_dir.exists() else True
    assert b.exit_code != 0


def test_a_retryable_failure_is_retried_then_answered():
    calls = []

    def model(history, turn):
        calls.append(turn)
        if turn == 1:
            raise ModelAPIError("the model API is overloaded (529)", kind="overloaded", retryable=True,
                                retry_after=0.01)
        return Reply("Fine now.")

    conv, b, events = run_question(ScriptedProvider(model), "hello?", retries=2)
    assert b.result()["status"] == "ok" and calls == [1, 2]
    assert [type(e) for e in events if isinstance(e, Retry)] == [Retry]


def test_the_ticket_keeps_calls_and_drafts_across_questions(drafts_dir):
    def model(history, turn):
        if turn in (1, 4):
            return Reply(calls=[("get_order_status", {"order_code": "GH56JK78MN"})])
        if turn in (2, 5):  # a draft after reading the lookup (drafting alongside it is refused)
            return Reply(calls=[("draft_reply", {"text": f"Reply number {turn}", "order_code": "GH56JK78MN"})])
        return Reply("Saved.")

    async def go():
        app = App.open(resolve(provider="offline"), registry=default_registry())
        app.provider = ScriptedProvider(model)
        conv = app.conversation()
        for q in ("first question GH56JK78MN", "make it shorter"):
            await app.run(conv, q)
        await app.aclose()
        return conv.ticket

    t = asyncio.run(go())
    assert [c.name for c in t.calls] == ["get_order_status", "draft_reply"] * 2
    assert len(t.drafts) == 2 and all(d.order_code == "GH56JK78MN" for d in t.drafts)
    assert all(json.dumps(c.result) for c in t.calls)
    # the second draft superseded the first: one live draft, read by both questions' lookups
    assert t.live.id == t.drafts[-1].id and t.live.text == "Reply number 5"
    assert t.questions == ["first question GH56JK78MN", "make it shorter"]
    assert [r.order_code for r in t.lookups] == ["GH56JK78MN", "GH56JK78MN"]
