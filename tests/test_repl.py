"""The REPL (issue 3): driven through prompt_toolkit's pipe input against the fake Messages API.

In-process tests build the real ``App`` (real SDK -> FakeAnthropic on 127.0.0.1, the demo SQLite
file, real drafts and session logs) and inject a ``PromptSession`` reading from
``create_pipe_input`` with a ``DummyOutput``, plus a rich ``Console`` writing to a buffer.
The console script is exercised as a subprocess with a pipe on stdin (line mode) and in a
pseudo-terminal (pexpect).
"""

from __future__ import annotations

import asyncio
import io
import json
import os
import re
import signal
import stat
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import pexpect
import pytest
from rich.console import Console

from agentcli.app import App
from agentcli.cli.history import build_session
from agentcli.cli.repl import Repl
from agentcli.config import resolve as settings_from
from agentcli.sessions.log import read_events
from agentcli.testing.fake_anthropic import (error, message, text, tool_results,
                                             tool_use_block)
from agentcli.tools import READ_ONLY, Tool, default_registry

from .conftest import user_texts

# A long file (the REPL on terminals, cancelled turns):
# started among the first (tests/conftest.py).
pytestmark = pytest.mark.long

GUARD_S = 20  # a hang guard only; nothing here asserts on time


def agentcli_exe() -> str:
    exe = Path(sys.executable).parent / "agentcli"
    return str(exe) if exe.exists() else "agentcli"


# --------------------------------------------------------------------------- helpers

async def wait_until(cond, what: str) -> None:
    deadline = time.monotonic() + GUARD_S
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"never happened: {what}")
        await asyncio.sleep(0.01)


@contextmanager
def piped_repl(app: App, *, history=None, history_path=None, **kw):
    from prompt_toolkit.history import InMemoryHistory
    from prompt_toolkit.input import create_pipe_input
    from prompt_toolkit.output import DummyOutput

    with create_pipe_input() as inp:
        buf = io.StringIO()
        console = Console(file=buf, width=100, color_system=None, force_terminal=False,
                          highlight=False)
        if history is None and history_path is None:
            history = InMemoryHistory()
        session = build_session(input=inp, output=DummyOutput(), history=history,
                                history_path=history_path)
        yield Repl(app, console=console, session=session, **kw), inp, buf


async def type_lines(repl: Repl, inp, keys: str) -> None:
    """Type ``keys`` as a person does: one line per prompt, each sent once the REPL shows its
    next prompt (all at once they would be one paste, joined into one question)."""
    def at_prompt() -> bool:
        sessions = [repl.session, repl._confirm_session]
        return any(s is not None and s.app.is_running for s in sessions)

    last = -1
    for chunk in re.findall(r"(?:[^\r]|(?<=\x1b)\r)*(?:\r|$)", keys):  # Esc-Enter is no send
        if not chunk:
            continue
        await wait_until(lambda: at_prompt() and repl.prompts != last, "the next prompt")
        last = repl.prompts
        inp.send_text(chunk)


def run_keys(keys: str, *, registry=None, history_path=None, **settings) -> tuple[int, str]:
    """Type ``keys`` into a fresh REPL (ending with /exit or Ctrl-D); return (code, screen)."""

    async def main():
        app = App.open(settings_from(**settings), registry=registry)
        try:
            with piped_repl(app, history_path=history_path) as (repl, inp, buf):
                running = asyncio.create_task(repl.run())
                typing = asyncio.create_task(type_lines(repl, inp, keys))
                code = await asyncio.wait_for(running, GUARD_S)
                typing.cancel()
                return code, buf.getvalue()
        finally:
            await app.aclose()

    return asyncio.run(main())


def assert_valid_history(messages: list[dict]) -> None:
    """Roles alternate, and every tool_use is answered by a tool_result in the next message."""
    assert messages[0]["role"] == "user"
    for a, b in zip(messages, messages[1:]):
        assert a["role"] != b["role"], [m["role"] for m in messages]
    for i, m in enumerate(messages):
        if m["role"] != "assistant":
            continue
        uses = [b["id"] for b in m["content"] if b.get("type") == "tool_use"]
        if uses:
            nxt = messages[i + 1]["content"]
            answered = [b["tool_use_id"] for b in nxt if b.get("type") == "tool_result"]
            assert answered == uses


def session_events(home: Path) -> dict[str, list[dict]]:
    out = {}
    for p in sorted((home / "sessions").glob("*.jsonl")):
        out[p.stem] = list(read_events(p))
    return out


LOOKUP = lambda code="GH56JK78MN", **kw: message(tool_use_block("get_order_status", {"order_code": code}), **kw)  # noqa: E731


# --------------------------------------------------------------------------- conversation

