"""Grounding checks: what an answer or a draft claims (``claims``) against what the ticket's tool
results say (``grounding``)."""
