"""The batch engine (``engine``: bounded, ordered, resumable) and its input (``input``: one
question a line, text or JSON Lines, read lazily)."""