def test_two_question_ticket_second_request_carries_first_exchange(anthropic_env, fake_anthropic, home):
    fake_anthropic.queue(LOOKUP(), text("Order GH56JK78MN is waiting for its payment to be matched."),
                         text("Payment pending; we are on it."))
    code, screen = run_keys("Where is GH56JK78MN?\rmake it shorter\r/exit\r")
    assert code == 0
    assert len(fake_anthropic.requests) == 3
    msgs = fake_anthropic.requests[2]["messages"]
    assert [m["role"] for m in msgs] == ["user", "assistant", "user", "assistant", "user"]
    assert user_texts(msgs[0]) == ["Where is GH56JK78MN?"]
    assert msgs[1]["content"][0]["type"] == "tool_use"
    assert '"pending_payment"' in tool_results({"messages": msgs[:3]})[0]["content"]
    assert "waiting for its payment" in msgs[3]["content"][0]["text"]
    assert user_texts(msgs[4]) == ["make it shorter"]
    # the trace and both answers reached the screen
    assert "→ get_order_status" in screen and "pending_payment" in screen
    assert "waiting for its payment to be matched." in screen and "Payment pending" in screen
    # one ticket = one session log holding both questions
    logs = session_events(home)
    assert len(logs) == 1
    questions = [e["text"] for e in next(iter(logs.values())) if e["type"] == "question"]
    assert questions == ["Where is GH56JK78MN?", "make it shorter"]


def test_banner_shows_provider_model_database_drafts_customer(anthropic_env, fake_anthropic, demo_db, drafts_dir):
    code, screen = run_keys("/exit\r", customer="ana.silva@example.com")
    assert code == 0
    head = screen.split("/help", 1)[0]
    for want in ("anthropic", "claude-sonnet-5-5", str(demo_db), str(drafts_dir), "ana.silva@example.com"):
        assert want in head
    assert "offline" not in head
    assert fake_anthropic.requests == []


def test_banner_says_when_the_offline_workflow_is_in_use(cli_env):
    code, screen = run_keys("Where is ORD-20261234?\r/exit\r", provider="offline")
    assert code == 0
    assert "offline workflow" in screen.split("/help", 1)[0]
    assert "ORD-20261234" in screen and "shipped" in screen


def test_new_starts_a_fresh_ticket(anthropic_env, fake_anthropic, home):
    fake_anthropic.queue(text("first answer"), text("second answer"))
    code, screen = run_keys("about GH56JK78MN\r/new\rsomething else\r/exit\r")
    assert code == 0
    second = fake_anthropic.requests[1]["messages"]
    assert len(second) == 1 and user_texts(second[0]) == ["something else"]
    assert "new ticket #2" in screen
    logs = session_events(home)
    assert len(logs) == 2  # a new session id, a new log
    assert sorted(e["text"] for ev in logs.values() for e in ev if e["type"] == "question") == \
        ["about GH56JK78MN", "something else"]


def test_customer_scopes_lookups_and_clears(anthropic_env, fake_anthropic, home):
    fake_anthropic.queue(LOOKUP(), text("not found"), LOOKUP(), text("found"), LOOKUP(), text("found"))
    code, screen = run_keys("/customer ben.okafor@example.net\rcheck GH56JK78MN\r"
                            "/customer not-an-email\r"
                            "/customer ana.silva@example.com\rcheck again\r"
                            "/customer\ronce more\r/exit\r")
    assert code == 0
    results = [json.loads(tool_results(fake_anthropic.requests[i])[0]["content"]) for i in (1, 3, 5)]
    assert results[0] == {"found": False, "order_code": "GH56JK78MN"}  # another customer's order
    assert results[1]["found"] is True and results[1]["status"] == "pending_payment"
    assert results[2]["found"] is True  # scope cleared
    assert "not an email address" in screen
    events = next(iter(session_events(home).values()))
    assert [e["customer"] for e in events if e["type"] == "question"] == \
        ["ben.okafor@example.net", "ana.silva@example.com", None]
    assert [e["customer"] for e in events if e["type"] == "customer_changed"] == \
        ["ben.okafor@example.net", "ana.silva@example.com", None]


def test_model_switch_applies_to_the_next_request(anthropic_env, fake_anthropic):
    fake_anthropic.queue(text("one"), text("two"))
    code, screen = run_keys("hi\r/model claude-other-9\rhi again\r/model\r/exit\r")
    assert code == 0
    assert [r["model"] for r in fake_anthropic.requests] == ["claude-sonnet-5-5", "claude-other-9"]
    assert "model: claude-other-9 (anthropic)" in screen


def test_unknown_command_lists_the_commands_and_sends_nothing(anthropic_env, fake_anthropic):
    code, screen = run_keys("/frobnicate now\r/help\r/exit\r")
    assert code == 0
    assert fake_anthropic.requests == []
    line = next(ln for ln in screen.splitlines() if "unknown command" in ln)
    assert "/frobnicate" in line
    for cmd in ("/help", "/new", "/customer", "/model", "/drafts", "/usage", "/history", "/exit"):
        assert cmd in line
    assert "Esc-Enter" in screen  # /help explains the keys


