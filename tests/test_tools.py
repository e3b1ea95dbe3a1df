"""The two tools and the registry: validation, effect classes, and arbitrary (hostile) input."""

from __future__ import annotations

import asyncio
import json
import os
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentcli.drafts.store import DraftStore
from agentcli.stores.sqlite import SQLiteStore
from agentcli.ticket import Ticket
from agentcli.tools import (DRAFT, READ_ONLY, Registry, Tool, ToolDeps, ToolFailure,
                            default_registry, order_code_arg, run_tool)


def ctx(store, drafts, customer=None, ticket="c1"):
    """What the loop hands a tool: frozen dependencies and a view of a (new) ticket."""
    return ToolDeps(store, drafts), Ticket(ticket, customer=customer).view()


@pytest.fixture(scope="module")
def store(demo_db):
    s = SQLiteStore(demo_db)
    yield s
    s.close()


def call(name, args, context, timeout=5.0):
    deps, view = context
    return asyncio.run(run_tool(default_registry(), name, args, deps, view, timeout))


@pytest.mark.parametrize("raw,code", [
    ("GH56JK78MN", "GH56JK78MN"), ("  gh56jk78mn\n", "GH56JK78MN"),
    ("ORD-20261234", "ORD-20261234"), ("ord-20261234 ", "ORD-20261234"),
    # the forms customers write (spec.md, "Tools")
    ("GH56-JK78-MN", "GH56JK78MN"), ("GH56 JK78 MN", "GH56JK78MN"), ("ORD 20261234", "ORD-20261234"),
    ("ord20261234", "ORD-20261234"), ("ＧＨ56JK78MN", "GH56JK78MN"), ("ORD\u201120261234", "ORD-20261234"),
    ("ORD_20261234", "ORD-20261234"), ("ORD-2026-1234", "ORD-20261234"), ("GH56_JK78_MN", "GH56JK78MN"),
    ("\uff27\uff28\uff15\uff16\uff2a\uff2b\uff17\uff18\uff2d\uff2e", "GH56JK78MN"),
])
def test_order_codes_are_normalised(raw, code):
    assert order_code_arg(raw) == code


@pytest.mark.parametrize("raw", ["GH56JK78M", "GH56JK78MNX", "ORD-2026123", "ORD-2026123A",
                                 "GH56-JK78MN", "GH5-6JK78-MN", "../../etc", "", "ORD--20261234",
                                 "order GH56JK78MN", "GH56JK78MN?"])
def test_malformed_codes_are_refused_with_both_formats_named(raw):
    with pytest.raises(ToolFailure) as e:
        order_code_arg(raw)
    assert "GH56JK78MN" in e.value.message and "ORD-20261234" in e.value.message


def test_lookup_minimal_output_and_line_items_only_on_request(store, tmp_path):
    c = ctx(store, DraftStore(tmp_path))
    out = call("get_order_status", {"order_code": "ORD-20261234"}, c)
    assert not out.is_error
    assert out.result == {"found": True, "order_code": "ORD-20261234", "status": "shipped",
                          "status_detail": "handed to the carrier", "product": "Hardware license key (USB)",
                          "placed_on": "2026-11-18", "estimated_delivery": "2026-12-03",
                          "license_issued": True}
    assert len(json.dumps(out.result)) < 400  # tool results stay small
    out = call("get_order_status", {"order_code": "ORD-20261234", "include_line_items": True}, c)
    assert out.result["line_items"] == [
        {"sku": "USB-KEY", "name": "Hardware license key (USB)", "quantity": 1, "unit_price_cents": 2500},
        {"sku": "MAN-PRT", "name": "Printed manual", "quantity": 1, "unit_price_cents": 1500}]


def test_customer_scope_hides_other_customers_orders_exactly_like_missing_ones(store, tmp_path):
    mine = ctx(store, DraftStore(tmp_path), customer="ana.silva@example.com")
    assert call("get_order_status", {"order_code": "GH56JK78MN"}, mine).result["found"] is True
    other = call("get_order_status", {"order_code": "ORD-20261234"}, mine)
    missing = call("get_order_status", {"order_code": "ZZ00ZZ00ZZ"}, mine)
    assert other.result == {"found": False, "order_code": "ORD-20261234"}
    assert (other.is_error, other.outcome) == (missing.is_error, missing.outcome) == (False, "not_found")
    assert set(other.result) == set(missing.result)


