"""Tools chosen per message: a 40-tool toolbox (tests/data/index/toolbox, loaded by the real
registry) and 38 messages, ranked like the SOP index."""

from __future__ import annotations

import json

import pytest

from jupyter_percent_agent.ranking.tools import (
    DEFAULT_TOOL_LIMIT,
    rank_tools,
    select_tools,
)
from tests.paths import TEST_DATA

DATA = TEST_DATA / "index"
MESSAGES = json.loads((DATA / "tool_messages.json").read_text(encoding="utf-8"))


def test_the_toolbox_has_40_documented_tools(tools: dict[str, str]) -> None:
    assert len(tools) == 40
    assert len(MESSAGES) >= 30
    assert {t for m in MESSAGES for t in m["tools"]} <= set(tools)


def test_yen_for_euros_is_offered_the_currency_tool_among_at_most_12(tools) -> None:
    offered = select_tools(tools, "how many yen for 250 euros", used=set())
    assert "convert_currency" in offered
    assert len(offered) == DEFAULT_TOOL_LIMIT == 12
    assert offered == [name for name in tools if name in offered]  # the toolbox's order


def test_every_message_is_offered_a_tool_that_answers_it(tools) -> None:
    missed = [m["message"] for m in MESSAGES
              if not set(m["tools"]) & set(select_tools(tools, m["message"]))]
    assert missed == []


def test_the_best_ranked_tool_is_right_for_most_messages(tools) -> None:
    first = [rank_tools(tools, m["message"])[0][0] in m["tools"] for m in MESSAGES]
    assert sum(first) / len(first) >= 0.6


def test_tools_the_conversation_used_are_always_offered(tools) -> None:
    used = {"play_music", "lock_door"}
    offered = select_tools(tools, "how many yen for 250 euros", used, limit=4)
    assert used <= set(offered) and "convert_currency" in offered and len(offered) == 4
    assert len(select_tools(tools, "hi", set(list(tools)[:20]), limit=5)) == 5


def test_a_small_toolbox_is_offered_whole(tools) -> None:
    few = dict(list(tools.items())[:5])
    assert select_tools(few, "anything", limit=12) == list(few)


def test_a_message_without_text_keeps_the_used_tools_and_the_first_others(tools) -> None:
    offered = select_tools(tools, "  ", {"get_news"}, limit=3)
    assert offered == [n for n in tools if n in {"get_news", *list(tools)[:2]}]
    with pytest.raises(ValueError):
        select_tools(tools, "x", limit=0)


def test_chinese_messages_find_tools_documented_in_chinese(tools) -> None:
    assert rank_tools(tools, "把客厅的温度调到22度")[0][0] == "set_thermostat"
    assert "start_vacuum" in select_tools(tools, "地板脏了，让机器人打扫一下", limit=3)