def test_drafts_history_and_usage_commands(anthropic_env, fake_anthropic, drafts_dir):
    reply = "Dear Ana, your payment is being matched to order GH56JK78MN. Kind regards"
    fake_anthropic.queue(
        message(tool_use_block("get_order_status", {"order_code": "GH56JK78MN"}),
                usage={"input_tokens": 600, "output_tokens": 10, "cache_read_input_tokens": 500}),
        message(tool_use_block("draft_reply", {"text": reply, "order_code": "GH56JK78MN"}),
                usage={"input_tokens": 600, "output_tokens": 20, "cache_read_input_tokens": 500}),
        text("Saved a draft.", usage={"input_tokens": 1300, "output_tokens": 5, "cache_read_input_tokens": 1100}),
        text("Hello.", usage={"input_tokens": 100, "output_tokens": 7, "cache_read_input_tokens": 0}),
    )
    code, screen = run_keys("Reply to Ana about GH56JK78MN\r/drafts\r/history\r/usage\r/new\r"
                            "/drafts\rhello\r/usage\r/exit\r")
    assert code == 0
    drafts = sorted(drafts_dir.glob("d-*.md"))
    assert len(drafts) == 1 and reply in drafts[0].read_text()
    # the save is shown once: id, then the path on a line of its own, then the text quoted
    lines = screen.splitlines()
    (i,) = [k for k, ln in enumerate(lines) if ln.startswith("✎ draft ")]
    assert lines[i] == f"✎ draft {drafts[0].stem} saved: pending review, nothing was sent"
    assert lines[i + 1] == f"  {drafts[0]}" and lines[i + 2] == f"  │ {reply}"
    trace = screen[:screen.index("drafts of this ticket")]
    assert "draft_reply ok" not in trace and '"draft_id"' not in trace and trace.count(str(drafts[0])) == 1
    listed = [ln for ln in screen.splitlines() if ln.strip().startswith(drafts[0].stem)]
    assert listed and "pending_review" in listed[0] and str(drafts[0]) in listed[0]
    assert "no drafts saved in this ticket yet" in screen  # after /new
    # /history: both calls of the ticket, in order
    hist = [ln for ln in screen.splitlines() if ln.lstrip().startswith(("1. ", "2. "))]
    assert "get_order_status" in hist[0] and "draft_reply" in hist[1]
    # /usage: ticket and session totals (the session survives /new)
    rows = [ln.split() for ln in screen.splitlines() if ln.startswith(("this ticket", "session ("))]
    assert rows[0][-5:-1] == ["2,500", "35", "2,100", "0"]
    assert rows[1][-5:-1] == ["2,500", "35", "2,100", "0"]
    assert rows[2][-5:-1] == ["100", "7", "0", "0"]
    assert rows[3][-5:-1] == ["2,600", "42", "2,100", "0"] and "2 tickets" in " ".join(rows[3])
    # ... and the estimated cost --json has (claude-sonnet-5-5: $3 in, $15 out, $0.30 cache read)
    first = (2500 * 3 + 35 * 15 + 2100 * 0.3) / 1e6
    assert rows[0][-1] == f"${first:.4f}" and rows[2][-1] == f"${(100 * 3 + 7 * 15) / 1e6:.4f}"
    assert rows[3][-1] == f"${first + (100 * 3 + 7 * 15) / 1e6:.4f}"
    # leaving lists the session's drafts, the one of the closed ticket included
    tail = lines[lines.index(next(ln for ln in lines if "saved in this session" in ln)):]
    assert tail[0].startswith("1 draft saved in this session") and drafts[0].stem in tail[1]


def test_lookups_are_one_compact_line_and_errors_too(anthropic_env, fake_anthropic):
    fake_anthropic.queue(
        message(tool_use_block("get_order_status", {"order_code": "ORD-20261234", "include_line_items": True}),
                tool_use_block("get_order_status", {"order_code": "not a code"})),
        text("Done."))
    code, screen = run_keys("Items of ORD-20261234?\r/exit\r")
    assert code == 0
    lines = screen.splitlines()
    (ok,) = [ln for ln in lines if ln.startswith("← get_order_status ok (")]
    # one line, as in `ask`: code, status, product, dates, the number of line items; no JSON
    assert "): ORD-20261234 " in ok and " line item" in ok and "{" not in ok
    err = [ln for ln in lines if ln.startswith("✗ get_order_status invalid_input (")]
    assert len(err) == 1 and "not a valid order code" in err[0]


def test_spinner_on_a_terminal_is_stopped_before_text(anthropic_env, fake_anthropic, monkeypatch):
    from agentcli.cli import render

    monkeypatch.setattr(render, "SPIN_DELAY_S", 0.0)  # every step shows its spinner at once
    fake_anthropic.queue(LOOKUP(), text("All clear."))

    async def main():
        from prompt_toolkit.history import InMemoryHistory
        from prompt_toolkit.input import create_pipe_input
        from prompt_toolkit.output import DummyOutput

        app = App.open(settings_from())
        try:
            with create_pipe_input() as inp:
                buf = io.StringIO()
                console = Console(file=buf, width=100, force_terminal=True, color_system=None)
                session = build_session(input=inp, output=DummyOutput(), history=InMemoryHistory())
                repl = Repl(app, console=console, session=session)
                assert repl.spinner  # on by default on a terminal
                running = asyncio.create_task(repl.run())
                await type_lines(repl, inp, "Where is GH56JK78MN?\r/exit\r")
                code = await asyncio.wait_for(running, GUARD_S)
                return code, buf.getvalue(), console
        finally:
            await app.aclose()

    code, raw, console = asyncio.run(main())
    assert code == 0
    assert raw.count("waiting for the model…") >= 2 and "running 1 tool call…" in raw
    # every spinner was stopped before the next output: the answer follows the last one
    assert raw.rindex("waiting for the model…") < raw.index("All clear.")
    assert not getattr(console, "_live_stack", None) and getattr(console, "_live", None) is None