def test_registry_refuses_tools_that_send_or_modify():
    reg = Registry()

    async def send_email(args, deps, ticket):  # pragma: no cover - must never be registered
        raise AssertionError("ran")

    for effect in ("send", "write", "modify", "external", "", None):
        with pytest.raises(ValueError, match="only read-only and draft"):
            reg.register(Tool("send_email", "sends mail", {"type": "object"}, effect, send_email))
    assert reg.names() == []
    reg.register(Tool("ok_tool", "reads", {"type": "object"}, READ_ONLY, send_email))
    with pytest.raises(ValueError, match="already registered"):
        reg.register(Tool("ok_tool", "reads", {"type": "object"}, DRAFT, send_email))
    assert {t.effect for t in default_registry()} == {READ_ONLY, DRAFT}


def test_tool_schemas_describe_formats_and_draft_only():
    schemas = {s["name"]: s for s in default_registry().schemas()}
    d = schemas["get_order_status"]["description"]
    assert "GH56JK78MN" in d and "ORD-20261234" in d
    assert "sends nothing" in schemas["draft_reply"]["description"]
    assert schemas["get_order_status"]["input_schema"]["required"] == ["order_code"]


def test_a_crashing_tool_is_an_error_result_without_internals(tmp_path):
    class Broken:
        description = "broken"

        def get_order(self, *a):
            raise RuntimeError("SELECT secret FROM /var/lib/db password=hunter2")

    out = call("get_order_status", {"order_code": "GH56JK78MN"}, ctx(Broken(), DraftStore(tmp_path)))
    assert out.is_error and out.outcome == "tool_error"
    assert "SELECT" not in out.result and "hunter2" not in out.result and "/var" not in out.result


def test_draft_text_limits(store, tmp_path):
    c = ctx(store, DraftStore(tmp_path))
    assert call("draft_reply", {"text": "   "}, c).is_error
    big = call("draft_reply", {"text": "x" * 1_000_000}, c)
    assert big.is_error and "too large" in big.result
    long = call("draft_reply", {"text": "y" * 30_000}, c)
    assert long.is_error and "too long" in long.result
    assert list(tmp_path.iterdir()) == []


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=40),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children, max_size=4),
    max_leaves=12)
hostile_text = st.sampled_from(["../../../../tmp/pwned", "/etc/passwd", "..", "\x00", "d-000000000000",
                                "C:\\windows", "$(rm -rf /)", "\x1b[2J"]) | st.text(max_size=60)
tool_inputs = st.one_of(
    json_values,
    st.fixed_dictionaries({}, optional={"text": hostile_text | json_values,
                                        "order_code": hostile_text | json_values,
                                        "include_line_items": json_values}),
)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=st.sampled_from(["get_order_status", "draft_reply"]), args=tool_inputs)
def test_any_json_input_gives_a_result_never_an_exception_never_a_file_outside(store, tmp_path_factory, name, args):
    root = tmp_path_factory.mktemp("fuzz")
    drafts = root / "drafts"
    out = call(name, args, ctx(store, DraftStore(drafts), ticket="conv"))
    assert isinstance(out.is_error, bool)
    json.dumps(out.result)  # always serialisable
    if out.is_error:
        assert isinstance(out.result, str) and "Traceback" not in out.result
    for dirpath, dirnames, filenames in os.walk(root):
        for f in filenames:
            p = Path(dirpath) / f
            if p.parent == drafts / ".tickets":  # the store's per-ticket index: hashed names
                assert re.fullmatch(r"[0-9a-f]{24}", p.name)
                continue
            assert p.parent == drafts and (p.name in (".lock", ".index", ".index-state")  # the
                                           # store's lock and index, written by a save
                                           or (p.name.startswith("d-") and p.suffix == ".md"))
