"""``agentcli --help`` is answered from a stored copy of typer's rendering (agentcli/_entry.py).

These tests run the real console script and compare the stored answer with what typer prints
for the same command line, so a changed command, option or help string that was not followed
by ``python -m agentcli._entry --write-help`` fails here instead of shipping a stale help.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from agentcli._entry import TYPER_HELP_ENV
from tests.conftest import agentcli_exe


def run(env: dict[str, str], *args: str, typer: bool = False) -> subprocess.CompletedProcess:
    env = {k: v for k, v in env.items() if k != TYPER_HELP_ENV}
    if typer:
        env[TYPER_HELP_ENV] = "1"
    return subprocess.run([agentcli_exe(), *args], env=env, capture_output=True, text=True,
                          timeout=60, stdin=subprocess.DEVNULL)


@pytest.mark.parametrize("flag", ["--help", "-h"])
@pytest.mark.parametrize("columns", ["80", "200"])
def test_stored_help_is_exactly_what_typer_prints(cli_env, flag, columns):
    env = {**cli_env, "COLUMNS": columns}
    fast, slow = run(env, flag), run(env, flag, typer=True)
    assert slow.returncode == fast.returncode == 0, slow.stderr + fast.stderr
    assert fast.stdout == slow.stdout, (
        "agentcli/_help_text.py is stale: run `python -m agentcli._entry --write-help`")
    assert fast.stderr == slow.stderr == ""
    for name in ("ask", "chat", "batch", "drafts", "orders", "log", "db", "eval"):
        assert f"\n  {name} " in fast.stdout


def test_narrow_terminal_gets_typers_own_layout(cli_env):
    env = {**cli_env, "COLUMNS": "60"}
    narrow, wide = run(env, "--help"), run({**cli_env, "COLUMNS": "80"}, "--help")
    assert narrow.returncode == 0
    assert narrow.stdout == run(env, "--help", typer=True).stdout
    assert narrow.stdout != wide.stdout
    assert max(len(line) for line in narrow.stdout.splitlines()) <= 58


def test_stored_help_loads_neither_typer_nor_click(cli_env):
    probe = ("import sys; sys.argv = ['agentcli', '--help']\n"
             "from agentcli._entry import main\nmain()\n"
             "sys.stderr.write(' '.join(sorted(({m.split('.')[0] for m in sys.modules} | set(sys.modules)) & "
             "{'typer', 'click', 'rich', 'agentcli.cli'})))")
    p = subprocess.run([sys.executable, "-c", probe], env={**cli_env, "COLUMNS": "100"},
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0 and "Commands:" in p.stdout
    assert p.stderr == ""


@pytest.mark.parametrize("args", [["--help"], ["ask", "--help"]], ids=["stored", "typer"])
def test_help_into_a_pipe_nobody_reads_is_quiet(cli_env, args):
    # The reader is gone before anything is written (`... | true`): no traceback, no
    # "Exception ignored", exit 1 as for any other command whose output was cut off.
    r, w = os.pipe()
    os.close(r)
    try:
        p = subprocess.run([agentcli_exe(), *args], env={**cli_env, "COLUMNS": "100"}, stdout=w,
                           stderr=subprocess.PIPE, text=True, timeout=60, stdin=subprocess.DEVNULL)
    finally:
        os.close(w)
    assert p.returncode == 1
    assert p.stderr == ""


@pytest.mark.parametrize("args", [["--help"], ["ask", "--help"]], ids=["stored", "typer"])
def test_help_into_a_full_disk_or_no_stdout(cli_env, args):
    exe = agentcli_exe()
    if os.path.exists("/dev/full"):
        with open("/dev/full", "w") as full:
            p = subprocess.run([exe, *args], env={**cli_env, "COLUMNS": "100"}, stdout=full,
                               stderr=subprocess.PIPE, text=True, timeout=60)
        assert p.returncode == 1
        assert "Traceback" not in p.stderr and len(p.stderr.strip().splitlines()) == 1
        assert "cannot write" in p.stderr
    # started with stdout closed: nothing to print to, and no traceback
    p = subprocess.run(f"'{exe}' {' '.join(args)} >&-", shell=True, env={**cli_env, "COLUMNS": "100"},
                       stderr=subprocess.PIPE, text=True, timeout=60)
    assert "Traceback" not in p.stderr


def test_other_arguments_still_go_through_typer(cli_env):
    p = run(cli_env, "--version")
    assert p.returncode == 0 and p.stdout.startswith("agentcli ")
    p = run(cli_env, "ask", "--help")
    assert p.returncode == 0 and "Usage: agentcli ask" in p.stdout and "--max-turns" in p.stdout
    p = run(cli_env, "--halp")
    assert p.returncode == 2 and "--halp" in p.stderr