# --------------------------------------------------------------------------- input

def test_empty_input_ctrl_c_at_prompt_and_ctrl_d(anthropic_env, fake_anthropic):
    code, screen = run_keys("\r   \rhalf a question\x03\x04")
    assert code == 0
    assert fake_anthropic.requests == []


def test_pasted_email_and_esc_enter_are_one_question(anthropic_env, fake_anthropic):
    fake_anthropic.queue(text("ok 1"), text("ok 2"))
    email = "Hi,\nmy order GH56JK78MN has not arrived.\nThanks, Ana"
    code, _ = run_keys(f"\x1b[200~{email}\x1b[201~\rline one\x1b\rline two\r/exit\r")
    assert code == 0
    assert len(fake_anthropic.requests) == 2
    assert user_texts(fake_anthropic.requests[0]["messages"][0]) == [email]
    assert user_texts(fake_anthropic.requests[1]["messages"][-1]) == ["line one\nline two"]


def test_history_file_persists_recalls_and_never_keeps_a_key(anthropic_env, fake_anthropic, tmp_path):
    fake_anthropic.queue(text("a"), text("b"))
    hist = tmp_path / "state" / "history"
    pasted = "my key is sk-ant-api03-abcdefghijklmnop, where is GH56JK78MN?"
    run_keys(f"{pasted}\r/exit\r", history_path=hist)
    assert stat.S_IMODE(hist.stat().st_mode) == 0o600
    saved = hist.read_text()
    assert "GH56JK78MN" in saved and "sk-ant-api03" not in saved
    # a new session on the same file: up-arrow twice recalls the question (the last entry is /exit)
    code, _ = run_keys("\x1b[A\x1b[A\r/exit\r", history_path=hist)
    assert code == 0
    assert "GH56JK78MN" in user_texts(fake_anthropic.requests[1]["messages"][0])[0]


def test_history_file_keeps_only_the_newest_entries(tmp_path):
    from prompt_toolkit.history import FileHistory

    from agentcli.cli.history import HISTORY_LIMIT, _redacting_file_history, trim_history_file

    hist = tmp_path / "history"
    old = FileHistory(str(hist))
    for i in range(HISTORY_LIMIT + 25):
        old.store_string(f"question {i}\nsecond line of {i}" if i % 2 else f"question {i}")
    os.chmod(hist, 0o600)
    before = hist.stat().st_size
    loaded = list(_redacting_file_history(hist).load_history_strings())  # what a REPL start does
    assert len(loaded) == HISTORY_LIMIT
    assert loaded[0] == f"question {HISTORY_LIMIT + 24}"  # newest first, whole entries
    assert loaded[1] == f"question {HISTORY_LIMIT + 23}\nsecond line of {HISTORY_LIMIT + 23}"
    assert loaded[-1] == "question 25\nsecond line of 25"
    assert hist.stat().st_size < before and stat.S_IMODE(hist.stat().st_mode) == 0o600
    assert [p.name for p in tmp_path.iterdir()] == ["history"]  # no temp file left behind
    assert trim_history_file(hist) == 0  # already within the limit: untouched
    assert trim_history_file(hist, keep=3) == HISTORY_LIMIT - 3
    assert list(FileHistory(str(hist)).load_history_strings())[::-1][0] == f"question {HISTORY_LIMIT + 22}"
    # a symlinked history file (kept elsewhere on purpose) stays a link; its target is trimmed
    link = tmp_path / "linked-history"
    link.symlink_to(hist)
    assert trim_history_file(link, keep=1) == 2
    assert link.is_symlink() and list(FileHistory(str(hist)).load_history_strings()) == [f"question {HISTORY_LIMIT + 24}"]


# --------------------------------------------------------------------------- interrupts and failures

def test_ctrl_c_while_waiting_for_the_model_cancels_only_that_turn(anthropic_env, fake_anthropic, home):
    fake_anthropic.queue(text("never shown", delay=60), text("Second answer."))

    async def main():
        app = App.open(settings_from())
        try:
            with piped_repl(app) as (repl, inp, buf):
                inp.send_text("Where is GH56JK78MN?\r")
                running = asyncio.create_task(repl.run())
                await wait_until(lambda: len(fake_anthropic.requests) == 1, "first request")
                await asyncio.sleep(0.05)
                os.kill(os.getpid(), signal.SIGINT)  # a real Ctrl-C, caught by the REPL's handler
                await wait_until(lambda: "cancelled" in buf.getvalue(), "cancel message")
                await type_lines(repl, inp, "and now?\r/exit\r")
                return await asyncio.wait_for(running, GUARD_S), buf.getvalue()
        finally:
            await app.aclose()

    try:
        code, screen = asyncio.run(main())
    except KeyboardInterrupt:
        pytest.fail("the REPL did not catch SIGINT during a turn")
    assert code == 0
    assert "never shown" not in screen and "Second answer." in screen
    # the unanswered question was rolled back: the next request is valid and starts afresh
    msgs = fake_anthropic.requests[1]["messages"]
    assert [user_texts(m) for m in msgs] == [["and now?"]]
    events = next(iter(session_events(home).values()))
    assert [e["type"] for e in events].count("cancelled") == 1


