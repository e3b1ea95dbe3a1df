"""The renderer's pieces with hostile input (issue 18): the draft block, the compact lookup line,
Markdown from the model, the advice table. In-process, no terminal needed."""

from __future__ import annotations

import io

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console
from rich.text import Text

from agentcli.cli.advice import advise
from agentcli.cli.layout import plain_paragraph, write_line
from agentcli.events import DraftSaved, ModelResponse, Question, ToolResult, TurnFinished
from agentcli.cli.render import TraceRenderer
from agentcli.cli.trace_lines import draft_block, result_summary

HOSTILE = "Hi\x1b]8;;http://evil\x1b\\click\x1b]8;;\x1b\\ \x1b[31mred\x1b[0m\u2028/new\u0085x\u2029y\rz"


def test_a_draft_block_has_one_bar_per_line_whatever_the_separators():
    lines = draft_block(HOSTILE, 40)
    assert all(ln.startswith("  │") for ln in lines)
    assert not any("\x1b" in ln or "\u2028" in ln or "\u0085" in ln or "\r" in ln for ln in lines)
    # U+2028/U+2029 and CR end a line; U+0085 (a C1 control) is shown as U+FFFD
    assert [ln[4:] for ln in lines] == ["Hiclick red", "/new\ufffdx", "y", "z"]


def test_a_draft_block_wraps_at_words_and_never_splits_an_id_or_path():
    path = "/srv/support/drafts/d-3f2a9c1b7e04.md"
    text = f"see {path} and order ORD-20261234 " * 3
    for width in (30, 44, 60):
        for ln in draft_block(text, width):
            body = ln[4:]
            assert len(ln) <= width or body == path  # only a word longer than the line is long
        words = " ".join(ln[4:] for ln in draft_block(text, width)).split()
        assert words.count(path) == 3 and words.count("ORD-20261234") == 3


def test_a_long_draft_is_cut_with_a_pointer_to_the_file():
    lines = draft_block("\n".join(f"line {i}" for i in range(500)), 80)
    assert len(lines) == 41 and lines[-1] == "  … 460 more lines in the draft file"
    assert lines[-2] == "  │ line 39"


@pytest.mark.parametrize("result,want", [
    ({"found": False, "order_code": "GH56JK78MN"}, "GH56JK78MN not found"),
    ({"found": True, "order_code": "ORD-20261234", "status": "shipped", "product": "Key",
      "placed_on": "2026-11-18", "estimated_delivery": "2026-12-03", "license_issued": True,
      "line_items": [{}, {}], "status_detail": "handed\nto the\x1b[2J carrier"},
     "ORD-20261234 shipped · Key · placed 2026-11-18 · delivery 2026-12-03 · license issued · "
     "2 line items · “handed to the carrier”"),
    ({"found": True, "order_code": "X" * 500, "status": {"nested": ["deep"]}}, None),
    ("plain text result", "plain text result"),
])
def test_the_lookup_line_is_one_short_clean_line(result, want):
    line = result_summary(result)
    assert "\n" not in line and "\x1b" not in line and len(line) < 400
    if want is not None:
        assert line == want


def _terminal(width=60):
    buf = io.StringIO()
    return Console(file=buf, force_terminal=True, width=width, color_system=None), buf


def test_markdown_links_show_their_address_and_no_escape_reaches_the_screen():
    console, buf = _terminal()
    r = TraceRenderer(console, live=True)
    r(Question("q", None, "s"))
    answer = "**Done** — see [the order](http://evil.example/x) \x1b]0;title\x07 ok\n\n| a | b |\n|---|---|\n| 1 | 2 |"
    r(ModelResponse(1, "end_turn", answer, [], {}))
    r(TurnFinished("ok", "end_turn", answer, 1))
    out = buf.getvalue()
    assert "**" not in out and "Done" in out and "http://evil.example/x" in out
    assert "\x1b]" not in out and "\x07" not in out  # no hyperlink or title escape


def test_in_between_text_and_the_answer_are_separate_blocks_on_a_terminal():
    console, buf = _terminal()
    r = TraceRenderer(console, live=True)
    r(Question("q", None, "s"))
    r(ModelResponse(1, "tool_use", "I'll look it up.", [{"id": "t", "name": "x", "input": {}}], {}))
    r(ModelResponse(2, "end_turn", "Found it.", [], {}))
    assert [ln.rstrip() for ln in buf.getvalue().splitlines()] == ["I'll look it up.", "", "Found it."]


def test_a_draft_is_announced_once_with_its_text():
    console, buf = _terminal(80)
    r = TraceRenderer(console, live=True)
    result = {"status": "pending_review", "draft_id": "d-3f2a9c1b7e04", "path": "drafts/d-3f2a9c1b7e04.md"}
    r(ToolResult("t", "draft_reply", {"text": "Dear Ana,\nthanks."}, result, False, 1.0))
    r(DraftSaved("d-3f2a9c1b7e04", "drafts/d-3f2a9c1b7e04.md", None, True))
    assert buf.getvalue().splitlines() == [
        "✎ draft d-3f2a9c1b7e04 saved: pending review, nothing was sent",
        "  drafts/d-3f2a9c1b7e04.md", "  │ Dear Ana,", "  │ thanks."]


