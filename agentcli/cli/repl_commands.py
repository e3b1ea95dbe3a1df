"""The REPL's slash commands (``/new``, ``/customer``, ``/model``, ``/drafts``, ``/usage``,
``/history``, ``/help``, ``/exit``), as a mixin of ``Repl``."""

from __future__ import annotations

from typing import Any

from ..events import Usage
from ..render import compact
from ..text import customer_address
from .repl_render import _clean

COMMANDS: dict[str, str] = {
    "/help": "this list",
    "/new": "start a new ticket (fresh history, new session id)",
    "/ticket": "/ticket ID records the helpdesk ticket id on this ticket's drafts; alone: shows it",
    "/customer": "/customer EMAIL scopes lookups to that customer; /customer alone clears it",
    "/model": "/model NAME switches the model (from the next question on)",
    "/drafts": "the drafts saved in this ticket, with their paths",
    "/usage": "tokens in/out and cache reads, for this ticket and the whole session",
    "/history": "the tool calls of this ticket",
    "/exit": "leave (Ctrl-D does the same)",
}
ALIASES = {"/quit": "/exit", "/q": "/exit", "/?": "/help", "/h": "/help"}
KEYS_HELP = ("Enter sends · Esc-Enter (Alt-Enter) adds a line · a pasted email stays one question · "
             "Ctrl-C cancels a running answer (at the prompt: clears the line) · Ctrl-D leaves · "
             "start a line with // to send one that begins with /")