def test_cancel_while_a_tool_runs_answers_every_tool_use(anthropic_env, fake_anthropic, home):
    started = asyncio.Event()

    async def slow_lookup(args, deps, ticket):
        started.set()
        await asyncio.sleep(60)
        return {"never": True}

    registry = default_registry()
    registry.register(Tool(name="slow_lookup", description="a lookup that hangs",
                           input_schema={"type": "object", "properties": {}}, effect=READ_ONLY,
                           execute=slow_lookup))
    fake_anthropic.queue(
        message(tool_use_block("get_order_status", {"order_code": "GH56JK78MN"}, id="toolu_fast"),
                tool_use_block("slow_lookup", {}, id="toolu_slow")),
        text("Fine now."))

    async def main():
        app = App.open(settings_from(), registry=registry)
        try:
            with piped_repl(app) as (repl, inp, buf):
                inp.send_text("Where is GH56JK78MN?\r")
                running = asyncio.create_task(repl.run())
                await wait_until(started.is_set, "slow tool started")
                assert repl.cancel_turn()  # what the SIGINT handler calls
                await wait_until(lambda: "cancelled" in buf.getvalue(), "cancel message")
                await type_lines(repl, inp, "next question\r/exit\r")
                return await asyncio.wait_for(running, GUARD_S), buf.getvalue()
        finally:
            await app.aclose()

    code, screen = asyncio.run(main())
    assert code == 0 and "Fine now." in screen
    msgs = fake_anthropic.requests[1]["messages"]
    assert_valid_history(msgs)
    answered = {b["tool_use_id"]: b for b in msgs[2]["content"] if b.get("type") == "tool_result"}
    assert set(answered) == {"toolu_fast", "toolu_slow"}
    assert answered["toolu_slow"].get("is_error") is True
    assert user_texts(msgs[-1])[-1] == "next question"
    events = next(iter(session_events(home).values()))
    assert "cancelled" in [e["type"] for e in events]


def test_api_failure_prints_one_line_and_the_repl_goes_on(anthropic_env, fake_anthropic):
    fake_anthropic.queue(error(500, "boom", headers={"x-should-retry": "false"}), text("Back up."))
    code, screen = run_keys("first try\rsecond try\r/exit\r")
    assert code == 0
    errors = [ln for ln in screen.splitlines() if ln.startswith("agentcli:")]
    assert len(errors) == 1 and "500" in errors[0]
    assert "Back up." in screen and "Traceback" not in screen
    assert_valid_history(fake_anthropic.requests[1]["messages"])


def test_a_crash_in_one_turn_prints_one_line_and_the_next_works(anthropic_env, fake_anthropic, home):
    # The session log cannot be written (a file where its folder should be): App.run fails.
    home.joinpath("sessions").write_text("not a folder")
    fake_anthropic.queue(text("Works again."))

    async def main():
        app = App.open(settings_from())
        try:
            with piped_repl(app) as (repl, inp, buf):
                inp.send_text("first\r")
                running = asyncio.create_task(repl.run())
                await wait_until(lambda: "agentcli:" in buf.getvalue(), "error line")
                home.joinpath("sessions").unlink()
                await type_lines(repl, inp, "second\r/exit\r")
                return await asyncio.wait_for(running, GUARD_S), buf.getvalue()
        finally:
            await app.aclose()

    code, screen = asyncio.run(main())
    assert code == 0
    (line,) = [ln for ln in screen.splitlines() if ln.startswith("agentcli:")]
    assert line.startswith("agentcli: cannot write the session log") and "AGENTCLI_HOME" in line
    assert "Works again." in screen and "Traceback" not in screen
    assert [user_texts(m) for m in fake_anthropic.requests[0]["messages"]] == [["second"]]


def test_turn_limit_asks_to_continue_and_resumes_the_same_question(anthropic_env, fake_anthropic):
    fake_anthropic.queue(LOOKUP(), text("It is waiting for payment."))
    code, screen = run_keys("Where is GH56JK78MN?\ry\r/exit\r", max_turns=1)
    assert code == 0
    assert "stopped (turn_limit)" in screen and "so far: 1 tool call (get_order_status ×1)" in screen
    assert "It is waiting for payment." in screen
    assert len(fake_anthropic.requests) == 2
    cont = fake_anthropic.requests[1]["messages"]
    assert_valid_history(cont)
    assert [m["role"] for m in cont] == ["user", "assistant", "user"]  # resumed, not re-asked
    assert tool_results({"messages": cont})[0]["tool_use_id"] == cont[1]["content"][0]["id"]


