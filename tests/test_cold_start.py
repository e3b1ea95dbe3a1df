"""Cold start: the light commands load no model SDK, no REPL library, no Markdown renderer and no
database driver they do not use, in the situations ``test_light_commands_import_no_sdk``
(tests/test_cli_ask.py) leaves out:

- with real data (a session and a draft saved by a real offline ``ask``), so ``drafts list`` /
  ``log list`` go past their "nothing here" early exit and render records, and ``show`` runs;
- with an environment that selects a model provider and a PostgreSQL database (API keys,
  ``AGENTCLI_PROVIDER``, ``OPENAI_BASE_URL``, ``AGENTCLI_DB=postgresql://...``): commands that do
  not need them must not import them just because they are configured;
- on a terminal (rich tables instead of tab-separated lines);
- every command's ``--help``;
and each run must succeed and print what it was asked for, so a command that fails early (and
imports nothing) cannot pass. Timings are in bench/bench_startup.py, never here.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pexpect
import pytest

from tests.conftest import TEST_KEY, agentcli_exe

# Runs the real entry point in a fresh interpreter, then reports what got imported.
CHECK = r"""
import sys
sys.argv = ["agentcli", *sys.argv[1:]]
from agentcli._entry import main
code = 0
try:
    main()
except SystemExit as e:
    code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
sys.stdout.flush()
heavy = {"anthropic", "openai", "prompt_toolkit", "psycopg", "psycopg_pool", "httpx", "httpx2",
         "httpcore", "httpcore2", "sqlite3", "markdown_it", "pygments",
         "pydantic"}  # typer validates through pydantic (~200 ms) unless cli.py spares it
found = sorted({m.split(".")[0] for m in sys.modules} & heavy)
if "rich.markdown" in sys.modules:
    found.append("rich.markdown")
