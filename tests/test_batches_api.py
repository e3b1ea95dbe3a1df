"""``batch --via batches``: the tool loop in rounds over the Message Batches API (issue 27).

The real anthropic SDK against the fake Messages + Message Batches API (``agentcli.testing``),
the demo SQLite database, real draft, record and state files. The scenario of ``test_batch``
answers a batch request exactly as it answers a live one (the fake's reply code is shared), so
``--via batches`` and ``--via live`` are compared record for record.
"""

from __future__ import annotations

import json

import pytest

from agentcli.batch.batches import custom_id, split, state_path

from .test_batch import CODES, records, scenario

STABLE = ("id", "question", "customer", "answer", "status", "stop_reason", "turns", "drafts",
          "provider", "model", "checks")


def lines(n: int) -> str:
    out = []
    for i in range(n):
        out.append(json.dumps({"id": f"T-{i}", "question": f"Where is order {CODES[i % len(CODES)]}?"}))
    return "\n".join(out) + "\n"


def stable(rec: dict) -> dict:
    out = {k: rec[k] for k in STABLE}
    out["tool_calls"] = [{k: c[k] for k in ("name", "input", "result", "is_error")} for c in rec["tool_calls"]]
    return out


def test_batches_give_the_same_records_in_input_order_as_live(cli, anthropic_env, fake_anthropic, tmp_path):
    fake_anthropic.handler = scenario()
    fake_anthropic.batch_delay = 0.2
    qs = tmp_path / "q.jsonl"
    qs.write_text(lines(12))
    live = cli(["batch", str(qs), "-o", str(tmp_path / "live.jsonl")], anthropic_env)
    assert live.returncode == 0, live.err
    n_live = len(fake_anthropic.requests)
    p = cli(["batch", str(qs), "--via", "batches", "-o", str(tmp_path / "b.jsonl")], anthropic_env)
    assert p.returncode == 0, p.err
    assert len(fake_anthropic.requests) == n_live  # no live request: every call went in a batch
    creates = fake_anthropic.batches.creates
    assert [len(c) for c in creates] == [12, 12]  # round 1: the lookups; round 2: the answers
    a, b = records(live.out), records(p.out)
    assert [r["id"] for r in b] == [f"T-{i}" for i in range(12)]
    assert [stable(r) for r in a] == [stable(r) for r in b]
    for r in b:  # the batch price: half the live estimate of the same tokens
        live_r = next(x for x in a if x["id"] == r["id"])
        assert r["estimated_cost_usd"] == pytest.approx(live_r["estimated_cost_usd"] / 2, abs=1e-6)
    assert "via batches: 2 rounds, 2 batches, 24 requests" in p.err
    assert not state_path(tmp_path / "b.jsonl").exists()  # all done: nothing left to re-attach to


def test_custom_ids_are_valid_for_any_line_id_and_batches_split_before_the_limits():
    import re
    for qkey in ["T-1", "x" * 5000, "ü\u2028\x1b[31m", "", json.dumps([1, {"a": None}])]:
        cid = custom_id(qkey, 17)
        assert re.fullmatch(r"[a-zA-Z0-9_-]{1,64}", cid)
    assert custom_id("a", 1) != custom_id("b", 1) and custom_id("a", 1) != custom_id("a", 2)
    assert split([10] * 7, max_count=3, max_bytes=10**9) == [range(0, 3), range(3, 6), range(6, 7)]
    assert split([40, 40, 40], max_count=100, max_bytes=90) == [range(0, 2), range(2, 3)]
    assert split([500], max_count=100, max_bytes=90) == [range(0, 1)]  # alone, however big
    assert split([]) == []