def test_turn_limit_defaults_to_no(anthropic_env, fake_anthropic):
    fake_anthropic.queue(LOOKUP(), text("after the follow-up"))
    code, screen = run_keys("Where is GH56JK78MN?\r\rthen?\r/exit\r", max_turns=1)
    assert code == 0
    assert "stopped here" in screen
    assert len(fake_anthropic.requests) == 2
    follow = fake_anthropic.requests[1]["messages"]
    assert_valid_history(follow)
    assert user_texts(follow[-1]) == ["then?"]


# --------------------------------------------------------------------------- the console script

def test_chat_on_a_pipe_is_one_ticket_line_by_line(cli, anthropic_env, fake_anthropic):
    fake_anthropic.queue(LOOKUP(), text("It is waiting for payment."), text("Payment pending."),
                         text("Noted."))
    p = cli(["chat"], anthropic_env, input="Where is GH56JK78MN?\n\nmake it shorter\n/usage\n")
    assert p.returncode == 0, p.err
    assert p.out.splitlines()[:3] == ["It is waiting for payment.", "Payment pending.", "Noted."]
    assert "this ticket" not in p.out  # on a pipe a line starting with / is a question too
    assert "→ get_order_status" in p.err  # the trace goes to stderr
    assert len(fake_anthropic.requests) == 4
    assert len(fake_anthropic.requests[2]["messages"]) == 5
    assert user_texts(fake_anthropic.requests[3]["messages"][-1]) == ["/usage"]
    for stream in (p.out, p.err):
        assert "Traceback" not in stream and "Warning" not in stream and anthropic_env["ANTHROPIC_API_KEY"] not in stream


def test_chat_on_a_pipe_json_every_line_is_a_question(cli, cli_env):
    # 4P4NNC7UX6 is ana's as GH56JK78MN is: a ticket whose live draft is ana's takes no other's
    p = cli(["chat", "--json", "--provider", "offline"], cli_env,
            input="Where is GH56JK78MN?\nand ORD-20261234?\n/exit\nWhere is 4P4NNC7UX6?\n")
    assert p.returncode == 0, p.err
    objs = [json.loads(ln) for ln in p.out.splitlines()]
    assert [o["question"] for o in objs] == ["Where is GH56JK78MN?", "and ORD-20261234?", "/exit",
                                             "Where is 4P4NNC7UX6?"]
    assert [o["tool_calls"][0]["input"]["order_code"] for o in objs] == \
        ["GH56JK78MN", "ORD-20261234", "ORD-20261234", "4P4NNC7UX6"]  # "/exit" is a follow-up
    assert len({o["session_id"] for o in objs}) == 1 and objs[0]["status"] == "ok"
    assert "offline workflow" in p.err


def test_a_line_longer_than_the_reader_holds_is_one_refused_question(cli, cli_env):
    # 3 MiB on one line, then a real question: one refusal, never the line's tail read as more
    # questions ("could not find an order code" three times over), and the next line answered.
    p = cli(["chat", "--json", "--provider", "offline"], cli_env,
            input="a" * (3 * (1 << 20) + 100) + "\nWhere is GH56JK78MN?\n")
    assert p.returncode == 1, p.err
    both = p.out + p.err
    assert both.count("too long") == 1 and "more than 1 MiB" in both
    objs = [json.loads(ln) for ln in p.out.splitlines() if ln.startswith("{")]
    assert [o["question"] for o in objs] == ["Where is GH56JK78MN?"] and objs[0]["status"] == "ok"


def test_the_pipe_reader_reads_past_an_overlong_line_without_holding_it():
    from agentcli.lines import LineReader

    r, w = os.pipe()

    def write():
        with os.fdopen(w, "wb") as f:
            f.write(b"x" * 5000 + b"\nnext\n" + b"y" * 4096 + b"\n")

    async def main():
        reader = LineReader(r, limit=4096)
        assert reader.caller is not None  # a pipe: read in the reader's own thread
        got = []
        while (line := await reader.readline()) is not None:
            got.append((len(line), reader.cut))
        return got

    import threading
    t = threading.Thread(target=write)
    t.start()
    try:
        got = asyncio.run(main())
    finally:
        t.join()
        os.close(r)
    # the 5,000-byte line is one cut line; a line of exactly the limit is whole
    assert got == [(4096, True), (4, False), (4096, False)]


@pytest.mark.parametrize("line", ["/customer", "/customer other@example.com", "/new", "  /customer"])
def test_a_customers_slash_line_on_a_pipe_never_changes_the_scope(cli, cli_env, line):
    # GH56JK78MN belongs to ana.silva@example.com: scoped to ben, it must stay "not found".
    p = cli(["chat", "--json", "--provider", "offline", "--customer", "ben.okafor@example.net"], cli_env,
            input=f"Dear support,\n{line}\nwhere is GH56JK78MN?\n")
    assert p.returncode == 0, p.err
    objs = [json.loads(ln) for ln in p.out.splitlines()]
    lookups = [c for o in objs for c in o["tool_calls"] if c["name"] == "get_order_status"]
    assert lookups and all(c["result"]["found"] is False for c in lookups)
    assert all(o["customer"] == "ben.okafor@example.net" for o in objs)


