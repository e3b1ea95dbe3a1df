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

import json
import os
import re
import subprocess
import sys

import pexpect
import pytest

from tests.conftest import TEST_KEY, agentcli_exe

# Runs the real entry point in a fresh interpreter, once for each argument list of the JSON list
# given, and reports after each what has been imported so far. One interpreter runs the commands
# of a group in turn (a cold start is ~0.3 s of CPU each): what is loaded only ever grows, so
# each command is judged on what it added (``Ran.loaded``): one that imports something fails its
# own test, whatever runs after it. The command that must load a module (orders show: sqlite3)
# runs last in its group.
CHECK = r"""
import json, sys
from agentcli._entry import main
heavy = {"anthropic", "openai", "prompt_toolkit", "psycopg", "psycopg_pool", "httpx", "httpx2",
         "httpcore", "httpcore2", "sqlite3", "markdown_it", "pygments",
         "pydantic"}  # typer validates through pydantic (~200 ms) unless cli.py spares it
marked = (sys.stdout,) if sys.stdout.isatty() else (sys.stdout, sys.stderr)  # a tty: both in one
for i, argv in enumerate(json.loads(sys.argv[1])):
    for stream in marked:
        stream.write(f"\nCOLDSTART-BEGIN {i}\n")
        stream.flush()
    sys.argv = ["agentcli", *argv]
    code = 0
    try:
        main()
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    sys.stdout.flush()
    found = sorted({m.split(".")[0] for m in sys.modules} & heavy)
    if "rich.markdown" in sys.modules:
        found.append("rich.markdown")
    sys.stderr.write(f"\nCOLDSTART exit={code} loaded={','.join(found)}\n")
    sys.stderr.flush()
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
    env.update(PYTHONUNBUFFERED="1")  # as cli_env
    return {"home": home, "drafts": drafts, "draft": draft, "session": session, "env": env}


def ticket_env(cli_env, ticket, **extra) -> dict[str, str]:
    return {**cli_env, "AGENTCLI_HOME": str(ticket["home"]), "AGENTCLI_DRAFTS_DIR": str(ticket["drafts"]),
            **extra}


class Ran:
    """One command of a group: its exit status, what it printed, what it added to sys.modules."""

    def __init__(self, code: int, out: str, err: str, loaded: list[str]):
        self.code, self.out, self.err, self.loaded = code, out, err, loaded


_BEGIN = re.compile(r"\r?\nCOLDSTART-BEGIN (\d+)\r?\n")
_REPORT = re.compile(r"\r?\nCOLDSTART exit=(-?\d+) loaded=(\S*)\r?\n")


def _pieces(text: str, n: int) -> list[str]:
    """TEXT cut at the BEGIN markers: the n commands' parts, in order."""
    parts = _BEGIN.split(text)
    assert [int(i) for i in parts[1::2]] == list(range(n)), text[-2000:]
    return parts[2::2]


def run_group(argvs: list[list[str]], env: dict[str, str], *, tty: bool = False) -> list[Ran]:
    """ARGVS run one after another by the real entry point in one fresh interpreter: stdout and
    stderr pipes apart, or (``tty``) stdin, stdout and stderr all on one pseudo-terminal."""
    args = ["-c", CHECK, json.dumps(argvs)]
    if tty:
        merged, status = pexpect.run(sys.executable, args=args, env=env, timeout=60,
                                     withexitstatus=True, encoding="utf-8", dimensions=(50, 200))
        assert status == 0, merged[-2000:]
        outs = errs = _pieces(merged, len(argvs))
    else:
        p = subprocess.run([sys.executable, *args], env=env, capture_output=True, text=True,
                           timeout=60, stdin=subprocess.DEVNULL)
        assert p.returncode == 0, p.stderr[-2000:]
        outs, errs = _pieces(p.stdout, len(argvs)), _pieces(p.stderr, len(argvs))
    ran, before = [], set()
    for out, err in zip(outs, errs):
        reports = _REPORT.findall(err)
        assert len(reports) == 1, err[-2000:]
        code, loaded = int(reports[0][0]), [m for m in reports[0][1].split(",") if m]
        ran.append(Ran(code, _REPORT.sub("\n", out) if tty else out, err, [m for m in loaded if m not in before]))
        before |= set(loaded)
    return ran


