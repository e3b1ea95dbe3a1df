"""A draft is only saved from a response that did not also ask for lookups (issue 19 item 3):
such a draft was written before the lookups' results existed, so its provenance would be untrue.
Scripted model, real tools, real SQLite, real draft files and session logs."""

from __future__ import annotations

import asyncio

import pytest

from agentcli.app import App
from agentcli.config import resolve, sessions_dir
from agentcli.drafts.queue import provenance
from agentcli.testing.scripted import Reply, ScriptedProvider
from agentcli.tools import default_registry

from .conftest import saved_drafts


@pytest.fixture(autouse=True)
def _env(cli_env):
    return cli_env



def run(provider, question):
    async def go():
        app = App.open(resolve(provider="offline"), registry=default_registry())
        app.provider = provider
        conv = app.conversation()
        events: list = []
        b = await app.run(conv, question, [events.append])
        await app.aclose()
        return b, events, app.settings.drafts_dir

    return asyncio.run(go())


def test_a_draft_beside_a_lookup_is_refused_and_the_next_turn_drafts_from_the_result(drafts_dir):
    def model(history, turn):
        if turn == 1:
            return Reply(calls=[("get_order_status", {"order_code": "GH56JK78MN"}),
                                ("draft_reply", {"text": "Your order has not been paid yet?",
                                                 "order_code": "GH56JK78MN"})])
        if turn == 2:
            return Reply(calls=[("draft_reply", {"text": "Your order is waiting for payment.",
                                                 "order_code": "GH56JK78MN"})])
        return Reply("Saved a draft.")

    provider = ScriptedProvider(model)
    b, events, ddir = run(provider, "Customer: why no license for GH56JK78MN?")
    r = b.result()
    assert r["status"] == "ok"
    first_draft = [c for c in r["tool_calls"] if c["name"] == "draft_reply"][0]
    assert first_draft["is_error"] and first_draft["outcome"] == "invalid_input"
    assert "get_order_status" in first_draft["result"] and "again" in first_draft["result"]
    # the model heard it, paired with its call
    results = provider.requests[1][-1]["content"]
    assert [x["is_error"] for x in results if x.get("is_error")] == [True]
    # exactly one draft on disk: the one written after the lookup result
    drafts = saved_drafts(ddir)
    assert [d.text.strip() for d in drafts] == ["Your order is waiting for payment."]
    prov = provenance(drafts[0], sessions_dir())
    assert prov["found"]
    lookups = [c for c in prov["tool_calls"] if c["name"] == "get_order_status"]
    assert lookups and lookups[0]["result"]["status"] == "pending_payment"


def test_every_draft_of_a_mixed_response_is_refused_whatever_the_order(drafts_dir):
    # draft first, then an unknown tool and an invalid lookup: still not results the model had seen
    provider = ScriptedProvider([
        Reply(calls=[("draft_reply", {"text": "A"}), ("draft_reply", {"text": "B"}),
                     ("no_such_tool", {}), ("get_order_status", {"order_code": 7})]),
        Reply("ok"),
    ])
    b, events, ddir = run(provider, "q")
    drafts = [c for c in b.result()["tool_calls"] if c["name"] == "draft_reply"]
    assert len(drafts) == 2 and all(c["is_error"] for c in drafts)
    assert saved_drafts(ddir) == []
    assert not [e for e in events if getattr(e, "type", "") == "draft_saved"]


def test_drafts_alone_in_a_response_are_saved(drafts_dir):
    provider = ScriptedProvider([
        Reply(calls=[("draft_reply", {"text": "First reply"}), ("draft_reply", {"text": "Second reply"})]),
        Reply("ok"),
    ])
    b, events, ddir = run(provider, "q")
    assert not any(c["is_error"] for c in b.result()["tool_calls"])
    assert sorted(d.text.strip() for d in saved_drafts(ddir)) == ["First reply", "Second reply"]


def test_a_draft_beside_a_repeat_of_a_lookup_already_read_is_saved(drafts_dir):
    # Small models repeat the lookup beside every draft: that draft was written with the
    # result in view, so it is saved; a draft beside a NEW lookup still is not.
    def model(history, turn):
        if turn == 1:
            return Reply(calls=[("get_order_status", {"order_code": "GH56JK78MN"})])
        if turn == 2:
            return Reply(calls=[("get_order_status", {"order_code": " gh56jk78mn "}),
                                ("draft_reply", {"text": "Waiting for payment."})])
        if turn == 3:
            return Reply(calls=[("get_order_status", {"order_code": "ORD-20261234"}),
                                ("draft_reply", {"text": "Both orders."})])
        return Reply("done")

    async def go():
        app = App.open(resolve(provider="offline"), registry=default_registry())
        app.provider = ScriptedProvider(model)
        conv = app.conversation()
        b1 = await app.run(conv, "GH56JK78MN?", [])
        conv.reset()  # a new ticket: nothing has been read in it
        conv.provider = ScriptedProvider(lambda h, t: model(h, 2) if t == 1 else Reply("done"))
        b2 = await app.run(conv, "GH56JK78MN?", [])
        await app.aclose()
        return b1.result(), b2.result(), app.settings.drafts_dir

    r1, r2, ddir = asyncio.run(go())
    drafts = [c for c in r1["tool_calls"] if c["name"] == "draft_reply"]
    assert [c["is_error"] for c in drafts] == [False, True]
    assert "get_order_status" in drafts[1]["result"]
    assert [c["is_error"] for c in r2["tool_calls"] if c["name"] == "draft_reply"] == [True]
    assert [d.text.strip() for d in saved_drafts(ddir)] == ["Waiting for payment."]
