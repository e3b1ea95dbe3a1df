"""Edge cases found in review: odd database values, slow views, empty replies, hostile stop
reasons, unterminated streams, secrets in plain answers, cancelled drafts."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import threading
import time

import pytest

from agentcli.app import App
from agentcli.config import resolve
from agentcli.events import DraftSaved, ToolCallStarted
from agentcli.stores import init_sqlite
from agentcli.sessions.log import read_events
from agentcli.testing.fake_anthropic import message, text, tool_results, tool_use_block

from .conftest import TEST_KEY


def make_app(**kw) -> App:
    return App.open(resolve(provider="anthropic", **kw))


async def ask(app, q, conv=None):
    conv = conv or app.conversation()
    events = []
    b = await app.run(conv, q, [events.append])
    return conv, b, events


def test_a_blob_in_the_database_is_text_in_the_result_and_nothing_hangs(anthropic_env, fake_anthropic, tmp_path, monkeypatch):
    db = tmp_path / "blob.sqlite3"
    init_sqlite(db, 20)
    conn = sqlite3.connect(db)
    conn.execute("UPDATE orders SET status_detail = X'41424344' WHERE code = 'GH56JK78MN'")
    conn.commit()
    conn.close()
    monkeypatch.setenv("AGENTCLI_DB", str(db))
    fake_anthropic.queue(message(tool_use_block("get_order_status", {"order_code": "GH56JK78MN"})), text("ok"))

    async def go():
        app = make_app()
        try:
            return await asyncio.wait_for(ask(app, "GH56JK78MN?"), 20)
        finally:
            await app.aclose()

    _, b, _ = asyncio.run(go())
    (res,) = tool_results(fake_anthropic.requests[1])
    assert not res.get("is_error") and json.loads(res["content"])["status_detail"] == "ABCD"
    assert b.exit_code == 0


@pytest.fixture
def slow_view_db(tmp_path):
    """An orders database whose ``orders`` is a view that takes seconds to answer."""
    db = tmp_path / "slow.sqlite3"
    init_sqlite(db, 20)
    conn = sqlite3.connect(db)
    conn.executescript("""
        ALTER TABLE orders RENAME TO orders_base;
        CREATE VIEW orders AS SELECT * FROM orders_base WHERE
          (WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 300000000)
           SELECT count(*) FROM c) > 0;
    """)
    conn.commit()
    conn.close()
    return db


def test_a_slow_sqlite_view_is_stopped_at_the_tool_timeout(anthropic_env, fake_anthropic, slow_view_db, monkeypatch):
    monkeypatch.setenv("AGENTCLI_DB", str(slow_view_db))
    fake_anthropic.queue(message(tool_use_block("get_order_status", {"order_code": "GH56JK78MN"}),
                                 tool_use_block("get_order_status", {"order_code": "ORD-20261234"})),
                         text("slow"))

    async def go():
        app = make_app(tool_timeout=0.5)
        try:
            t0 = time.monotonic()
            out = await ask(app, "GH56JK78MN?")
            return out, time.monotonic() - t0
        finally:
            await app.aclose()

    (_, b, events), elapsed = asyncio.run(go())
    calls = b.result()["tool_calls"]
    assert [(c["is_error"], c["outcome"]) for c in calls] == [(True, "timeout")] * 2
    # Both slow lookups left the event loop and ran side by side: both started before either ended.
    kinds = [type(e).__name__ for e in events if type(e).__name__ in ("ToolCallStarted", "ToolResult")]
    assert kinds == ["ToolCallStarted", "ToolCallStarted", "ToolResult", "ToolResult"]
    assert elapsed < 30  # stopped inside SQLite, not after the whole (minutes-long) query


def test_ctrl_c_stops_a_slow_sqlite_view(anthropic_env, fake_anthropic, slow_view_db, monkeypatch):
    monkeypatch.setenv("AGENTCLI_DB", str(slow_view_db))
    fake_anthropic.queue(message(tool_use_block("get_order_status", {"order_code": "GH56JK78MN"}, id="t_slow")))

    async def go():
        app = make_app(tool_timeout=600)
        conv = app.conversation()

        def cancel_soon(ev):
            if isinstance(ev, ToolCallStarted):
                asyncio.get_running_loop().call_later(0.3, task.cancel)

        task = asyncio.ensure_future(app.run(conv, "GH56JK78MN?", [cancel_soon]))
        t0 = time.monotonic()
        with pytest.raises(asyncio.CancelledError):
            await task
        elapsed = time.monotonic() - t0
        await app.aclose()
        return conv, elapsed

    conv, elapsed = asyncio.run(asyncio.wait_for(go(), 120))
    assert elapsed < 30  # the loop was free to cancel: the query ran in a worker thread
    last = conv.history[-1]
    assert last["role"] == "user" and last["content"][0]["tool_use_id"] == "t_slow"


def test_empty_reply_is_not_kept_in_the_history(anthropic_env, fake_anthropic):
    fake_anthropic.queue(message(tool_use_block("get_order_status", {"order_code": "GH56JK78MN"})),
                         message(), text("Second answer."))

    async def go():
        app = make_app()
        try:
            conv, b1, _ = await ask(app, "first")
            conv, b2, _ = await ask(app, "second", conv)
            return b1, b2
        finally:
            await app.aclose()

    b1, b2 = asyncio.run(go())
    msgs = fake_anthropic.requests[2]["messages"]
    assert all(m["content"] for m in msgs)
    assert [m["role"] for m in msgs] == ["user", "assistant", "user"]
    assert msgs[-1]["content"][-1]["text"] == "second"
    assert b2.result()["answer"] == "Second answer."


def test_hostile_stop_reason_is_neither_printed_nor_logged(cli, anthropic_env, fake_anthropic, home):
    fake_anthropic.queue(text("x", stop_reason="\x1b]0;PWNED\x07\x1b[2J"))
    p = cli(["ask", "hi"], anthropic_env)
    assert p.returncode == 1 and "\x1b" not in p.err + p.out
    assert "stopped (unknown)" in p.err
    (log,) = (home / "sessions").glob("*.jsonl")
    assert "PWNED" not in log.read_text()


def test_a_stream_without_message_stop_is_never_executed(anthropic_env, fake_anthropic, drafts_dir):
    fake_anthropic.handler = lambda req: message(tool_use_block("draft_reply", {"text": "Refund approved!"}),
                                                 omit_only_message_stop=True)

    async def go():
        app = make_app(retries=1)
        conv = app.conversation()
        conv.retry_base_delay = 0.01
        try:
            return await ask(app, "refund?", conv)
        finally:
            await app.aclose()

    _, b, events = asyncio.run(go())
    assert not [e for e in events if isinstance(e, ToolCallStarted)]
    assert not drafts_dir.exists()  # no draft: the folder is made by the first save
    assert b.exit_code == 4 and len(fake_anthropic.requests) == 2


def test_secrets_are_redacted_from_the_plain_answer_and_the_draft_metadata(cli, anthropic_env, fake_anthropic, drafts_dir):
    fake_anthropic.queue(message(tool_use_block("draft_reply", {"text": "Hi"})),
                         text(f"key {TEST_KEY} and postgresql://app:hunter2@db/shop done"))
    p = cli(["ask", f"my key is {TEST_KEY}, draft something"], anthropic_env)
    assert p.returncode == 0
    assert TEST_KEY not in p.out + p.err and "hunter2" not in p.out
    assert "***" in p.out
    (draft,) = drafts_dir.glob("d-*.md")
    assert TEST_KEY not in draft.read_text()


def test_lone_surrogate_from_the_model_prints_and_logs(cli, anthropic_env, fake_anthropic, home):
    fake_anthropic.queue(text("hello \ud800 there"))
    for args in (["ask", "--no-stream", "hi"], ["ask", "--json", "hi"]):
        p = cli(args, anthropic_env)
        assert p.returncode == 0 and "Traceback" not in p.err, p.err
        fake_anthropic.queue(text("hello \ud800 there"))
    for log in (home / "sessions").glob("*.jsonl"):
        warnings: list[str] = []
        assert any(e["type"] == "turn_finished" for e in read_events(log, warnings)) and not warnings


def test_cancelling_after_a_draft_keeps_its_real_result(anthropic_env, fake_anthropic, demo_db):
    # Two drafts of one response run one after the other (a draft beside a lookup is refused):
    # cancelled while the second is saving, the first keeps its real result.
    from agentcli.drafts.store import DraftStore

    release = threading.Event()  # the slow save goes on until the cancel is over (bounded)

    class SlowDrafts(DraftStore):
        def save(self, **kw):
            if kw.get("text") == "slow":
                release.wait(10)
            return super().save(**kw)

    fake_anthropic.queue(message(tool_use_block("draft_reply", {"text": "Hello"}, id="t_draft"),
                                 tool_use_block("draft_reply", {"text": "slow"}, id="t_slow")))

    async def go():
        app = App.open(resolve(provider="anthropic"))
        app.drafts = SlowDrafts(app.settings.drafts_dir)
        conv = app.conversation()

        def on(ev):
            if isinstance(ev, DraftSaved):
                task.cancel()

        task = asyncio.ensure_future(app.run(conv, "q", [on]))
        with pytest.raises(asyncio.CancelledError):
            await task
        release.set()  # the cancel returned while the save still ran; now let its thread end
        await app.aclose()
        return conv

    conv = asyncio.run(go())
    results = {b["tool_use_id"]: b for b in conv.history[-1]["content"]}
    assert results["t_slow"]["is_error"] is True and "cancelled" in results["t_slow"]["content"]
    assert not results["t_draft"].get("is_error") and "pending_review" in results["t_draft"]["content"]
