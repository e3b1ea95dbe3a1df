"""Cold start: wall time and peak RSS of whole processes, side by side with the floors and a peer.

Each command runs N times as a fresh subprocess (round robin over the commands, so a burst of
load on the machine hits all of them alike), after one warm-up run each (byte-code and page
caches). Wall time is ``time.perf_counter`` around spawn + ``os.wait4``. Peak RSS is the
child's ``ru_maxrss`` from ``os.wait4``, taken in two extra runs under a tiny launcher (a
child's high-water mark starts at its forking parent's RSS, and this process is ~25 MB).
Reported: median and min wall time, max peak RSS.

Measured: ``python -c pass`` (the floor of any Python CLI), ``python -c "import anthropic"``
(the floor of a question: the SDK import), ``python -c "import typer, rich.console, asyncio"``
(the floor of any command that runs the loop: its CLI, terminal and event-loop libraries, nothing
run), ``agentcli --help``, ``drafts list``, ``log list``,
``orders show``, ``ask`` with the offline workflow and ``ask`` with the anthropic provider
against ``FakeAnthropic`` answering instantly (a realistic ticket: lookup, draft, answer = 3
model calls), and ``llm --help`` (Simon Willison's llm, pip-installed into a throwaway venv in
this run's temp dir; if that fails the table says so).

    python bench/bench_startup.py              # 10 runs each
    python bench/bench_startup.py --quick      # 3 runs each
    python bench/bench_startup.py --no-llm     # skip installing llm
    python bench/bench_startup.py --llm-venv ~/.cache/agentcli-bench-llm   # keep llm between runs
    python bench/bench_startup.py --json       # machine-readable (used by bench/run.py)
    python bench/bench_startup.py --smoke      # every command once, no llm (bench/test_smoke.py)
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

QUESTION = "Hi, I paid for order GH56JK78MN three days ago but have no license key yet. Why?"
TARGETS = {  # from issue 9; --help and ask offline from issue 22 item 9 ("back to the floor")
    "help_vs_pass": 2.5,  # issue 9 had 15x
    "ask_offline_ms": 130.0,
    "help_vs_llm": 0.10,
    "help_rss_mb": 30.0,
    "ask_vs_import": 1.15,
    "ask_rss_mb": 100.0,
}


STACK = "python -c 'import typer, rich.console, asyncio'"


def agentcli_exe() -> str:
    exe = Path(sys.executable).parent / "agentcli"
    if exe.exists():
        return str(exe)
    found = shutil.which("agentcli")
    if not found:
        sys.exit("bench_startup: the agentcli console script is not installed (pip install -e .)")
    return found


# Peak RSS needs a small parent: a child's ru_maxrss starts from the RSS of the process that
# forked it (Linux keeps the parent's high-water mark across fork/vfork + exec), and this bench
# process is ~25 MB. So RSS comes from separate runs under this tiny launcher (python -S -I,
# ~5 MB), wall times from direct runs (no launcher start-up in them).
LAUNCHER = r"""
import os, sys
pid = os.fork()
if pid == 0:
    try:
        os.execv(sys.argv[1], sys.argv[1:])
    finally:
        os._exit(127)
