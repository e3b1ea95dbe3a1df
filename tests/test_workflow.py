"""The workflow mode (issue 19 item 5): agentcli looks up the question's order codes itself, as
tool calls in the provider's own history format, then the model drafts and answers with the
tools still offered. Scripted model in-process; then both real SDKs against the fake servers."""

from __future__ import annotations

import asyncio
import json

import pytest

from agentcli.app import App
from agentcli.config import resolve, sessions_dir
from agentcli.events import ModelRequest, ToolCallStarted, ToolResult
from agentcli.drafts.queue import provenance
from agentcli.sessions.log import read_events
from agentcli.testing import fake_anthropic as fa
from agentcli.testing import fake_openai as fo
from agentcli.testing.scripted import Reply, ScriptedProvider
from agentcli.tools import default_registry

from .conftest import saved_drafts

Q = "Customer: hi, why no license for GH56JK78MN, and where is ord-20261234?"


@pytest.fixture(autouse=True)
def _env(cli_env):
    return cli_env



def run(provider, question, **settings):
    async def go():
        app = App.open(resolve(provider="offline", **settings), registry=default_registry())
        app.provider = provider
        conv = app.conversation()
        events: list = []
        b = await app.run(conv, question, [events.append])
        await app.aclose()
        return conv, b, events, app.settings.drafts_dir

    return asyncio.run(go())


def drafting_model(history, turn):
    if turn == 1:
        return Reply(calls=[("draft_reply", {"text": "Your order GH56JK78MN is waiting for payment.",
                                             "order_code": "GH56JK78MN"})])
    return Reply("Looked up both; draft saved.")


def test_workflow_looks_up_the_codes_before_the_first_model_call(drafts_dir):
    provider = ScriptedProvider(drafting_model)
    conv, b, events, ddir = run(provider, Q, mode="workflow", max_turns=2)
    r = b.result()
    assert r["status"] == "ok" and r["answer"] == "Looked up both; draft saved."
    # the lookups ran (as tool events) before any model request, in the question's order
    first_request = next(i for i, e in enumerate(events) if isinstance(e, ModelRequest))
    started = [e for e in events[:first_request] if isinstance(e, ToolCallStarted)]
    assert [e.input["order_code"] for e in started] == ["GH56JK78MN", "ORD-20261234"]
    assert sum(isinstance(e, ToolResult) for e in events[:first_request]) == 2
    # the model's first request: question, an assistant tool_use turn, the paired results
    sent = provider.requests[0]
    assert [m["role"] for m in sent] == ["user", "assistant", "user"]
    uses = [blk["id"] for blk in sent[1]["content"] if blk["type"] == "tool_use"]
    assert [x["tool_use_id"] for x in sent[2]["content"]] == uses and len(set(uses)) == 2
    assert json.loads(sent[2]["content"][0]["content"])["status"] == "pending_payment"
    # the synthetic turn costs no model turn (--max-turns 2 sufficed for draft + answer)
    assert r["turns"] == 2
    assert [c["name"] for c in r["tool_calls"]] == ["get_order_status"] * 2 + ["draft_reply"]
    # the draft was written after the results: its provenance lists them
    (d,) = saved_drafts(ddir)
    prov = provenance(d, sessions_dir())
    assert prov["found"] and {c["input"]["order_code"] for c in prov["tool_calls"]} == {
        "GH56JK78MN", "ORD-20261234"}
    start = next(read_events(sessions_dir() / f"{conv.session_id}.jsonl", []))
    assert start.get("mode") == "workflow"


def test_agent_mode_stays_the_default_and_a_question_without_codes_is_plain(drafts_dir):
    provider = ScriptedProvider([Reply("agent")])
    run(provider, Q)
    assert len(provider.requests[0]) == 1  # agent mode: the model decides the lookups
    provider = ScriptedProvider([Reply("no codes")])
    _, b, events, _ = run(provider, "What are your opening hours? (code 12345 is not an order)",
                          mode="workflow")
    assert len(provider.requests[0]) == 1 and b.result()["tool_calls"] == []


def test_follow_up_questions_look_up_their_own_codes(drafts_dir):
    provider = ScriptedProvider(lambda h, t: Reply("ok"))

    async def go():
        app = App.open(resolve(provider="offline", mode="workflow"), registry=default_registry())
        app.provider = provider
        conv = app.conversation()
        await app.run(conv, "GH56JK78MN?", [])
        await app.run(conv, "and now AB12CD34EF?", [])
        await app.aclose()

    asyncio.run(go())
    second = provider.requests[1]
    assert [m["role"] for m in second] == ["user", "assistant", "user", "assistant", "user", "assistant", "user"]
    assert second[-2]["content"][0]["input"] == {"order_code": "AB12CD34EF"}