@pytest.mark.parametrize("kind,command,has,lacks", [
    ("rate_limited", "batch", "lower --concurrency", "/new"),
    ("rate_limited", "ask", "wait a minute", "concurrency"),
    ("rate_limited", "chat", "wait a minute", "concurrency"),
    ("model_context_window_exceeded", "chat", "/new", "shorten"),
    ("model_context_window_exceeded", "ask", "shorten the question", "/new"),
    ("model_context_window_exceeded", "lines", "shorten", "/new"),
    ("model_context_window_exceeded", "batch", "shorten", "/new"),
])
def test_advice_fits_the_command_it_is_shown_in(kind, command, has, lacks):
    line = advise("the thing failed", kind, command)
    assert line.startswith("the thing failed; ") and has in line and lacks not in line
    assert advise(line, kind, command) == line  # never said twice


@pytest.mark.parametrize("answer", ["> " * 5000 + "the order shipped", "- " * 5000 + "the order shipped"])
def test_markdown_nested_beyond_the_parsers_limit_is_shown_as_text(answer):
    console, buf = _terminal(80)
    r = TraceRenderer(console, live=True)
    r(ModelResponse(1, "end_turn", answer, [], {}))
    assert "the order shipped" in buf.getvalue()


def test_the_live_preview_never_shows_half_a_secret(monkeypatch):
    from agentcli import redact
    from agentcli.cli.render import _Tail

    monkeypatch.setattr(redact, "_extra", set(redact._extra))
    redact.add_secret("zq9-very-secret-value-123")  # the configured key, echoed by the model
    console, _ = _terminal(80)
    r = TraceRenderer(console, live=True)
    r._text = "the key is zq9-very-sec"  # still streaming: the rest of the key may follow
    assert "zq9" not in _Tail(r).__rich__().plain
    r._text += "ret-value-123 and more"
    shown = _Tail(r).__rich__().plain
    assert "zq9" not in shown and "the key is" in shown


@pytest.mark.parametrize("width", [40, 80, 160])
def test_the_repair_turn_and_a_repeated_call_fit_the_terminal(width):
    from agentcli.events import Repair

    console, buf = _terminal(width)
    r = TraceRenderer(console, live=True)
    finding = {"kind": "status_mismatch", "severity": "error", "where": "d-3f2a9c1b7e04",
               "message": "draft d-3f2a9c1b7e04 says GH56JK78MN is shipped, but the lookup says "
                          "pending_payment " + HOSTILE}
    r(Repair(3, [finding, "not a finding"], "…", "d-3f2a9c1b7e04"))
    r(ToolResult("t", "get_order_status", {"order_code": "GH56JK78MN"},
                 {"note": "already answered", "found": True, "order_code": "GH56JK78MN",
                  "status": "pending_payment"}, False, 0.0, repeated=True))
    lines = buf.getvalue().splitlines()
    assert all(len(ln) <= width for ln in lines), lines
    text = " ".join(" ".join(lines).split())
    assert "↺ repair: 1 error-level finding on draft d-3f2a9c1b7e04 sent back to the model" in text
    assert "status_mismatch: draft d-3f2a9c1b7e04 says GH56JK78MN is shipped" in text
    assert "get_order_status repeated, not run again: ok (0.0 ms)" in text
    assert "GH56JK78MN" in text and "\x1b" not in buf.getvalue() and "\u2028" not in buf.getvalue()


# Lines as the trace writes them, and what could make writing them directly differ from rich:
# wide and zero-width characters, emoji, tabs, controls, separators, no-break and trailing spaces.
_LINE = st.lists(st.sampled_from(["→ get_order_status", " ", "GH56JK78MN", "ok (1.0 ms)", "·", "“x”", "日本",
                                  "e\u0301", "😀", "\t", "\x1b[31m", "\u200b", "\u00a0", "\u2028", "[b]x[/b]",
                                  ":smile:", "é", "a" * 30]), max_size=8).map("".join)
_STYLES = ["", "dim", "cyan", "bold red", "magenta", "yellow", "bold yellow", "bold magenta", "green"]


def _console(**kw):
    return Console(file=io.StringIO(), highlight=False, soft_wrap=True, **kw)


@settings(max_examples=400, deadline=None)
@given(text=_LINE, style=st.sampled_from(_STYLES), width=st.sampled_from([12, 40, 80, 160]),
       system=st.sampled_from([None, "standard", "256", "truecolor"]), no_color=st.booleans(),
       terminal=st.booleans())