_, st, ru = os.wait4(pid, 0)
os.write(2, b"\nAGENTCLI_BENCH_MAXRSS_KB=%d\n" % ru.ru_maxrss)
os._exit(os.waitstatus_to_exitcode(st) & 0xff)
"""


def _spawn(argv: list[str], env: dict[str, str], cwd: Path, timeout: float) -> tuple[float, int, str]:
    """(wall seconds, exit code, stderr) of one fresh process."""
    import threading

    with tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        p = subprocess.Popen(argv, env=env, cwd=cwd, stdin=subprocess.DEVNULL,
                             stdout=subprocess.DEVNULL, stderr=err)
        killer = threading.Timer(timeout, p.kill)
        killer.start()
        try:
            _, status, _ = os.wait4(p.pid, 0)  # blocking: the exact end time
        finally:
            killer.cancel()
        wall = time.perf_counter() - t0
        p.returncode = code = os.waitstatus_to_exitcode(status)
        err.seek(0)
        text = err.read().decode("utf-8", "replace")
    if code == -9:
        text += f"\nkilled after {timeout:g} s"
    return wall, code, text


def _last_line(text: str) -> str:
    lines = [ln for ln in text.strip().splitlines() if ln.strip() and "AGENTCLI_BENCH_MAXRSS_KB=" not in ln]
    return lines[-1] if lines else ""


def timed_run(argv: list[str], env: dict[str, str], cwd: Path, timeout: float = 120) -> tuple[float, int, str]:
    """(wall seconds, exit code, last stderr line)."""
    wall, code, text = _spawn(argv, env, cwd, timeout)
    return wall, code, _last_line(text)


def rss_run(argv: list[str], env: dict[str, str], cwd: Path,
            timeout: float = 120) -> tuple[float | None, int, str, float]:
    """(peak RSS in MB of the command alone, exit code, last stderr line, wall seconds with the
    launcher's own start-up), via LAUNCHER."""
    wall, code, text = _spawn([sys.executable, "-S", "-I", "-c", LAUNCHER, *argv], env, cwd, timeout)
    kb = [ln.split("=", 1)[1] for ln in text.splitlines() if ln.startswith("AGENTCLI_BENCH_MAXRSS_KB=")]
    return (int(kb[-1]) / 1024 if kb else None), code, _last_line(text), wall


# The same question with the bare SDK: replays, in a fresh interpreter, the request bodies agentcli
# sent for it (python + import anthropic + client + 3 streamed requests: the true floor of `ask`).
BARE_SDK_ASK = r"""
import asyncio, json, sys
import anthropic

async def main():
    client = anthropic.AsyncAnthropic(max_retries=0)
    for body in json.load(open(sys.argv[1])):
        body.pop("stream", None)
        async with client.messages.stream(**body) as s:
            async for _ in s:
                pass
            if (await s.get_final_message()).stop_reason is None:
                sys.exit("incomplete message")
    await client.close()

asyncio.run(main())
"""


def ask_handler(body: dict[str, Any]):
    """A realistic ticket for the fake server: look the order up, save a draft, answer."""
    from agentcli.testing.fake_anthropic import message, text, text_block, tool_use_block

    turn = sum(1 for m in body.get("messages", []) if m.get("role") == "assistant")
    if turn == 0:
        return message(text_block("Let me check that order."),
                       tool_use_block("get_order_status", {"order_code": "GH56JK78MN"}, id="toolu_b1"))
    if turn == 1:
        return message(tool_use_block("draft_reply", {
            "order_code": "GH56JK78MN",
            "text": "Hello, thank you for your message. Your payment has arrived but is not yet "
                    "matched to order GH56JK78MN; a colleague will look into it and the license "
                    "key follows as soon as it is matched. Kind regards"}, id="toolu_b2"))
    return text("Order GH56JK78MN is pending payment: the payment arrived but is not matched yet, "
                "so no license was issued. I saved a draft reply for review.")


def setup_llm(venv: Path, log) -> tuple[str | None, str]:
    """(path of the llm executable or None, note)."""
    exe = venv / "bin" / "llm"
    if exe.exists():
        return str(exe), "reused venv"
    log(f"installing llm into {venv} (pip) ...")
    try:
        if not (venv / "bin" / "pip").exists():
            subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True,
                           capture_output=True, timeout=120)
        p = subprocess.run([str(venv / "bin" / "pip"), "install", "-q", "--disable-pip-version-check", "llm"],
                           capture_output=True, text=True, timeout=400)
    except (OSError, subprocess.SubprocessError) as e:
        return None, f"could not install llm ({type(e).__name__})"
    if p.returncode != 0 or not exe.exists():
        last = (p.stderr.strip().splitlines() or ["pip failed"])[-1][:80]
        return None, f"could not install llm: {last}"
    ver = subprocess.run([str(venv / "bin" / "python"), "-c",
                          "import importlib.metadata as m; print(m.version('llm'))"],
                         capture_output=True, text=True).stdout.strip()
    return str(exe), f"llm {ver}"