class SlashCommands:
    """Needs from the REPL: ``app``, ``conv``, ``ticket`` (a ``TicketLog``), ``past_usage``,
    ``ticket_no``, ``say``, ``info``."""

    # -- slash commands -----------------------------------------------------------------
    async def command(self, line: str) -> bool:
        name, _, arg = line.partition(" ")
        name = ALIASES.get(name.lower(), name.lower())
        arg = arg.strip()
        if name == "/exit":
            return False
        handler = {
            "/help": self.cmd_help, "/new": self.cmd_new, "/customer": self.cmd_customer,
            "/model": self.cmd_model, "/drafts": self.cmd_drafts, "/usage": self.cmd_usage,
            "/history": self.cmd_history, "/ticket": self.cmd_ticket,
        }.get(name)
        if handler is None:
            self.say(f"unknown command {_clean(name)}; commands: {' '.join(COMMANDS)}", "yellow")
            return True
        handler(arg)
        return True

    def cmd_help(self, arg: str) -> None:
        width = max(len(n) for n in COMMANDS)
        for n, desc in COMMANDS.items():
            self.say(f"{n.ljust(width)}  {desc}")
        self.say(KEYS_HELP, "dim")

    def cmd_new(self, arg: str) -> None:
        self.past_usage.add(self.conv.usage)
        self.conv.reset()
        self.ticket.clear()
        self.ticket_no += 1
        c = self.conv.ctx.customer
        scope = f"customer scope still {_clean(c)} (/customer to change or clear)" if c \
            else "no customer scope"
        self.say(f"new ticket #{self.ticket_no}: session {self.conv.session_id}; {scope}", "bold")

    def cmd_ticket(self, arg: str) -> None:
        from ..errors import UsageError
        from ..review import ticket_arg

        ctx = self.conv.ctx
        if not arg:
            self.say(f"ticket: {_clean(ctx.ticket or self.conv.session_id)}"
                     f"{'' if ctx.ticket else ' (the session id; /ticket ID to set one)'}")
            return
        try:
            ctx.ticket = ticket_arg(arg, "/ticket")
        except UsageError as e:
            self.say(_clean(e.message), "yellow")
            return
        self._note({"type": "ticket_changed", "ticket": ctx.ticket})
        self.say(f"ticket: {_clean(ctx.ticket)}; drafts from now on are saved in it")

    def cmd_customer(self, arg: str) -> None:
        ctx = self.conv.ctx
        if not arg:
            if ctx.customer is None:
                self.say("no customer scope: every customer's orders are visible")
                return
            ctx.customer = None
            self._note({"type": "customer_changed", "customer": None})
            self.say("customer scope cleared: every customer's orders are visible")
            return
        try:
            arg = customer_address(arg)
        except ValueError as e:
            self.say(f"the customer {_clean(str(e))}; usage: /customer EMAIL, or /customer alone "
                     "to clear", "yellow")
            return
        ctx.customer = arg
        self._note({"type": "customer_changed", "customer": arg})
        msg = f"customer scope: {_clean(arg)}; other customers' orders now read as not found"
        if self.conv.history:
            msg += " (this ticket's earlier answers stay in its context; /new starts a clean one)"
        self.say(msg)

    def cmd_model(self, arg: str) -> None:
        p = self.app.provider
        if not arg:
            self.say(f"model: {_clean(p.model)} ({_clean(p.name)}); /model NAME to switch")
            return
        if p.name == "offline":
            self.say("the offline workflow has no model to switch; set ANTHROPIC_API_KEY (or use "
                     "--provider openai) to use a model", "yellow")
            return
        if any(ch.isspace() for ch in arg) or len(arg) > 200:
            self.say(f"not a model name: {_clean(arg)!r}", "yellow")
            return
        p.model = arg
        self.app.settings.model = arg
        self.conv.ctx.model = arg
        self._note({"type": "model_changed", "model": arg})
        self.say(f"model: {_clean(arg)} from the next question on")

    def cmd_drafts(self, arg: str) -> None:
        drafts = list(reversed(self.ticket.drafts))
        if not drafts:
            self.say("no drafts saved in this ticket yet")
            return
        self.say("drafts of this ticket (latest first), all waiting for a person's review:")
        for d in drafts[:20]:
            status = "?"
            try:
                status = self.app.drafts.get(d["id"]).meta.get("status", "?")
            except Exception:  # noqa: BLE001 - a deleted or damaged file: still list it
                status = "missing"
            self.say(f"  {_clean(d['id'])}  {_clean(status)}  {_clean(d.get('order_code') or '—')}  "
                     f"{_clean(d['path'])}")
        if len(drafts) > 20:
            self.say(f"  … {len(drafts) - 20} older (agentcli drafts list)", "dim")

    def cmd_usage(self, arg: str) -> None:
        from rich.table import Table

        ticket = self.conv.usage
        session = Usage()
        session.add(self.past_usage)
        session.add(ticket)
        t = Table(box=None, pad_edge=False, padding=(0, 2, 0, 0))
        for col in ("tokens", "in", "out", "cache reads", "cache writes"):
            t.add_column(col, justify="left" if col == "tokens" else "right")
        for label, u in (("this ticket", ticket), (f"session ({self.ticket_no} ticket"
                                                     f"{'s' if self.ticket_no > 1 else ''})", session)):
            t.add_row(label, f"{u.input_tokens:,}", f"{u.output_tokens:,}",
                      f"{u.cache_read_input_tokens:,}", f"{u.cache_creation_input_tokens:,}")
        self.info.print(t, highlight=False)

    def cmd_history(self, arg: str) -> None:
        log = self.ticket.tool_calls
        if not log:
            self.say("no tool calls in this ticket yet")
            return
        for i, c in enumerate(log, 1):
            tag = c.get("outcome") or ("error" if c["is_error"] else "ok")
            self.say(f"{i:>3}. {_clean(c['name'])} {compact(c['input'], 200)} → {_clean(tag)} "
                     f"({c['duration_ms']:.1f} ms)", "red" if c["is_error"] else None)
            self.say(f"     {compact(c['result'], 300)}", "dim")

    def _note(self, record: dict[str, Any]) -> None:
        """Record a change of scope or model in the session log (for the audit trail)."""
        try:
            self.app.log_for(self.conv).record({**record, "session_id": self.conv.session_id})
        except OSError:
            pass