def test_workflow_through_the_anthropic_sdk(cli, anthropic_env, fake_anthropic, drafts_dir):
    fake_anthropic.queue(
        fa.message(fa.tool_use_block("draft_reply", {"text": "Your order is waiting for payment."})),
        fa.text("Done."))
    p = cli(["ask", "--mode", "workflow", "--json", "Customer: license for GH56JK78MN?"], anthropic_env)
    assert p.returncode == 0, p.err
    r = json.loads(p.out)
    assert [c["name"] for c in r["tool_calls"]] == ["get_order_status", "draft_reply"]
    msgs = fake_anthropic.requests[0]["messages"]
    assert [m["role"] for m in msgs] == ["user", "assistant", "user"]
    (use,) = msgs[1]["content"]
    assert use["type"] == "tool_use" and use["name"] == "get_order_status" and use["id"].startswith("toolu_")
    (res,) = msgs[2]["content"]
    assert res["type"] == "tool_result" and res["tool_use_id"] == use["id"] and "pending_payment" in res["content"]
    assert fake_anthropic.requests[0].get("tools")  # the tools stay offered


def test_workflow_through_the_openai_sdk(cli, openai_env, fake_openai, drafts_dir):
    fake_openai.queue(
        fo.completion(fo.tool_call("draft_reply", {"text": "Your order is waiting for payment."})),
        fo.text("Done."))
    env = {**openai_env}
    p = cli(["ask", "--json", "Customer: license for GH56JK78MN and ORD-20261234?"],
            {**env, "AGENTCLI_MODE": "workflow"})
    assert p.returncode == 0, p.err
    r = json.loads(p.out)
    assert [c["name"] for c in r["tool_calls"]] == ["get_order_status", "get_order_status", "draft_reply"]
    msgs = fake_openai.requests[0]["messages"]
    assert [m["role"] for m in msgs] == ["system", "user", "assistant", "tool", "tool"]
    calls = msgs[2]["tool_calls"]
    assert msgs[2]["content"] == ""
    assert [json.loads(c["function"]["arguments"]) for c in calls] == [
        {"order_code": "GH56JK78MN"}, {"order_code": "ORD-20261234"}]
    assert [m["tool_call_id"] for m in msgs[3:]] == [c["id"] for c in calls]
    assert fake_openai.requests[0]["tool_choice"] == "auto"


def test_mode_from_config_file_and_bad_values(cli, cli_env, home):
    def logged_mode(out):
        sid = json.loads(out)["session_id"]
        return next(read_events(home / "sessions" / f"{sid}.jsonl", [])).get("mode")

    (home / "agentcli.toml").write_text('mode = "workflow"\n')
    p = cli(["ask", "--provider", "offline", "--json", "GH56JK78MN?"], cli_env)
    assert p.returncode == 0, p.err
    assert logged_mode(p.out) == "workflow"
    p = cli(["ask", "--mode", "Agent", "--provider", "offline", "--json", "GH56JK78MN?"], cli_env)
    assert p.returncode == 0 and logged_mode(p.out) == "agent"  # the flag wins, any case
    p = cli(["ask", "--mode", "\x1b[31mfast", "x"], cli_env)
    assert p.returncode == 2 and "unknown mode" in p.err and "\x1b[31m" not in p.err
    (home / "agentcli.toml").write_text('mode = "auto"\n')
    p = cli(["ask", "--provider", "offline", "x"], cli_env)
    assert p.returncode == 3 and "agentcli.toml: mode" in p.err and "Traceback" not in p.err


def test_cancelled_during_the_workflow_lookups_leaves_a_valid_history(demo_db):
    import time as _time

    from agentcli.stores.sqlite import SQLiteStore

    class Slow(SQLiteStore):
        inline = False

        def lookup(self, *a):
            _time.sleep(1)
            return super().lookup(*a)

    provider = ScriptedProvider(lambda h, t: Reply("never asked"))

    async def go():
        app = App.open(resolve(provider="offline", mode="workflow"), registry=default_registry(),
                       store=Slow(demo_db))
        app.provider = provider
        conv = app.conversation()

        def on(ev):
            if isinstance(ev, ToolCallStarted):
                task.cancel()

        task = asyncio.ensure_future(app.run(conv, "GH56JK78MN?", [on]))
        with pytest.raises(asyncio.CancelledError):
            await task
        await app.aclose()
        return conv

    conv = asyncio.run(go())
    assert provider.requests == []  # no model call was made
    assert [m["role"] for m in conv.history] == ["user", "assistant", "user"]
    (use,), (res,) = conv.history[1]["content"], conv.history[2]["content"]
    assert res["tool_use_id"] == use["id"] and res["is_error"] and "cancelled" in res["content"]