def measure(runs: int, llm: bool, llm_venv: str | None, log, smoke: bool = False) -> dict[str, Any]:
    from agentcli.stores import init_sqlite
    from agentcli.testing.fake_anthropic import FakeAnthropic

    tmp = Path(tempfile.mkdtemp(prefix="agentcli-bench-startup-"))
    try:
        home, work = tmp / "home", tmp / "work"
        home.mkdir()
        work.mkdir()
        init_sqlite(home / "orders.sqlite3", 300)
        base = {k: v for k, v in os.environ.items()
                if not k.startswith(("ANTHROPIC_", "OPENAI_", "AGENTCLI_", "PG"))}
        base.update(AGENTCLI_HOME=str(home), AGENTCLI_DRAFTS_DIR=str(work / "drafts"),
                    NO_COLOR="1", COLUMNS="120")
        py, exe = sys.executable, agentcli_exe()

        llm_exe, llm_note = (None, "skipped (--no-llm)")
        if llm:
            llm_exe, llm_note = setup_llm(Path(llm_venv) if llm_venv else tmp / "llmenv", log)

        with FakeAnthropic(handler=ask_handler) as fake:
            anth_env = {**base, "ANTHROPIC_API_KEY": "sk-ant-bench-not-a-secret",
                        "ANTHROPIC_BASE_URL": fake.url, "AGENTCLI_PROVIDER": "anthropic",
                        "AGENTCLI_RETRIES": "0"}
            # Record agentcli's requests for this question: the bare SDK replays them.
            wall, code, tail = timed_run([exe, "ask", QUESTION], anth_env, work)
            if code != 0:
                raise SystemExit(f"bench_startup: agentcli ask against the fake API failed: {tail}")
            payloads = tmp / "ask-requests.json"
            payloads.write_text(json.dumps(fake.requests))
            cmds: list[tuple[str, list[str], dict[str, str]]] = [
                ("python -c pass", [py, "-c", "pass"], base),
                ("python -c 'import anthropic'", [py, "-c", "import anthropic"], base),
                # The floor of any command of ours that runs the loop: the CLI and terminal
                # libraries the project is built on and the event loop, imported and nothing run.
                (STACK, [py, "-c", "import typer, rich.console, asyncio"], base),
                ("agentcli --help", [exe, "--help"], base),
                # info: the same help rendered by typer (as every subcommand's --help still is)
                ("agentcli --help, typer-rendered", [exe, "--help"], {**base, "_AGENTCLI_TYPER_HELP": "1"}),
                ("agentcli drafts list", [exe, "drafts", "list"], base),
                ("agentcli log list", [exe, "log", "list"], base),
                ("agentcli orders show GH56JK78MN", [exe, "orders", "show", "GH56JK78MN"], base),
                ("agentcli ask (offline)", [exe, "ask", "--provider", "offline", QUESTION], base),
                ("agentcli ask (anthropic, fake API)", [exe, "ask", QUESTION], anth_env),
                ("bare SDK, same 3 requests", [py, "-c", BARE_SDK_ASK, str(payloads)], anth_env),
            ]
            if smoke:
                # Each SDK import is 1-2 s of CPU: the two commands of the bare SDK alone run
                # nothing of ours, and the recording run above stands in for agentcli's ask
                # against the fake API.
                skip = ("python -c 'import anthropic'", "bare SDK, same 3 requests",
                        "agentcli ask (anthropic, fake API)")
                cmds = [c for c in cmds if c[0] not in skip]
            if llm_exe:
                llm_home = tmp / "llm-user"
                llm_home.mkdir(exist_ok=True)
                cmds.append(("llm --help", [llm_exe, "--help"], {**base, "LLM_USER_PATH": str(llm_home)}))

            samples: dict[str, list[float]] = {name: [] for name, _, _ in cmds}
            if smoke:
                samples["agentcli ask (anthropic, fake API)"] = [wall]
                cmds_shown = [c[0] for c in cmds] + ["agentcli ask (anthropic, fake API)"]
            else:
                cmds_shown = [c[0] for c in cmds]
            rss: dict[str, float] = {}
            errors: dict[str, str] = {}
            # Round 0 (warm-up: byte-code and page caches) and the last round measure peak RSS
            # under the launcher; rounds 1..runs measure wall time, round robin over commands.
            # --smoke: round 0 only, its wall times (launcher included) standing in for both.
            last = 0 if smoke else runs + 1
            for rnd in range(last + 1):
                for name, argv, env in cmds:
                    if name in errors:
                        continue
                    if rnd in (0, last):
                        mb, code, tail, wall = rss_run(argv, env, work)
                        if mb is not None:
                            rss[name] = max(rss.get(name, 0.0), mb)
                        if smoke:
                            samples[name].append(wall)
                    else:
                        wall, code, tail = timed_run(argv, env, work)
                        samples[name].append(wall)
                    if code != 0:
                        errors[name] = f"exit {code}: {tail[:70]}"
                log(f"round {rnd}/{last} done")
            fake_requests = len(fake.requests)
        floor = rss_run(["/bin/true"], base, work)[0] if os.path.exists("/bin/true") else None

        rows = []
        for name in cmds_shown:
            s = samples[name]
            if not s:
                rows.append({"name": name, "error": errors.get(name, "no samples")})
                continue
            if name in errors:
                rows.append({"name": name, "error": errors[name]})
                continue
            rows.append({"name": name, "median_ms": statistics.median(s) * 1000,
                         "min_ms": min(s) * 1000, "rss_mb": rss.get(name), "runs": len(s)})
        if not llm_exe:
            rows.append({"name": "llm --help", "error": llm_note})
        return {"rows": rows, "llm_note": llm_note, "runs": 1 if smoke else runs,
                "fake_requests": fake_requests, "rss_floor_mb": floor, "smoke": smoke}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


