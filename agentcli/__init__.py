"""agentcli: a terminal assistant for customer-support staff.

A question goes through a hand-written tool-use loop (``agentcli.loop``) over a model provider
(``agentcli.providers``) with two tools (``agentcli.tools``): a read-only order lookup
(``agentcli.stores``) and a draft writer (``agentcli.drafts.store``). The loop yields events
(``agentcli.events``) that renderers (``agentcli.cli.render``) and the session log
(``agentcli.sessions.log``) consume. Nothing heavy is imported here.
"""

__version__ = "0.1.0"
