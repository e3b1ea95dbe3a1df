"""Issue 23 item 4: the grounding checks scored on the labelled set (not a test: a table).

The set is ``bench/data/grounding_set.jsonl`` (written by ``bench/data/make_grounding_set.py``):
drafts and answers, English and German, each labelled false (a claim the lookups contradict or
do not support: an error-level finding is due, of a named kind) or true (no error-level finding
may appear). Each row is checked by:

- ``floor``: the pattern layer alone (what the offline provider runs);
- ``floor + oracle``: the model layer driven through its real path (the real ``anthropic`` SDK,
  ``AnthropicProvider.forced_call``, ``model_layer.read``/``parse``) against the fake Messages
  API, whose forced-call handler answers with the row's GOLD claims. An upper bound: it shows
  what the verifier makes of a perfect reading, not what a model reads;
- ``floor + local model`` (``--local-url URL --local-model NAME``): a real model behind an
  OpenAI-compatible server (``../shared/localmodel``), on ``--local-limit`` rows.

For each: recall on the error-level false claims (the expected kind found in that text), the
false-alarm rate (true rows with any error-level finding), per class, and the check's cost:
milliseconds per text (floor in-process; the model layer's round trip), tokens and estimated
US dollars per text at the check model's prices. Also: a 19,000-character run-on answer, timed.

    python bench/bench_grounding.py [--smoke] [--json] [--local-url http://127.0.0.1:8080/v1 --local-model qwen]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Iterator

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from agentcli.checks import model_layer  # noqa: E402
from agentcli.checks.grounding import check_ticket  # noqa: E402
from agentcli.providers.pricing import estimate_cost  # noqa: E402

DATA = ROOT / "bench" / "data"
DID = "d-5e7a11b0c0de"
CHECK_MODEL = "claude-haiku-4-5"  # the oracle's prices: a cheap check model


SAFE_DRAFT = "Hello,\n\nthank you for your patience; we are looking into your order.\n\nBest regards,\nSupport"


def load(path: Path | None = None) -> tuple[list[dict], dict[str, dict]]:
    """The labelled set (or another set of the same format, ``--set``) and its orders."""
    path = path or DATA / "grounding_set.jsonl"
    rows = [json.loads(x) for x in path.read_text().splitlines() if x.strip()]
    orders = json.loads((DATA / "grounding_orders.json").read_text())
    return rows, orders


def ticket(row: dict, orders: dict[str, dict]) -> dict[str, Any]:
    """check_ticket's arguments for one row (its lookups, the draft saved, the question)."""
    tools: list[dict] = []
    for spec in row["lookups"]:
        code = spec.lstrip("!~")
        if spec.startswith("!"):
            res, err, outcome = {"found": False, "order_code": code}, False, "not_found"
        elif spec.startswith("~"):
            res, err, outcome = "get_order_status timed out after 3 s and was cancelled", True, "timeout"
        else:
            res, err, outcome = orders[code], False, "ok"
        tools.append({"name": "get_order_status", "input": {"order_code": code}, "result": res, "is_error": err,
                      "outcome": outcome})
    drafts = []
    answer = row["text"] if row["where"] in ("answer", "answer+draft") else ""
    if row["where"] in ("draft", "answer+draft"):  # answer+draft: the answer beside a harmless draft
        text = row["text"] if row["where"] == "draft" else SAFE_DRAFT
        tools.append({"name": "draft_reply", "input": {"text": text}, "is_error": False, "outcome": "ok",
                      "result": {"status": "pending_review", "draft_id": DID, "path": f"drafts/{DID}.md"}})
        drafts = [{"id": DID, "text": text}]
    return {"answer": answer, "drafts": drafts, "tool_results": tools, "questions": [row["question"]]}


def judged(row: dict, findings: list) -> tuple[bool, bool]:
    """(the expected finding is there, any error-level finding is there) for the row's text."""
    where = DID if row["where"] == "draft" else "answer"
    errors = [f for f in findings if f.severity == "error" and f.evidence.get("where") in (where, "")]
    return any(f.kind == row["kind"] for f in errors), bool(errors)


