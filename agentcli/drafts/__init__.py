"""The review side's drafts: the store, the file format, and the queue a person works through.

- ``store``: ``DraftStore``, one file per draft in a folder (atomic, idempotent, locked);
- ``format``: the draft file format and its safe reads;
- ``queue``: filters, id prefixes, review actions and provenance over a store.

Light: the standard library only (``drafts list`` must start fast).
"""
