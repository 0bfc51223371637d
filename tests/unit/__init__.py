"""Tests that start no process, server, kernel or browser and touch no network."""
