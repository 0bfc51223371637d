"""Test tooling shipped with the package: a local OpenAI-compatible model server and the
environment of the processes a test points at it."""
