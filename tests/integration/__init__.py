"""Tests that start processes, servers, kernels or browsers (browser/: real Chromium)."""
