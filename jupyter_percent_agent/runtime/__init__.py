"""Agent runtime: agents, history assembly, model calls through litellm, the ATTP loop."""