# ----------------------------------------------------------------------------- the layers
def floor(rows: list[dict], orders: dict) -> list[dict]:
    out = []
    for row in rows:
        t = time.perf_counter()
        found = check_ticket(**ticket(row, orders))
        out.append({"row": row, "findings": found, "ms": (time.perf_counter() - t) * 1000, "usage": {}})
    return out


async def with_model(rows: list[dict], orders: dict, provider: Any, answer_for: dict | None) -> list[dict]:
    """Each row with the model layer's reading through ``provider.forced_call`` (the oracle when
    ``answer_for`` maps a text to its gold claims)."""
    out = []
    for row in rows:
        kw = ticket(row, orders)
        texts = model_layer.texts_of(kw["answer"], kw["drafts"])
        t = time.perf_counter()
        reading = await model_layer.read(lambda s, u, tool: provider.forced_call(s, u, tool), texts,
                                         model=provider.model, timeout_s=600)
        found = check_ticket(**kw, model_claims=reading.claims if reading.ran else None)
        out.append({"row": row, "findings": found, "ms": (time.perf_counter() - t) * 1000,
                    "usage": reading.usage, "error": reading.error, "dropped": reading.dropped})
    return out


def oracle_handler(rows: list[dict]):
    """The fake's forced-call answer: the gold claims of the row whose text the request holds."""
    by_text = {json.dumps(model_layer.fold(r["text"]), ensure_ascii=False)[1:-1]: r for r in rows}

    def handler(body: dict) -> dict:
        user = body["messages"][0]["content"]
        data = json.loads(user.split("\n", 1)[1])
        claims = []
        for t in data["texts"]:
            row = by_text.get(json.dumps(t["text"], ensure_ascii=False)[1:-1])
            for c in (row or {}).get("claims", []):
                claims.append({**c, "text_id": t["id"]})
        return {"claims": claims}

    return handler


# ----------------------------------------------------------------------------- scoring
def score(results: list[dict]) -> dict[str, Any]:
    false = [r for r in results if r["row"]["false"]]
    true = [r for r in results if not r["row"]["false"]]
    hit = [r for r in false if judged(r["row"], r["findings"])[0]]
    alarms = [r for r in true if judged(r["row"], r["findings"])[1]]
    classes: dict[str, list[int]] = {}
    for r in false:
        c = classes.setdefault(f"{r['row']['class']}/{r['row']['lang']}", [0, 0])
        c[0] += judged(r["row"], r["findings"])[0]
        c[1] += 1
    held = [r for r in false if r["row"].get("heldout")]
    tuned = [r for r in false if not r["row"].get("heldout")]
    usage = [r["usage"] for r in results if r.get("usage")]
    tokens = [sum(u.get(k, 0) for k in ("input_tokens", "output_tokens")) for u in usage]
    return {"rows": len(results), "false": len(false), "true": len(true),
            "recall": len(hit) / len(false) if false else None,
            "recall_tuned": sum(r in hit for r in tuned) / len(tuned) if tuned else None,
            "recall_heldout": sum(r in hit for r in held) / len(held) if held else None,
            "false_alarms": len(alarms) / len(true) if true else None,
            "missed": [r["row"]["id"] for r in false if r not in hit],
            "alarms": [r["row"]["id"] for r in alarms],
            "by_class": classes,
            "ms_p50": statistics.median(r["ms"] for r in results) if results else None,
            "ms_max": max(r["ms"] for r in results) if results else None,
            "tokens_per_text": statistics.mean(tokens) if tokens else 0,
            "errors": sum(1 for r in results if r.get("error"))}


