"""Session logs: the append-only record of every event (``log``), and reading them back for
``agentcli log list / show`` (``replay``)."""
