"""Tools chosen per message when the embedding model behind the local server fails."""

from __future__ import annotations

import warnings

from jupyter_percent_agent.ranking.embed import LiteLLMEmbedder
from jupyter_percent_agent.ranking.tools import ToolSelectionWarning, select_tools
from jupyter_percent_agent.testing.openai_server import Reply


def test_a_failing_embedding_model_ranks_tools_by_words(tools, openai_server) -> None:
    openai_server.embedding_reply = Reply.http_error(500, "down")
    broken = LiteLLMEmbedder("openai/e", api_base=openai_server.url, api_key="k")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        offered = select_tools(tools, "convert 250 euros to yen", embedder=broken)
    assert "convert_currency" in offered
    assert [w.category for w in caught] == [ToolSelectionWarning]