def run_on(length: int = 19_000) -> float:
    unit = "your order GH56JK78MN has shipped and we will refund you and it arrives on 2026-12-24 and "
    text = (unit * (length // len(unit) + 1))[:length]
    rows, orders = load()
    kw = ticket({"lookups": ["GH56JK78MN"], "where": "answer", "text": text, "question": "GH56JK78MN?"}, orders)
    t = time.perf_counter()
    check_ticket(**kw)
    return (time.perf_counter() - t) * 1000


def loop_stall(length: int = 19_000) -> tuple[float, float]:
    """The event loop's longest stall (ms) while a run-on answer is checked: on the loop, and in a
    worker thread as ``App.check_report`` does (a heartbeat task every millisecond)."""
    unit = "your order GH56JK78MN has shipped and we will refund you and it arrives on 2026-12-24 and "
    text = (unit * (length // len(unit) + 1))[:length]
    rows, orders = load()
    kw = ticket({"lookups": ["GH56JK78MN"], "where": "answer", "text": text, "question": "GH56JK78MN?"}, orders)

    async def measure(off: bool) -> float:
        gaps, done = [0.0], asyncio.Event()

        async def heartbeat() -> None:
            last = time.perf_counter()
            while not done.is_set():
                await asyncio.sleep(0.001)
                now = time.perf_counter()
                gaps.append(now - last)
                last = now

        hb = asyncio.create_task(heartbeat())
        await asyncio.sleep(0.01)
        if off:
            await asyncio.to_thread(lambda: check_ticket(**kw))
        else:
            check_ticket(**kw)
        await asyncio.sleep(0.01)
        done.set()
        await hb
        return max(gaps) * 1000

    return asyncio.run(measure(False)), asyncio.run(measure(True))


def cost(s: dict, n_texts: int, results: list[dict], model: str) -> str:
    usage: dict[str, int] = {}
    for r in results:
        for k, v in (r.get("usage") or {}).items():
            usage[k] = usage.get(k, 0) + int(v)
    c = estimate_cost(model, usage)
    return f"${c / max(1, n_texts):.5f}" if c is not None else "n/a"


async def oracle(rows: list[dict], orders: dict) -> list[dict]:
    from agentcli.config import resolve
    from agentcli.providers import make_provider
    from agentcli.testing.fake_anthropic import FakeAnthropic
    from agentcli.tools import default_registry

    with FakeAnthropic() as fake, _environ(ANTHROPIC_API_KEY="bench-key", ANTHROPIC_BASE_URL=fake.url):

        def forced(body: dict):  # tokens as the real API would count them, roughly (4 chars each)
            args = oracle_handler(rows)(body)
            from agentcli.testing.fake_anthropic import message, tool_use_block
            return message(tool_use_block(model_layer.TOOL_NAME, args),
                           usage={"input_tokens": len(json.dumps(body)) // 4,
                                  "output_tokens": len(json.dumps(args)) // 4})

        fake.forced_handler = forced
        provider = make_provider(resolve(provider="anthropic", model=CHECK_MODEL), default_registry(), "")
        try:
            return await with_model(rows, orders, provider, None)
        finally:
            await provider.aclose()


async def local(rows: list[dict], orders: dict, url: str, model: str) -> list[dict]:
    from agentcli.config import resolve
    from agentcli.providers import make_provider
    from agentcli.tools import default_registry

    with _environ(OPENAI_BASE_URL=url):
        provider = make_provider(resolve(provider="openai", model=model, request_timeout=600.0), default_registry(), "")
        try:
            return await with_model(rows, orders, provider, None)
        finally:
            await provider.aclose()


@contextlib.contextmanager
def _environ(**values: str) -> Iterator[None]:
    """These environment variables for the block (the provider reads them when built), then back."""
    old = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--smoke", action="store_true", help="a few rows of each layer: does it still run?")
    ap.add_argument("--json", action="store_true", help="also print the scores as one JSON line")
    ap.add_argument("--local-url", help="an OpenAI-compatible server with a real model (../shared/localmodel)")
    ap.add_argument("--local-model", default="qwen2.5-coder-1.5b")
    ap.add_argument("--local-limit", type=int, default=40, help="rows for the local model (it is slow)")
    ap.add_argument("--local-offset", type=int, default=0,
                    help="start the evenly spaced sample this many rows later (another sample of the same size)")
    ap.add_argument("--set", type=Path, help="score another set of the same format instead (JSONL; rows "
                    "without gold claims leave the oracle out), e.g. bench/data/grounding_blind.jsonl")
    a = ap.parse_args(argv)
    rows, orders = load(a.set)
    if a.smoke:
        rows = rows[::12]
    layers: list[tuple[str, list[dict], str]] = [("floor", floor(rows, orders), "-")]
    if all("claims" in r for r in rows):
        o = asyncio.run(oracle(rows, orders))
        layers.append(("floor + oracle model (upper bound)", o, CHECK_MODEL))
    if a.local_url:
        sample = rows[a.local_offset:: max(1, len(rows) // a.local_limit)][:a.local_limit]
        layers.append((f"floor + {a.local_model} (local, {len(sample)} rows)",
                       asyncio.run(local(sample, orders, a.local_url, a.local_model)), a.local_model))
    scores = []
    print(f"### Grounding checks on {'the labelled set' if a.set is None else a.set.name} (issue 23)\n")
    print(f"{len(rows)} rows: {sum(r['false'] for r in rows)} false (an error-level finding due), "
          f"{sum(not r['false'] for r in rows)} true; English {sum(r['lang'] == 'en' for r in rows)}, "
          f"German {sum(r['lang'] == 'de' for r in rows)}\n")
    print("| layers | recall (false claims) | written with the floor / held out | false alarms (true texts) | "
          "ms/text p50 | ms/text max | tokens/text | cost/text | model errors |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name, res, model in layers:
        s = score(res)
        scores.append({"layers": name, **{k: v for k, v in s.items() if k != "by_class"}})
        split = " / ".join(f"{v:.3f}" if v is not None else "-" for v in (s["recall_tuned"], s["recall_heldout"]))
        print(f"| {name} | {s['recall']:.3f} ({s['false'] - len(s['missed'])}/{s['false']}) | {split} | "
              f"{s['false_alarms']:.3f} ({len(s['alarms'])}/{s['true']}) | {s['ms_p50']:.2f} | {s['ms_max']:.1f} | "
              f"{s['tokens_per_text']:.0f} | {cost(s, len(res), res, model) if model != '-' else '$0'} | {s['errors']} |")
    print("\n- held out: rows written after the floor was tuned and never used to tune it (phrasings it "
          "was not written for); the oracle reads each row's gold claims (an upper bound of the model layer).")
    print("\n| class/lang | " + " | ".join(n for n, _, _ in layers) + " |")
    print("|---|" + "---|" * len(layers))
    per = [score(r)["by_class"] for _, r, _ in layers]
    for c in sorted(per[0]):
        print(f"| {c} | " + " | ".join(f"{p.get(c, [0, 0])[0]}/{p.get(c, [0, 0])[1]}" for p in per) + " |")
    for name, s in zip([n for n, _, _ in layers], scores):
        if s["missed"] or s["alarms"]:
            print(f"\n- {name}: missed {', '.join(s['missed'][:30]) or 'none'}; false alarms "
                  f"{', '.join(s['alarms'][:30]) or 'none'}")
    ms = run_on(19_000 if not a.smoke else 2_000)
    print(f"\n- a {'19,000' if not a.smoke else '2,000'}-character run-on answer: {ms:.0f} ms of check CPU "
          "(floor and verifier, one thread)")
    on, off = loop_stall(19_000 if not a.smoke else 2_000)
    print(f"- the event loop's longest stall meanwhile: {on:.0f} ms with the check on the loop, {off:.0f} ms with "
          "it in a worker thread (App.check_report)")
    if a.json:
        print(json.dumps({"scores": scores, "run_on_ms": ms, "loop_stall_ms": {"on_loop": on, "worker": off}}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