def test_chat_on_a_pipe_offline_keeps_context(cli, cli_env):
    p = cli(["chat"], cli_env, input="Where is ORD-20261234?\nand the line items?\n")
    assert p.returncode == 0, p.err
    assert "offline workflow" in p.err
    assert "ORD-20261234" in p.out and "shipped" in p.out and "Printed manual" in p.out


@pytest.mark.parametrize("replies,code", [
    ([("error", 400), ("text", "ok")], 4),      # the example: a 400, then fine: still 4
    ([("text", "ok"), ("error", 401)], 4),
    ([("error", 529), ("error", 529), ("text", "ok")], 4),  # an overload past --retries 1
    ([("max_tokens", None), ("text", "ok")], 1),
    ([("text", "ok"), ("text", "ok")], 0),
], ids=["400", "401", "overloaded", "max_tokens", "all_ok"])
def test_chat_on_a_pipe_exits_as_batch_does(cli, anthropic_env, fake_anthropic, replies, code):
    # Issue 24 item 11: a script piping questions in learns from the status that one failed
    queued = []
    for kind, arg in replies:
        if kind == "error":
            queued.append(error(arg, "refused", headers={"x-should-retry": "false"} if arg < 500
                                else {}))
        elif kind == "max_tokens":
            queued.append(text("cut", stop_reason="max_tokens"))
        else:
            queued.append(text(arg))
    fake_anthropic.queue(*queued)
    p = cli(["chat"], anthropic_env, input="first question\nsecond question\n")
    assert p.returncode == code, p.err
    assert "Traceback" not in p.err


def test_chat_on_a_pipe_with_an_unusable_line_is_1(cli, cli_env):
    p = cli(["chat", "--provider", "offline"], cli_env,
            input="Where is GH56JK78MN?\n" + "x" * 200_000 + "\n")
    assert p.returncode == 1, p.err


def test_bad_configuration_exits_3_with_one_line(cli, cli_env, tmp_path):
    p = cli(["chat", "--provider", "offline", "--db", str(tmp_path / "missing.sqlite3")], cli_env,
            input="hi\n")
    assert p.returncode == 3
    assert len(p.err.strip().splitlines()) == 1 and "does not exist" in p.err
    assert p.out == ""


