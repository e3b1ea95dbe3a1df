"""Issue 23 item 4: the labelled set (bench/data/grounding_set.jsonl) is scored in bench/; here its
shape is checked and the floor's figures are held so a regression fails (scores, not timing).

The floor's recall is held on the rows written with it in view (each class, both languages),
its false alarms on every true row; the held-out rows (phrasings the floor was never tuned on)
are the model layer's to catch, and the oracle run (gold claims through the real model-layer
path and the verifier) must reach the issue's bar: recall >= 0.95, false alarms <= 2%."""

from __future__ import annotations

import asyncio
import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("bench_grounding", ROOT / "bench" / "bench_grounding.py")
bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench)

ROWS, ORDERS = bench.load()
CLASSES = {"promise", "status", "date", "item", "price", "order", "draft", "laundering", "license", "correct"}


def test_the_set_is_big_enough_and_covers_every_class_in_both_languages():
    assert len(ROWS) >= 200 and len({r["id"] for r in ROWS}) == len(ROWS)
    assert {r["class"] for r in ROWS} == CLASSES
    for cls in CLASSES - {"license", "price", "laundering"}:
        assert {r["lang"] for r in ROWS if r["class"] == cls} == {"en", "de"}, cls
    assert sum(r["false"] for r in ROWS) >= 100 and sum(not r["false"] for r in ROWS) >= 100
    for r in ROWS:
        assert r["where"] in ("draft", "answer") and (r["kind"] is None) == (not r["false"]), r["id"]
        assert all(c.lstrip("!~") in ORDERS or c.startswith(("!", "~")) for c in r["lookups"]), r["id"]


@pytest.fixture(scope="module")
def floor_scores():
    return bench.score(bench.floor(ROWS, ORDERS))


def test_the_floor_holds_its_figures(floor_scores):
    s = floor_scores
    assert s["recall_tuned"] >= 0.98, s["missed"]
    assert s["false_alarms"] <= 0.01, s["alarms"]


def test_the_correct_drafts_the_issue_lists_are_clean(floor_scores):
    texts = {r["text"].split("\n\n")[-1]: r["id"] for r in ROWS if not r["false"]}
    for t in ("Your order ORD-20261234 was placed on 2026-11-18, shipped, and is due on 2026-12-03.",
              "I can't offer a discount, but I'll make sure the payment is matched."):
        assert texts[t] not in floor_scores["alarms"]


def test_the_model_layer_with_a_perfect_reading_reaches_the_issues_bar(cli_env):
    s = bench.score(asyncio.run(bench.oracle(ROWS, ORDERS)))
    assert s["errors"] == 0
    assert s["recall"] >= 0.95 and s["false_alarms"] <= 0.02, (s["missed"], s["alarms"])