INFO = {  # what each ratio without a target says
    "ask (offline) / typer+rich+asyncio imported":
        "the offline ask over the import of the libraries it cannot run without",
    "ask / bare SDK, same requests":
        "agentcli's start-up cost over the SDK's own (agentcli imports the SDK with the collector "
        "paused; the bare script does not)",
}


def verdicts(res: dict[str, Any]) -> list[dict[str, Any]]:
    by = {r["name"]: r for r in res["rows"] if "median_ms" in r}

    def ratio(a: str, b: str, key: str = "median_ms") -> float | None:
        return by[a][key] / by[b][key] if a in by and b in by else None

    def rss(a: str) -> float | None:
        return by[a]["rss_mb"] if a in by else None

    ask = "agentcli ask (anthropic, fake API)"
    offline = by.get("agentcli ask (offline)", {}).get("median_ms")
    checks = [
        ("--help / python -c pass", ratio("agentcli --help", "python -c pass"), TARGETS["help_vs_pass"], "x"),
        ("ask (offline), wall", offline, TARGETS["ask_offline_ms"], " ms"),
        ("ask (offline) / typer+rich+asyncio imported", ratio("agentcli ask (offline)", STACK), None, "x"),
        ("--help / llm --help", ratio("agentcli --help", "llm --help"), TARGETS["help_vs_llm"], "x"),
        ("peak RSS of --help", rss("agentcli --help"), TARGETS["help_rss_mb"], " MB"),
        ("ask / import anthropic", ratio(ask, "python -c 'import anthropic'"), TARGETS["ask_vs_import"], "x"),
        ("peak RSS of ask", rss(ask), TARGETS["ask_rss_mb"], " MB"),
        ("ask / bare SDK, same requests", ratio(ask, "bare SDK, same 3 requests"), None, "x"),
    ]
    mins = {"--help / python -c pass": ratio("agentcli --help", "python -c pass", "min_ms"),
            "--help / llm --help": ratio("agentcli --help", "llm --help", "min_ms"),
            "ask / import anthropic": ratio(ask, "python -c 'import anthropic'", "min_ms"),
            "ask (offline) / typer+rich+asyncio imported": ratio("agentcli ask (offline)", STACK, "min_ms"),
            "ask / bare SDK, same requests": ratio(ask, "bare SDK, same 3 requests", "min_ms")}
    out = []
    for name, value, target, unit in checks:
        out.append({"name": name, "value": value, "target": target, "unit": unit, "min_ratio": mins.get(name),
                    "ok": None if value is None or target is None else value <= target})
    return out


