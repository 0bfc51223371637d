"""The task index's embedder as tests watch it, and texts to embed."""

from __future__ import annotations

from jupyter_percent_agent.ranking.embed import WordLlamaEmbedder

TEXTS = ["Translate an amount between currencies at today's rate",
         "检查提纲是否合格", "", "a"]
"""Texts to embed: English, Chinese, empty, one letter."""


class CountingEmbedder(WordLlamaEmbedder):
    """The real wordllama embedder, counting the texts it embeds."""

    def __init__(self) -> None:
        super().__init__()
        self.texts: list[str] = []

    def embed(self, texts):  # type: ignore[no-untyped-def]
        self.texts.extend(texts)
        return super().embed(texts)
