"""Format core: message-file text <-> nbformat v4 notebooks, as plain dicts.

The bottom of the dependency graph. Imports nothing heavy (no nbformat, jupytext or
litellm) so that the command line and the kernel start fast.
"""
