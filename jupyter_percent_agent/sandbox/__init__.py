"""Runs model-written code in a separate, limited process (RestrictedPython inside)."""