def test_importing_the_cli_does_not_load_the_repl():
    code = ("import sys, agentcli.cli; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('prompt_toolkit', 'anthropic') "
            "or m == 'agentcli.cli.repl'))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def _spawn(args, env):
    env = {**env, "TERM": "xterm-256color", "PROMPT_TOOLKIT_NO_CPR": "1", "COLUMNS": "160", "LINES": "40"}
    child = pexpect.spawn(agentcli_exe(), args, env=env, encoding="utf-8", timeout=GUARD_S,
                          dimensions=(40, 160))
    return child


@pytest.mark.slow
def test_terminal_end_to_end(anthropic_env, fake_anthropic, demo_db, home):
    """The real console script in a pseudo-terminal: ask, see the trace, Ctrl-C, ask, leave."""
    fake_anthropic.queue(LOOKUP(), text("Order GH56JK78MN is waiting for payment."),
                         text("never shown", delay=60), text("Here again."))
    child = _spawn([], anthropic_env)  # bare `agentcli` on a terminal starts the REPL
    try:
        child.expect("provider")
        child.expect("anthropic")
        child.expect(str(demo_db))
        child.expect("›")
        child.send("Where is GH56JK78MN?\r")
        child.expect("→ get_order_status")
        child.expect("pending_payment")
        child.expect("waiting for payment.")
        child.expect("›")
        # Ctrl-C while the model is working cancels that turn only
        child.send("and the line items?\r")
        deadline = time.monotonic() + GUARD_S
        while len(fake_anthropic.requests) < 3 and time.monotonic() < deadline:
            time.sleep(0.02)
        time.sleep(0.1)
        child.sendintr()
        child.expect("cancelled")
        child.expect("›")
        child.send("still there?\r")
        child.expect("Here again.")
        child.expect("›")
        child.send("/exit\r")
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    assert child.exitstatus == 0
    last = fake_anthropic.requests[3]["messages"]
    assert_valid_history(last)
    assert len(last) == 5 and user_texts(last[-1]) == ["still there?"]  # the cancelled one rolled back
    events = next(iter(session_events(home).values()))
    assert [e["type"] for e in events].count("cancelled") == 1


def test_bare_agentcli_on_a_terminal_takes_chats_options(anthropic_env, fake_anthropic, demo_db):
    # `agentcli --provider offline` is `agentcli chat --provider offline`: the REPL, offline,
    # although an API key is set.
    child = _spawn(["--provider", "offline", "--customer", "ana.silva@example.com"], anthropic_env)
    try:
        child.expect("provider")
        child.expect("offline")
        child.expect("ana.silva@example.com")
        child.expect("›")
        child.send("/exit\r")
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    assert child.exitstatus == 0
    assert fake_anthropic.requests == []


# --------------------------------------------------------------------------- issue 18 habits

def test_show_prints_a_draft_as_the_customer_reads_it(anthropic_env, fake_anthropic, drafts_dir):
    reply = "Dear Ana,\n\nyour payment is being matched.\n\nKind regards"
    fake_anthropic.queue(message(tool_use_block("draft_reply", {"text": reply, "order_code": "GH56JK78MN"})),
                         text("Saved."))
    code, screen = run_keys("Reply to Ana\r/show\r/show d-000000000000\r/show ../../etc\r/exit\r")
    assert code == 0
    (draft,) = drafts_dir.glob("d-*.md")
    lines = screen.splitlines()
    i = lines.index(f"draft {draft.stem} · pending_review · order GH56JK78MN")
    assert lines[i + 1] == f"  {draft}"
    assert lines[i + 2:i + 7] == ["  │ Dear Ana,", "  │", "  │ your payment is being matched.", "  │",
                                  "  │ Kind regards"]
    assert "no draft d-000000000000" in screen and "not a draft id: '../../etc'" in screen
    assert len(fake_anthropic.requests) == 2


def test_habits_and_command_typos_never_reach_the_model(anthropic_env, fake_anthropic):
    code, screen = run_keys("/drafs\r/usage extra\r/new now\rclear\rhelp\rquit\r")
    assert code == 0
    assert fake_anthropic.requests == []  # nothing was sent, nothing billed
    assert "unknown command /drafs; did you mean /drafts?" in screen
    assert "/usage takes no argument (got 'extra'); nothing was done" in screen
    assert "/new takes no argument" in screen and "new ticket #2" not in screen
    assert "screen cleared" in screen and "/customer EMAIL scopes" in screen  # help was shown
    assert "(quit is taken as /exit; nothing was sent to the model)" in screen


def test_an_email_whose_first_line_starts_with_a_slash_is_a_question(anthropic_env, fake_anthropic):
    fake_anthropic.queue(text("ok"))
    email = "/new order please\nmy order GH56JK78MN is late\nAna"
    code, screen = run_keys(f"\x1b[200~{email}\x1b[201~\r/exit\r")
    assert code == 0 and "new ticket #2" not in screen
    assert user_texts(fake_anthropic.requests[0]["messages"][0]) == [email]


def test_a_context_overflow_in_the_repl_advises_a_new_ticket(anthropic_env, fake_anthropic):
    fake_anthropic.queue(error(400, "prompt is too long: 250000 tokens > 200000 maximum"))
    code, screen = run_keys("hello\r/exit\r")
    assert code == 0
    (line,) = [ln for ln in screen.splitlines() if ln.startswith("agentcli: stopped")]
    assert "context window" in line and "start a new ticket (/new)" in line


PASTED_ESCAPES = [
    ("Hi \x1b[31mthere, where is GH56JK78MN?", "Hi there, where is GH56JK78MN?"),
    ("Hi \x1b[1;31mthere\x1b[0m, where is GH56JK78MN?", "Hi there, where is GH56JK78MN?"),
    ("Hi \x1b[<31mthere, where is GH56JK78MN?", "Hi there, where is GH56JK78MN?"),
    ("Hi \x1b[1;2;3;4mthere, where is GH56JK78MN?", "Hi there, where is GH56JK78MN?"),
    ("Hi \x1b[MXYZthere, where is GH56JK78MN?", "Hi XYZthere, where is GH56JK78MN?"),
    ("Hi \x1b[<0;3;4Mthere, where is GH56JK78MN?", "Hi there, where is GH56JK78MN?"),
]


@pytest.mark.parametrize("typed,sent", PASTED_ESCAPES, ids=range(len(PASTED_ESCAPES)))
def test_an_escape_sequence_in_the_input_keeps_the_question(anthropic_env, fake_anthropic, capfd,
                                                            typed, sent):
    # Issue 24 item 8: prompt_toolkit took "\x1b[31m" for a mouse report and its handler raised:
    # a traceback, "Press ENTER to continue..." and the rest of the question lost.
    fake_anthropic.queue(text("It is waiting for its payment."))
    code, screen = run_keys(typed + "\r/exit\r")
    assert code == 0
    captured = capfd.readouterr()
    for where in (screen, captured.out, captured.err):
        assert "Traceback" not in where and "Press ENTER" not in where
    (req,) = fake_anthropic.requests
    assert user_texts(req["messages"][0]) == [sent]
    assert "It is waiting for its payment." in screen


def test_an_escape_sequence_at_the_continue_question_is_no_traceback(anthropic_env,
                                                                     fake_anthropic, capfd):
    fake_anthropic.queue(LOOKUP(), text("It is waiting for payment."))
    code, screen = run_keys("Where is GH56JK78MN?\r\x1b[31my\r/exit\r", max_turns=1)
    assert code == 0
    captured = capfd.readouterr()
    for where in (screen, captured.out, captured.err):
        assert "Traceback" not in where and "Press ENTER" not in where
    assert "It is waiting for payment." in screen  # the "y" after the colour code was kept
