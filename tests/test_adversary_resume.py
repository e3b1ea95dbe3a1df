"""Adversarial pass, the unlucky operator: a ticket resumed the next day (`--ticket ID` again)
with a follow-up about another order."""

from __future__ import annotations

import json


def test_a_follow_up_on_a_resumed_ticket_looks_up_the_order_it_names(cli, cli_env):
    """The resumed ticket's history ends with its earlier lookups and their results; the offline
    workflow read the new question together with them as one question already looked up, and
    answered "And ORD-20261234?" with GH56JK78MN's status: status ok, exit 0, the order asked
    about never looked up."""
    first = cli(["ask", "--provider", "offline", "--json", "--ticket", "T-7700",
                 "Where is GH56JK78MN?"], cli_env)
    assert first.returncode == 0, first.err
    again = cli(["ask", "--provider", "offline", "--json", "--ticket", "T-7700",
                 "And ORD-20261234?"], cli_env)
    assert again.returncode == 0, again.err
    doc = json.loads(again.out)
    looked_up = [t["input"].get("order_code") for t in doc["tool_calls"]
                 if t["name"] == "get_order_status"]
    assert looked_up == ["ORD-20261234"], doc["tool_calls"]
    assert "ORD-20261234" in doc["answer"] and "shipped" in doc["answer"], doc["answer"]
