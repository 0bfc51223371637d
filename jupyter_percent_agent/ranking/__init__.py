"""Ranking texts by meaning: lexical terms (FTS5, Chinese-aware), embeddings (a model shipped
in a package, or one litellm reaches), and their fusion.

Shared by the SOP index (``tasks.index``: which document fits a request) and the runtime
(``ranking.tools.select_tools``: which tools to offer for one message). Importing this package
imports nothing heavy; the embedding model loads on first use.
"""