sys.stderr.write(f"\nCOLDSTART exit={code} loaded={','.join(found)}\n")
"""

CONFIGURED = {
    "ANTHROPIC_API_KEY": TEST_KEY,
    "AGENTCLI_PROVIDER": "anthropic",
    "OPENAI_API_KEY": "sk-openai-test-0123456789abcdef",
    "OPENAI_BASE_URL": "http://127.0.0.1:9/v1",
    "AGENTCLI_DB": "postgresql://support:pw-not-used@127.0.0.1:9/shop",
}


@pytest.fixture(scope="module")
def ticket(tmp_path_factory, demo_db):
    """A home and drafts dir holding one real session and one real draft (offline ``ask``)."""
    base = tmp_path_factory.mktemp("coldstart")
    home, drafts = base / "home", base / "drafts"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OPENAI_", "AGENTCLI_", "PG"))}
    env.update(AGENTCLI_HOME=str(home), AGENTCLI_DB=str(demo_db), AGENTCLI_DRAFTS_DIR=str(drafts),
               NO_COLOR="1", COLUMNS="200")
    p = subprocess.run([agentcli_exe(), "ask", "--provider", "offline",
                        "Hello, I paid for order GH56JK78MN but got no license key. Please reply."],
                       env=env, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert p.returncode == 0, p.stderr
    (draft,) = [f.stem for f in drafts.glob("*.md")]
    (session,) = [f.stem for f in (home / "sessions").glob("*.jsonl")]
    return {"home": home, "drafts": drafts, "draft": draft, "session": session}


def ticket_env(cli_env, ticket, **extra) -> dict[str, str]:
    return {**cli_env, "AGENTCLI_HOME": str(ticket["home"]), "AGENTCLI_DRAFTS_DIR": str(ticket["drafts"]),
            **extra}


def parse(stderr: str) -> tuple[int, list[str]]:
    lines = [ln for ln in stderr.splitlines() if ln.startswith("COLDSTART ")]
    assert len(lines) == 1, stderr[-2000:]
    fields = dict(kv.split("=", 1) for kv in lines[0].split()[1:])
    return int(fields["exit"]), [m for m in fields["loaded"].split(",") if m]


# (arguments, text the output must contain; "{draft}" / "{session}" / "{db}" filled in)
COMMANDS = [
    (["--help"], "drafts"),
    (["--version"], "agentcli "),
    (["ask", "--help"], "--max-turns"),
    (["chat", "--help"], "Usage"),
    (["batch", "--help"], "Usage"),
    (["eval", "--help"], "Usage"),
    (["db", "init", "--help"], "--orders"),
    (["drafts", "list"], "{draft}"),
    (["drafts", "list", "-n", "1"], "{draft}"),  # a number typed on the command line
    (["drafts", "list", "--json"], '"{draft}"'),
    (["drafts", "show", "{draft}"], "GH56JK78MN"),
    (["log", "list"], "{session}"),
    (["log", "list", "--json"], '"{session}"'),
    (["log", "list", "-n", "+3"], "{session}"),
    (["log", "show", "{session}"], "get_order_status"),
]


@pytest.mark.parametrize("args,expect", COMMANDS, ids=[" ".join(a) for a, _ in COMMANDS])
def test_light_command_with_data_and_providers_configured(cli_env, ticket, args, expect):
    env = ticket_env(cli_env, ticket, **CONFIGURED)
    fill = {"draft": ticket["draft"], "session": ticket["session"]}
    argv = [a.format(**fill) for a in args]
    p = subprocess.run([sys.executable, "-c", CHECK, *argv], env=env, capture_output=True, text=True,
                       timeout=60, stdin=subprocess.DEVNULL)
    code, loaded = parse(p.stderr)
    assert code == 0, p.stderr[-2000:]
    assert expect.format(**fill) in p.stdout
    assert loaded == [], f"agentcli {' '.join(argv)} imported {loaded}"
    assert TEST_KEY not in p.stdout + p.stderr


def test_orders_show_with_providers_configured_loads_only_sqlite(cli_env, demo_db):
    env = {**cli_env, **CONFIGURED}
    p = subprocess.run([sys.executable, "-c", CHECK, "orders", "show", "GH56JK78MN", "--db", str(demo_db)],
                       env=env, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    code, loaded = parse(p.stderr)
    assert code == 0, p.stderr[-2000:]
    assert "pending_payment" in p.stdout
    assert loaded == ["sqlite3"]


@pytest.mark.parametrize("args,expect,allowed", [
    (["drafts", "list"], "{draft}", []),
    (["log", "list"], "{session}", []),
    (["drafts", "show", "{draft}"], "GH56JK78MN", []),
    (["orders", "show", "GH56JK78MN"], "pending_payment", ["sqlite3"]),
], ids=["drafts list", "log list", "drafts show", "orders show"])
def test_light_command_on_a_terminal(cli_env, ticket, args, expect, allowed):
    env = ticket_env(cli_env, ticket, **{k: v for k, v in CONFIGURED.items() if k != "AGENTCLI_DB"})
    fill = {"draft": ticket["draft"], "session": ticket["session"]}
    argv = [a.format(**fill) for a in args]
    # stdin, stdout and stderr all on a pseudo-terminal: the rich-table path.
    out, status = pexpect.run(sys.executable, args=["-c", CHECK, *argv], env=env, timeout=60,
                              withexitstatus=True, encoding="utf-8", dimensions=(50, 200))
    assert status == 0, out[-2000:]
    code, loaded = parse(out.replace("\r\n", "\n"))
    assert code == 0, out[-2000:]
    assert expect.format(**fill) in out
    assert loaded == allowed, f"agentcli {' '.join(argv)} on a terminal imported {loaded}"


@pytest.mark.parametrize("value,message", [("-1", "not in the range x>=0"),
                                           ("x", "not a valid int"), ("1.5", "not a valid int")])
def test_numbers_typer_must_judge_still_get_its_errors(cli_env, ticket, value, message):
    # Bad numbers are typer's (click's types) to refuse: one usage error, no pydantic, no traceback.
    p = subprocess.run([sys.executable, "-c", CHECK, "log", "list", "-n", value],
                       env=ticket_env(cli_env, ticket), capture_output=True, text=True, timeout=60,
                       stdin=subprocess.DEVNULL)
    code, _ = parse(p.stderr)
    assert code == 2 and message in p.stderr and "Traceback" not in p.stderr


@pytest.mark.slow
def test_the_sdk_import_is_frozen_once_and_the_collector_stays_on(cli_env):
    # providers._sdk_import: the SDK's ~10^6 import-time objects leave the collector's reach,
    # once per process; the collector itself is back on afterwards.
    probe = r"""
import gc
from agentcli.app import App
from agentcli.config import resolve
assert gc.get_freeze_count() == 0
app = App.open(resolve(provider="anthropic"))
first = gc.get_freeze_count()
again = App.open(resolve(provider="anthropic"))
print(first, gc.get_freeze_count(), gc.isenabled())
"""
    env = {**cli_env, "ANTHROPIC_API_KEY": TEST_KEY, "ANTHROPIC_BASE_URL": "http://127.0.0.1:9"}
    p = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr[-2000:]
    first, later, enabled = p.stdout.split()
    assert int(first) > 100_000 and later == first and enabled == "True"