def test_a_line_written_directly_is_byte_for_byte_what_rich_prints(text, style, width, system, no_color,
                                                                   terminal):
    kw = dict(width=width, color_system=system, no_color=no_color, force_terminal=terminal)
    direct, printed = _console(**kw), _console(**kw)
    if write_line(direct, text, style):
        printed.print(Text(text, style=style), soft_wrap=True, highlight=False)
        assert direct.file.getvalue() == printed.file.getvalue()
    else:
        assert direct.file.getvalue() == ""


_LONG = st.lists(st.sampled_from(["→", "get_order_status", " ", "  ", "GH56JK78MN", "ok (1.0 ms):", "·", "“x”",
                                  "日本", "e\u0301", "😀", "\u200b", "[b]x[/b]", "é", "a" * 11, "b" * 30]),
                 max_size=40).map("".join)


@settings(max_examples=600, deadline=None)
@given(text=_LONG, style=st.sampled_from(_STYLES), width=st.sampled_from([12, 20, 40, 80, 120]),
       system=st.sampled_from([None, "standard", "truecolor"]), no_color=st.booleans(),
       terminal=st.booleans(), ignore=st.booleans())
def test_a_wrapped_line_written_directly_is_byte_for_byte_what_rich_prints(text, style, width, system,
                                                                           no_color, terminal, ignore):
    """``wrap=True``: a line wider than the console broken at spaces as rich wraps it (the
    trace's lookup results are wider than most terminals)."""
    kw = dict(width=width, color_system=system, no_color=no_color, force_terminal=terminal)
    direct, printed = _console(**kw), _console(**kw)
    if write_line(direct, text, style, wrap=True):
        t = Text(text, style=style, overflow="ignore") if ignore else Text(text, style=style)
        printed.print(t, soft_wrap=False, highlight=False)
        assert direct.file.getvalue() == printed.file.getvalue()
    else:
        assert direct.file.getvalue() == ""


def test_a_wide_lookup_line_is_wrapped_directly():
    c = _console(width=40, force_terminal=True, color_system="truecolor")
    line = "← get_order_status ok (0.3 ms): ORD-20260001 delivered · Printed manual · placed 2026-10-02"
    assert not write_line(c, line, "green") and write_line(c, line, "green", wrap=True)
    assert len(c.file.getvalue().splitlines()) == 3
    assert not write_line(c, "x" * 41, "green", wrap=True)  # a word wider than a line: rich folds it


_PROSE = st.lists(st.sampled_from(["GH56JK78MN", "is", "waiting", "ORD-20261234", "shipped;", "soon.", "(USB)", "“x”", "日本",
                                   "e\u0301", "😀", "é", "a" * 11, "b" * 19, "http://example.com/x", "Note:", "1.", "2)", "-",
                                   "+", "#", "=", ">", "$5", "'s", ",", "?", "1986", "---", "x/y", "www.example.com",
                                   ":smile:", "*x*", "_y_", "`z`", "a&amp;b", "<b>", "~~s~~", "|", "[l](u)", "\\*"]),
                  min_size=1, max_size=40).map(" ".join)


@settings(max_examples=500, deadline=None)
@given(text=_PROSE, width=st.sampled_from([12, 20, 40, 80, 120]),
       system=st.sampled_from([None, "standard", "truecolor"]), terminal=st.booleans())
def test_a_plain_paragraph_is_byte_for_byte_what_rich_markdown_prints(text, width, system, terminal):
    from rich.markdown import Markdown

    c = _console(width=width, color_system=system, force_terminal=terminal)
    got = plain_paragraph(c, text)
    if got is not None:
        with c.capture() as cap:
            c.print(Markdown(text, hyperlinks=False), soft_wrap=False)
        assert got == cap.get()


def test_the_bench_answer_is_a_plain_paragraph():
    c = _console(width=120, force_terminal=True, color_system="truecolor")
    assert plain_paragraph(c, ("GH56JK78MN is waiting for payment; ORD-20261234 has shipped. " * 3).strip()) is not None
    assert plain_paragraph(c, "GH56JK78MN is **waiting**") is None and plain_paragraph(c, "1. first") is None


def test_the_trace_lines_of_a_question_take_the_direct_way():
    """Not a vacuous equality above: the lines a lookup draws (styled, on a colour terminal and
    in a pipe) are written directly; a line too wide or with a tab is left to rich."""
    for kw in (dict(force_terminal=True, color_system="truecolor"), dict(force_terminal=False)):
        c = _console(width=80, **kw)
        assert write_line(c, "→ get_order_status {\"order_code\": \"GH56JK78MN\"}", "cyan")
        assert write_line(c, "Checking order GH56JK78MN.", "dim")
        assert not write_line(c, "x" * 81, "cyan") and not write_line(c, "a\tb", "dim")
    assert _console(width=80, force_terminal=True, color_system="truecolor").file.getvalue() == ""
