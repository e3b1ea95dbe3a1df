"""The REPL's slash commands (``/new``, ``/customer``, ``/model``, ``/drafts``, ``/show``,
``/usage``, ``/history``, ``/help``, ``/exit``) and typing habits (``exit`` without a slash), as a
mixin of ``Repl``."""

from __future__ import annotations

import dataclasses
import difflib
from pathlib import Path
from typing import Any

from rich.table import Table

from ..config import resolve_drafts_dir, reviewer_setting, source_of
from ..drafts.queue import ticket_arg
from ..drafts.store import resolve_reviewer
from ..errors import AgentcliError, UsageError
from ..events import Usage
from ..vocab import customer_address
from .repl_render import _clean, show_draft
from .trace_lines import compact

COMMANDS: dict[str, str] = {
    "/help": "this list",
    "/new": "start a new ticket (fresh history, new session id)",
    "/ticket": "/ticket ID records the helpdesk ticket id on this ticket's drafts; alone: shows it",
    "/customer": "/customer EMAIL scopes lookups to that customer; /customer alone clears it",
    "/model": "/model NAME switches the model (from the next question on)",
    "/drafts": "the drafts saved in this ticket, with their paths (and the ones a resume brought back)",
    "/show": "/show ID prints a draft as the customer would read it; /show alone, the latest",
    "/usage": "tokens and estimated cost, for this ticket and the whole session",
    "/history": "the tool calls of this ticket",
    "/exit": "leave (Ctrl-D does the same)",
}
ALIASES = {"/quit": "/exit", "/q": "/exit", "/?": "/help", "/h": "/help"}
KEYS_HELP = ("Enter sends · Esc-Enter (Alt-Enter) adds a line · a pasted email stays one question · "
             "Ctrl-C cancels a running answer (at the prompt: clears the line) · Ctrl-D leaves · "
             "start a line with // to send one that begins with /")
# Words people type out of habit from shells and other REPLs: handled here, never sent to the
# model (and billed). Anything longer is a question.
HABITS = {"exit": "/exit", "quit": "/exit", "exit()": "/exit", "quit()": "/exit", ":q": "/exit",
          "bye": "/exit", "clear": "clear", "cls": "clear", "help": "/help", "?": "/help"}
# Commands that take no argument: an extra word is refused, not silently ignored.
NO_ARGUMENT = ("/help", "/new", "/drafts", "/usage", "/history", "/exit")




def review_command(store: Any) -> str:
    """``agentcli review``, with ``--drafts-dir`` when a plain ``agentcli review`` here would
    look in another folder (the REPL was given --drafts-dir): the hint names the folder used.
    A queue: ``agentcli review`` (the queue's URL is in the settings, its password too)."""
    if store.kind != "folder":  # the URL (its password masked) only when a flag gave it
        try:
            given = source_of("drafts_url") not in ("env", "config")
        except (AgentcliError, OSError):
            given = True
        return f"agentcli review --drafts-url {_clean(store.location)}" if given else "agentcli review"
    folder = store.location
    try:
        same = resolve_drafts_dir(None) == Path(folder).absolute()
    except (AgentcliError, OSError):
        same = False
    return "agentcli review" if same else f"agentcli review --drafts-dir {_clean(folder)}"


