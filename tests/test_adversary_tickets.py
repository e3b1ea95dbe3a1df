"""Adversarial pass over tickets: resumed the next day, moved with `/ticket ID`, scoped to a
customer. Demo data: GH56JK78MN is ana.silva@example.com's order, ORD-20261234 ben.okafor's."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess

import pytest

from agentcli.app import App
from agentcli.config import resolve
from agentcli.tools import default_registry

from .conftest import agentcli_exe
from .test_repl import GUARD_S, piped_repl, type_lines

ANA, BEN = "ana.silva@example.com", "ben.okafor@example.net"


def ask(cli, env, ticket, code, *flags):
    """The reviewer's ``Q``: one offline question about order ``code`` that drafts a reply."""
    return cli(["ask", "--provider", "offline", "--ticket", ticket, *flags,
                f"Hi, where is my order {code}? please reply"], env)


def chat(keys: str, ticket: str | None = None, **settings) -> tuple[int, str]:
    """``agentcli chat --provider offline [--ticket ID]`` in this process, ``keys`` typed one
    line per prompt; (exit code, screen)."""

    async def main():
        app = App.open(resolve(provider="offline", **settings), registry=default_registry())
        try:
            with piped_repl(app, ticket=ticket) as (repl, inp, buf):
                running = asyncio.create_task(repl.run())
                await type_lines(repl, inp, keys)
                return await asyncio.wait_for(running, GUARD_S), buf.getvalue()
        finally:
            await app.aclose()

    return asyncio.run(main())


def as_a_user(args: list[str]) -> list[str]:
    """``args`` run with the file permissions applying (as root: without the capabilities that
    bypass them)."""
    if os.geteuid() != 0:
        return args
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("running as root without setpriv: permission bits do not apply")
    return [setpriv, "--bounding-set=-dac_override,-dac_read_search", *args]


# --------------------------------------------------------------------------- the history found

def test_a_resumed_conversation_moved_by_slash_ticket_brings_its_earlier_days_along(cli, cli_env):
    """HD-7 resumed, asked again and moved into HD-8: HD-8's log continues the resumed log, and
    that one was resumed from HD-7's first log. Only `continues` was followed: `chat --ticket
    HD-8` came back with the resumed session's question alone, the first day's lost."""
    assert ask(cli, cli_env, "HD-7", "GH56JK78MN").returncode == 0
    code, screen = chat("Is the license for GH56JK78MN there yet? please reply\r/ticket HD-8\r/exit\r",
                        ticket="HD-7")
    assert code == 0 and "moved into it" in screen, screen
    code, screen = chat("/exit\r", ticket="HD-8")
    assert code == 0 and "resumed ticket HD-8: 2 earlier questions" in screen, screen
    sessions = json.loads(cli(["log", "list", "--json", "--ticket", "HD-8"], cli_env).out)
    assert len(sessions) == 3, sessions


def test_an_unreadable_log_of_the_ticket_is_said_not_skipped(cli, cli_env, home):
    """A log that cannot be read may hold part of the ticket: `log list --ticket` said "no
    sessions match" and a resume came back with less, both without a word."""
    assert ask(cli, cli_env, "HD-7", "GH56JK78MN").returncode == 0
    (log,) = (home / "sessions").glob("*.jsonl")
    log.chmod(0o000)
    try:
        listed = subprocess.run(as_a_user([agentcli_exe(), "log", "list", "--ticket", "HD-7"]),
                                env=cli_env, capture_output=True, text=True, timeout=60)
        asked = subprocess.run(as_a_user([agentcli_exe(), "ask", "--provider", "offline", "-q",
                                          "--ticket", "HD-7", "make it shorter"]),
                               env=cli_env, capture_output=True, text=True, timeout=60)
    finally:
        log.chmod(0o600)
    assert listed.returncode == 0, listed.stderr
    assert f"warning: {log.name}: cannot read it (Permission denied)" in listed.stderr, listed.stderr
    assert asked.returncode in (0, 1) and "Traceback" not in asked.stderr, asked.stderr
    (line,) = [x for x in asked.stderr.splitlines() if "warning" in x]
    assert "part of ticket HD-7's history may be missing" in line and log.name in line, line
