"""The test suite: tests/unit (no process, server, kernel or network) and tests/integration."""