def report(res: dict[str, Any]) -> dict[str, Any]:
    """The section in the shape bench/run.py prints: rows of (measure, value, target, verdict)."""
    rows = []
    for r in res["rows"]:
        if "error" in r:
            rows.append({"measure": r["name"], "value": "n/a", "target": "", "verdict": r["error"]})
        else:
            mb = "   ? MB" if r["rss_mb"] is None else f"{r['rss_mb']:5.1f} MB"
            rows.append({"measure": r["name"],
                         "value": f"{r['median_ms']:7.1f} ms (min {r['min_ms']:6.1f})  {mb}",
                         "target": "", "verdict": ""})
    for c in verdicts(res):
        if c["target"] is None:  # informative: no target in the issue
            rows.append({"measure": c["name"], "value": "n/a" if c["value"] is None else
                         f"{c['value']:.3f}x (min {c['min_ratio']:.3f}x)",
                         "target": "", "verdict": "info: " + INFO[c["name"]]})
            continue
        if c["value"] is None:
            rows.append({"measure": c["name"], "value": "n/a", "target": f"<= {c['target']:g}{c['unit']}",
                         "verdict": "not measured"})
            continue
        if c["unit"] == "x":
            shown = f"{c['value']:.3f}x (min {c['min_ratio']:.3f}x)"
        elif c["unit"] == " ms":
            shown = f"{c['value']:.1f} ms median"
        else:
            shown = f"{c['value']:.1f} MB"
        rows.append({"measure": c["name"], "value": shown,
                     "target": f"<= {c['target']:g}{c['unit']}", "verdict": "ok" if c["ok"] else "MISSED"})
    title = (f"Cold start (median of {res['runs']} runs; wall, min, peak RSS; ratios of medians, "
             "verdicts on them, and of minimums)")
    if res.get("smoke"):
        title = "Cold start, --smoke (one run each under the RSS launcher: the figures mean nothing)"
    return {"title": title, "rows": rows,
            "notes": [f"llm: {res['llm_note']}",
                      "peak RSS: ru_maxrss of the command under a ~5 MB launcher (/bin/true reads "
                      f"{res['rss_floor_mb'] or 0:.1f} MB: the floor of this method)",
                      "ask (anthropic): 3 model calls (lookup, draft, answer) against FakeAnthropic "
                      "on 127.0.0.1 answering instantly; the bare SDK row replays agentcli's 3 request "
                      "bodies (import, client, first-request set-up and all)"]}


def print_section(sec: dict[str, Any]) -> None:
    print(sec["title"])
    w = max(len(r["measure"]) for r in sec["rows"])
    wv = max(len(r["value"]) for r in sec["rows"])
    for r in sec["rows"]:
        print(f"  {r['measure']:<{w}}  {r['value']:<{wv}}  {r['target']:<10}  {r['verdict']}".rstrip())
    for n in sec.get("notes", []):
        print(f"  note: {n}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=10, help="timed runs per command (default 10)")
    ap.add_argument("--quick", action="store_true", help="3 runs per command")
    ap.add_argument("--no-llm", action="store_true", help="do not install and measure llm --help")
    ap.add_argument("--llm-venv", help="venv for llm (created if missing, kept); default: a temp dir")
    ap.add_argument("--json", action="store_true", help="print one JSON object (for bench/run.py)")
    ap.add_argument("--smoke", action="store_true",
                    help="every command once, no llm: checks the script runs (its figures mean nothing)")
    a = ap.parse_args(argv)
    runs = 3 if a.quick else max(1, a.runs)
    if a.smoke:
        a.no_llm = True

    def log(msg: str) -> None:
        sys.stderr.write(f"bench_startup: {msg}\n")
        sys.stderr.flush()

    res = measure(runs, not a.no_llm, a.llm_venv, log, smoke=a.smoke)
    sec = report(res)
    if a.json:
        print(json.dumps({"sections": [sec], "raw": res}))
    else:
        print_section(sec)
    return 0


if __name__ == "__main__":
    sys.exit(main())
