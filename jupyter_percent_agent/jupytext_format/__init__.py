"""jupytext adapter: registers the message format with jupytext and delegates to the core."""