def _fill(args: list[str], ticket) -> list[str]:
    return [a.format(draft=ticket["draft"], session=ticket["session"]) for a in args]


# (arguments, text the output must contain; "{draft}" / "{session}" filled in)
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
ORDERS_SHOW = ["orders", "show", "GH56JK78MN", "--db", "{db}"]  # last: it loads sqlite3


@pytest.fixture(scope="module")
def configured(ticket, demo_db) -> list[Ran]:
    """COMMANDS, then ORDERS_SHOW, with real data and every provider and database configured."""
    argvs = [_fill(a, ticket) for a, _ in COMMANDS] + [[*ORDERS_SHOW[:-1], str(demo_db)]]
    return run_group(argvs, {**ticket["env"], **CONFIGURED})


@pytest.mark.parametrize("i", range(len(COMMANDS)), ids=[" ".join(a) for a, _ in COMMANDS])
def test_light_command_with_data_and_providers_configured(configured, ticket, i):
    args, expect = COMMANDS[i]
    argv, r = _fill(args, ticket), configured[i]
    assert r.code == 0, r.err[-2000:]
    assert _fill([expect], ticket)[0] in r.out
    assert r.loaded == [], f"agentcli {' '.join(argv)} imported {r.loaded}"
    assert TEST_KEY not in r.out + r.err


def test_orders_show_with_providers_configured_loads_only_sqlite(configured):
    r = configured[len(COMMANDS)]
    assert r.code == 0, r.err[-2000:]
    assert "pending_payment" in r.out
    assert r.loaded == ["sqlite3"]


ON_A_TERMINAL = [  # orders show last: it loads sqlite3
    (["drafts", "list"], "{draft}", []),
    (["log", "list"], "{session}", []),
    (["drafts", "show", "{draft}"], "GH56JK78MN", []),
    (["orders", "show", "GH56JK78MN"], "pending_payment", ["sqlite3"]),
]


@pytest.fixture(scope="module")
def on_a_terminal(ticket) -> list[Ran]:
    env = {**ticket["env"], **{k: v for k, v in CONFIGURED.items() if k != "AGENTCLI_DB"}}
    return run_group([_fill(a, ticket) for a, _, _ in ON_A_TERMINAL], env, tty=True)


@pytest.mark.parametrize("i", range(len(ON_A_TERMINAL)), ids=[" ".join(a[:2]) for a, _, _ in ON_A_TERMINAL])
def test_light_command_on_a_terminal(on_a_terminal, ticket, i):
    # stdin, stdout and stderr all on a pseudo-terminal: the rich-table path.
    args, expect, allowed = ON_A_TERMINAL[i]
    argv, r = _fill(args, ticket), on_a_terminal[i]
    assert r.code == 0, r.out[-2000:]
    assert _fill([expect], ticket)[0] in r.out
    assert r.loaded == allowed, f"agentcli {' '.join(argv)} on a terminal imported {r.loaded}"


BAD_NUMBERS = [("-1", "not in the range x>=0"), ("x", "not a valid int"), ("1.5", "not a valid int")]


@pytest.fixture(scope="module")
def bad_numbers(ticket) -> list[Ran]:
    return run_group([["log", "list", "-n", value] for value, _ in BAD_NUMBERS], ticket["env"])


@pytest.mark.parametrize("i", range(len(BAD_NUMBERS)), ids=[v for v, _ in BAD_NUMBERS])
def test_numbers_typer_must_judge_still_get_its_errors(bad_numbers, i):
    # Bad numbers are typer's (click's types) to refuse: one usage error, no pydantic, no traceback.
    _, message = BAD_NUMBERS[i]
    r = bad_numbers[i]
    assert r.code == 2 and message in r.err and "Traceback" not in r.err


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
    # not frozen twice: a second freeze would add the second App's objects; the count may drop a
    # little as frozen objects are freed (re's cache evicting a compiled pattern, a cache cleared)
    assert int(first) > 100_000 and int(later) <= int(first) and enabled == "True"