class SlashCommands:
    """Needs from the REPL: ``app``, ``conv`` (its ``ticket`` is what these commands show and
    change), ``past_usage``, ``ticket_no``, ``say``, ``info``."""

    # -- slash commands -----------------------------------------------------------------
    async def command(self, line: str) -> bool:
        name, _, arg = line.partition(" ")
        name = ALIASES.get(name.lower(), name.lower())
        arg = arg.strip()
        handler = {
            "/help": self.cmd_help, "/new": self.cmd_new, "/customer": self.cmd_customer,
            "/model": self.cmd_model, "/drafts": self.cmd_drafts, "/usage": self.cmd_usage,
            "/history": self.cmd_history, "/ticket": self.cmd_ticket, "/show": self.cmd_show,
        }.get(name)
        if handler is None and name != "/exit":
            near = difflib.get_close_matches(name, [*COMMANDS, *ALIASES], n=1, cutoff=0.6)
            hint = f"did you mean {ALIASES.get(near[0], near[0])}? " if near else ""
            self.say(f"unknown command {_clean(name)}; {hint}commands: {' '.join(COMMANDS)} "
                     "(start the line with // to send it as a question)", "yellow")
            return True
        if arg and name in NO_ARGUMENT:
            self.say(f"{name} takes no argument (got {_clean(arg)!r}); nothing was done", "yellow")
            return True
        if name == "/exit":
            return False
        handler(arg)
        return True

    async def habit(self, word: str) -> bool | None:
        """``exit``, ``quit``, ``clear``… typed without a slash: handled, never sent to the
        model. None when the line is not one of them (it is a question)."""
        what = HABITS.get(word.lower())
        if what is None:
            return None
        if what == "clear":
            self.info.clear()
            self.say("screen cleared; the ticket goes on (/new starts the next one)", "dim")
            return True
        self.say(f"({_clean(word)} is taken as {what}; nothing was sent to the model)", "dim")
        return await self.command(what)

    def cmd_help(self, arg: str) -> None:
        width = max(len(n) for n in COMMANDS)
        for n, desc in COMMANDS.items():
            self.say(f"{n.ljust(width)}  {desc}", indent=width + 2)
        self.say(KEYS_HELP, "dim")

    def cmd_new(self, arg: str) -> None:
        self.past_usage.add(self.conv.usage)
        self.saved_before.extend(self.conv.ticket.drafts)
        self.back_before.extend(self.conv.ticket.brought_back)
        self.ticket_cost = 0.0
        self.app.close_conversation(self.conv)
        self.conv.reset()
        self.ticket_no += 1
        c = self.conv.ticket.customer
        scope = f"customer scope still {_clean(c)} (/customer to change or clear)" if c \
            else "no customer scope"
        self.say(f"new ticket #{self.ticket_no}: session {self.conv.session_id}; {scope}", "bold")

    def cmd_ticket(self, arg: str) -> None:
        t = self.conv.ticket
        if not arg:
            self.say(f"ticket: {_clean(t.id)}"
                     f"{'' if t.external else ' (the session id; /ticket ID to set one)'}")
            return
        try:
            new = ticket_arg(arg, "/ticket")
        except UsageError as e:
            self.say(_clean(e.message), "yellow")
            return
        if new == t.id:
            self.say(f"ticket: {_clean(new)} already")
            return
        if not t.asked:
            # nothing asked in this session yet (a resumed ticket's earlier questions are not):
            # the ticket named is the one to work on (it may exist already)
            # the person's scope goes along, not one the resumed ticket came back with
            given = t.customer if t.scope_from is None else None
            unscoped = ("clear the scope with /customer alone" if self.app.ticket_customer(t) is None
                        else "clear the scope with /new, then /customer alone")
            try:
                conv = self.app.conversation(customer=given, ticket=new, resume=True, unscoped=unscoped)
            except UsageError as e:  # another customer's ticket than the scope
                self.say(f"{_clean(e.message)}; the ticket is unchanged", "yellow")
                return
            self.app.close_conversation(self.conv)
            self.conv = conv
            self._note({"type": "ticket_changed", "ticket": new})
            if self.conv.ticket.questions or self.conv.ticket.live:
                self.resumed_note()
            else:
                self.say(f"ticket: {_clean(new)}; drafts from now on are saved in it")
            return
        scope = t.customer
        try:
            moved, replaced = self.app.move_ticket(self.conv, new, resolve_reviewer(reviewer_setting()))
        except (UsageError, OSError) as e:
            what = "the live draft could not be moved" if t.live is not None else "this ticket cannot go on"
            self.say(f"{what} into {_clean(new)} "
                     f"({_clean(getattr(e, 'message', None) or getattr(e, 'strerror', None) or e)}); "
                     "the ticket is unchanged", "yellow")
            return
        # the drafts a resume brought back are the ticket left's, never "of ticket NEW"
        self.back_before.extend(t.brought_back)
        t.brought_back = []
        msg = f"ticket: {_clean(new)}; drafts from now on are saved in it"
        if t.customer != scope:  # it took on the scope of the ticket it moved into
            msg += f", scoped to {_clean(t.customer)} ({_clean(t.scope_from)})"
        theirs = ", ".join(_clean(d) for d in replaced[:3]) + (f" and {len(replaced) - 3} more"
                                                               if len(replaced) > 3 else "")
        if moved is not None:
            msg += f" (the live draft moved into it as {_clean(moved)}; the old one is superseded"
            msg += f", and so is {_clean(new)}'s pending draft {theirs})" if replaced else ")"
        elif replaced:
            msg += f" (its pending draft {theirs} stays live until the next draft replaces it)"
        self.say(msg)

    def cmd_customer(self, arg: str) -> None:
        """The scope of this ticket's lookups and drafts. A ticket known to be one customer's
        (its earlier days' scope, the ticket it moved into, its live draft's customer) keeps
        it: another customer's scope, or none, is refused (as ``--customer`` is on resume)."""
        t = self.conv.ticket
        own = self.app.ticket_customer(t)
        if not arg:
            if t.customer is None:
                self.say("no customer scope: every customer's orders are visible")
                return
            if own is not None:
                self.say(f"ticket {_clean(t.id)} is {_clean(own[0])}'s ({_clean(own[1])}): its "
                         f"customer scope stays {_clean(t.customer)}; /new starts a ticket of its "
                         "own, where /customer alone clears it", "yellow")
                return
            t.customer = t.scope_from = None
            self._note({"type": "customer_changed", "customer": None})
            self.say("customer scope cleared: every customer's orders are visible")
            return
        try:
            arg = customer_address(arg)
        except ValueError as e:
            self.say(f"the customer {_clean(str(e))}; usage: /customer EMAIL, or /customer alone "
                     "to clear", "yellow")
            return
        if own is not None and own[0].casefold() != arg.casefold():
            self.say(f"ticket {_clean(t.id)} is {_clean(own[0])}'s ({_clean(own[1])}), not "
                     f"{_clean(arg)}'s: one ticket is one customer's; the customer scope is "
                     f"unchanged (/new, then /customer {_clean(arg)}, starts a ticket for them)", "yellow")
            return
        t.customer = arg
        t.scope_from = None  # the person's scope now: /ticket ID takes it along
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
        self.app.settings = self.app.settings.with_(model=arg)  # Settings are frozen
        self.conv.deps = dataclasses.replace(self.conv.deps, model=arg)
        self._note({"type": "model_changed", "model": arg})
        self.say(f"model: {_clean(arg)} from the next question on")

    def cmd_drafts(self, arg: str) -> None:
        """The drafts saved in this ticket in this session; apart, the ones a resume brought
        back from earlier sessions (as the drafts store has them now)."""
        t = self.conv.ticket
        drafts = list(reversed(t.drafts))
        ours = {d.id for d in drafts}
        back = [d for d in reversed(t.brought_back) if d.id not in ours]
        if not drafts:
            self.say(f"no drafts saved in this ticket{' in this session' if back else ''} yet")
        else:
            statuses = {d.id: self._status_of(d) for d in drafts}
            self.say(f"drafts of this ticket (latest first): {self._counts(statuses)}")
            for d in drafts[:20]:
                self._draft_row(d, statuses[d.id])
            if len(drafts) > 20:
                self.say(f"  … {len(drafts) - 20} older (agentcli drafts list)", "dim")
        if back:
            statuses = {d.id: self._status_of(d) for d in back}
            self.say(f"brought back from earlier sessions of ticket {_clean(t.id)}: "
                     f"{self._counts(statuses)}")
            for d in back:
                self._draft_row(d, statuses[d.id])

    def cmd_show(self, arg: str) -> None:
        """A draft as the customer would read it: the one named, or the latest of this session."""

        did = arg.split()[0] if arg else None
        if did is None:
            saved = [*self.saved_before, *self.conv.ticket.drafts]
            live = self.conv.ticket.live
            if not saved and live is None:
                self.say("no drafts saved in this session yet; /show ID shows any draft", "yellow")
                return
            did = saved[-1].id if saved else live.id  # else the live draft a resume brought back
        try:
            draft = self.app.drafts.get(did)
        except UsageError as e:
            self.say(f"{_clean(e.message)}; /drafts lists this ticket's drafts", "yellow")
            return
        except OSError as e:
            self.say(f"cannot read draft {_clean(did)} ({_clean(e.strerror or e)})", "yellow")
            return
        width = self.info.width if getattr(self.info, "is_terminal", False) else None
        show_draft(self.say, draft, width)

    def goodbye(self) -> None:
        """On leaving: every draft saved in this session, so none is forgotten, each with its
        status as it is now, and where to review the pending ones; apart, the drafts a resume
        brought back that still wait for review (never counted as saved in this session)."""
        if self.conv is None:
            return
        saved = list({d.id: d for d in [*self.saved_before, *self.conv.ticket.drafts]}.values())
        # a resumed ticket's drafts still waiting for review, apart: not saved in this session
        back = {d.id: d for d in [*self.back_before, *self.conv.ticket.brought_back]
                if all(d.id != x.id for x in saved)}
        waiting = [d for d in back.values() if self._status_of(d) == "pending_review"]
        if not saved and not waiting:
            return
        n = len(saved)
        statuses = {d.id: self._status_of(d) for d in saved}
        pending = sum(1 for s in statuses.values() if s == "pending_review") + len(waiting)
        hint = f"; review them: {review_command(self.app.drafts)}" if pending else ""
        if saved:
            self.say(f"{n} draft{'s' if n > 1 else ''} saved in this session ({self._counts(statuses)})"
                     f"{hint}:", "bold")
        for d in saved[-20:]:
            self._draft_row(d, statuses[d.id])
        if n > 20:
            self.say(f"  … {n - 20} more (agentcli drafts list)", "dim")
        if waiting:
            k = len(waiting)
            self.say(f"{k} draft{'s' if k > 1 else ''} brought back from earlier sessions, still "
                     f"waiting for review{hint if not saved else ''}:", "bold")
            for d in waiting[-20:]:
                self._draft_row(d, "pending_review")

    def _status_of(self, d: Any) -> str:
        try:
            return str(self.app.drafts.get(d.id).meta.get("status", "?"))
        except Exception:  # noqa: BLE001 - a deleted or damaged file: still list it
            return "missing"

    @staticmethod
    def _counts(statuses: dict[str, str]) -> str:
        words = {"pending_review": "waiting for review", "approved": "approved",
                 "rejected": "rejected", "superseded": "superseded by a newer draft",
                 "missing": "missing from the drafts folder"}
        counts: dict[str, int] = {}
        for s in statuses.values():
            counts[s] = counts.get(s, 0) + 1
        return ", ".join(f"{k} {words.get(s, _clean(s))}" for s, k in counts.items())

    def _draft_row(self, d: Any, status: str | None = None) -> None:
        status = status or self._status_of(d)
        self.say(f"  {_clean(d.id)}  {_clean(status)}  {_clean(d.order_code or '—')}  "
                 f"{_clean(d.path)}", indent=4)

    def cmd_usage(self, arg: str) -> None:
        ticket = self.conv.usage
        session = Usage()
        session.add(self.past_usage)
        session.add(ticket)
        t = Table(box=None, pad_edge=False, padding=(0, 2, 0, 0))
        for col in ("tokens", "in", "out", "cache reads", "cache writes", "est. cost"):
            t.add_column(col, justify="left" if col == "tokens" else "right")
        for label, u, cost in (
                ("this ticket", ticket, self.ticket_cost),
                (f"session ({self.ticket_no} ticket{'s' if self.ticket_no > 1 else ''})", session,
                 self.session_cost)):
            t.add_row(label, f"{u.input_tokens:,}", f"{u.output_tokens:,}",
                      f"{u.cache_read_input_tokens:,}", f"{u.cache_creation_input_tokens:,}",
                      "unknown" if cost is None else f"${cost:.4f}")
        self.info.print(t, highlight=False)
        if self.ticket_cost is None or self.session_cost is None:
            self.say("a model without a known price has no estimate (add it under [prices] in "
                     "agentcli.toml)", "dim")

    def cmd_history(self, arg: str) -> None:
        log = self.conv.ticket.calls
        if not log:
            self.say("no tool calls in this ticket yet")
            return
        for i, c in enumerate(log, 1):
            self.say(f"{i:>3}. {_clean(c.name)} {compact(c.input, 200)} → {_clean(c.outcome)} "
                     f"({c.duration_ms:.1f} ms)", "red" if c.is_error else None, indent=5)
            self.say(f"     {compact(c.result, 300)}", "dim", indent=5)

    def _note(self, record: dict[str, Any]) -> None:
        """Record a change of scope or model in the session log (for the audit trail)."""
        try:
            self.app.log_for(self.conv).record({**record, "session_id": self.conv.session_id})
        except OSError:
            pass
