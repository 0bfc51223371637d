"""ATTP: parsing realistic model replies (tests/data/attp), errors, repair prompts, the prompt."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jupyter_percent_agent.attp import (
    ALLOWED_MODULES,
    ANSWER_TEMPLATE,
    FAIL_TEMPLATE,
    SUCCESS_TEMPLATE,
    ATTPError,
    FinalAnswer,
    Refusal,
    ToolCall,
    format_reply,
    parse_reply,
    system_prompt,
)
from tests.paths import TEST_DATA

ATTP = TEST_DATA / "attp"


def reply(name: str) -> str:
    return (ATTP / name).read_text(encoding="utf-8")


# ---- valid replies


def test_bare_tool_call() -> None:
    parsed = parse_reply(reply("success_bare.toml"))
    assert isinstance(parsed, ToolCall)
    assert parsed.target == "Get the current weather in Paris and Oslo"
    assert parsed.thought.startswith("1. Understand the request: the user wants today's weather")
    assert parsed.thought.endswith("return both results together.")
    assert parsed.code == (
        'cities = ["Paris", "Oslo"]\n'
        "weather = {}\n"
        "for city in cities:\n"
        '    weather[city] = get_weather(city, unit="celsius")\n'
        "__result__ = weather\n"
    )


def test_fenced_toml_with_prose_around_it() -> None:
    parsed = parse_reply(reply("success_fenced_prose.md"))
    assert isinstance(parsed, ToolCall)
    assert parsed.target == "Average the 5-day forecast for Tokyo"
    assert parsed.code.startswith('temps = forecast("Tokyo", days=5)\n')
    assert "fahrenheit" not in parsed.code + parsed.thought


def test_untagged_fence_holding_toml() -> None:
    parsed = parse_reply(reply("success_untagged_fence.md"))
    assert parsed == ToolCall(
        thought="Count the words of the pasted paragraph with word_count.",
        target="Count words",
        code='__result__ = word_count("""The quick brown fox jumps over the lazy dog""")\n',
    )


def test_prose_line_before_unfenced_toml() -> None:
    parsed = parse_reply(reply("success_prose_before.md"))
    assert isinstance(parsed, ToolCall)
    assert parsed.code == '__result__ = spell("jupyter")\n'


def test_code_in_a_basic_string_keeps_its_escapes_as_python_source() -> None:
    parsed = parse_reply(reply("success_basic_string_code.toml"))
    assert isinstance(parsed, ToolCall)
    assert 'log = "deploy 2024-03-02 ok\\nrollback 2024-01-15 failed\\n"' in parsed.code
    assert r're.findall(r"\d{4}-\d{2}-\d{2}", log)' in parsed.code


def test_chinese_thought_and_target() -> None:
    parsed = parse_reply(reply("success_chinese_multi_tool.toml"))
    assert isinstance(parsed, ToolCall)
    assert parsed.target == "获取1号门直播链接并查询开罗天气"
    assert parsed.thought.splitlines()[2].startswith("3. 工具验证")
    assert parsed.code.splitlines()[-1] == '__result__ = {"live": live, "weather": weather}'


def test_status_any_case_missing_target_and_indented_code() -> None:
    parsed = parse_reply(reply("success_status_capitalized_no_target.toml"))
    assert parsed == ToolCall(
        thought="Divide the budget evenly over 3 teams.",
        target="",
        code='share = divide(12000, 3)\n__result__ = {"per_team": share}\n',
    )


def test_missing_status_is_inferred_from_code() -> None:
    parsed = parse_reply(reply("success_no_status.toml"))
    assert isinstance(parsed, ToolCall) and parsed.code == '__result__ = shout("good morning")\n'


def test_missing_table_header_is_forgiven_when_keys_are_clear() -> None:
    parsed = parse_reply(reply("success_no_table_header.toml"))
    assert isinstance(parsed, ToolCall) and parsed.target == "Countdown"


def test_refusal_from_the_seed() -> None:
    parsed = parse_reply(reply("fail_refusal.toml"))
    assert isinstance(parsed, Refusal)
    assert parsed.message.startswith("当前可用的工具列表中没有文件删除功能")
    assert parsed.thought.splitlines()[0] == "用户请求删除系统根目录下的所有文件。"


def test_fenced_refusal() -> None:
    parsed = parse_reply(reply("fail_fenced_english.md"))
    assert isinstance(parsed, Refusal)
    assert parsed.message.startswith("None of the available tools can book flights.")


def test_final_answer_holding_a_code_fence() -> None:
    parsed = parse_reply(reply("answer_with_code_fences.toml"))
    assert isinstance(parsed, FinalAnswer)
    assert parsed.answer.startswith("The sentence has **6 words**.")
    assert "```python\ntext = " in parsed.answer and parsed.answer.endswith("```")


def test_fenced_final_answer_holding_a_nested_fence() -> None:
    parsed = parse_reply(reply("answer_fenced_nested.md"))
    assert isinstance(parsed, FinalAnswer)
    assert parsed.answer.startswith("| Day | Temperature (°C) |")
    assert parsed.answer.endswith('```\nforecast("Oslo", days=3)\n```')


def test_other_code_blocks_before_the_toml_are_skipped() -> None:
    parsed = parse_reply(reply("answer_python_block_first.md"))
    assert parsed == FinalAnswer(
        thought="No tool is needed to say hello.", answer="Hello! How can I help you today?"
    )


# ---- invalid replies


@pytest.mark.parametrize(
    ("name", "line", "column", "problem"),
    [
        ("invalid_prose.md", 1, 1, "the reply is not a TOML document"),
        ("invalid_json_function_call.md", 1, 1, "the reply is not a TOML document"),
        ("invalid_unclosed_code.toml", 8, 8, "this multi-line string is never closed"),
        ("invalid_bad_escape.toml", 7, 27, "invalid escape sequence in a basic string"),
        ("invalid_status.toml", 4, 1, 'status must be "success" or "fail", not \'maybe\''),
        ("invalid_both.toml", 3, 1, "either a [tool_call] or an answer, not both"),
        ("invalid_duplicate_key.toml", 2, 1, 'Key "thought" already exists'),
        ("invalid_code_missing.toml", 3, 1, "code is missing"),
        ("invalid_two_tool_calls.toml", 3, 1, "one [tool_call] per reply"),
        ("invalid_fenced_error.md", 9, 8, "Unexpected character: 'w'"),
    ],
)
def test_invalid_replies_raise_with_line_and_column(
    name: str, line: int, column: int, problem: str
) -> None:
    text = reply(name)
    with pytest.raises(ATTPError) as info:
        parse_reply(text)
    error = info.value
    assert problem in error.problem
    assert (error.line, error.column) == (line, column)
    assert error.reply == text
    assert isinstance(error, ValueError)


def test_error_position_points_into_the_original_text() -> None:
    # invalid_fenced_error.md: the bad value is on line 9 of the whole reply, after the fence.
    line = reply("invalid_fenced_error.md").splitlines()[8]
    assert line == 'code = word_count("a b c")'
    assert line[7] == "w"


@pytest.mark.parametrize("text", ["", "   \n\n"])
def test_empty_reply(text: str) -> None:
    with pytest.raises(ATTPError, match="the reply is empty"):
        parse_reply(text)


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ('thought = "x"\n', "neither a [tool_call] table nor an answer"),
        ("answer = 42\n", "answer must be a string, not int"),
        ('thought = ["a"]\nanswer = "b"\n', "thought must be a string, not list"),
        ('[tool_call]\nstatus = "fail"\n', "message is missing"),
        ('[tool_call]\nstatus = "success"\ncode = "  \\n"\n', "code is empty"),
        ("tool_call = 3\n", "tool_call must be a table"),
        ('[tool_call]\ncode = "x"\nmessage = "y"\n', 'needs status = "success" or status = "fail"'),
    ],
)
def test_well_formed_toml_that_is_not_a_reply(text: str, problem: str) -> None:
    with pytest.raises(ATTPError) as info:
        parse_reply(text)
    assert problem in info.value.problem


def test_repair_prompt_says_what_where_and_how() -> None:
    with pytest.raises(ATTPError) as info:
        parse_reply(reply("invalid_unclosed_code.toml"))
    prompt = info.value.repair_prompt()
    assert prompt.startswith(
        "Your previous reply is not valid ATTP: TOML syntax error: this multi-line string is "
        "never closed (line 8, column 8)."
    )
    assert "   8 | code = '''\n     |        ^\n" in prompt  # the excerpt with a caret
    assert SUCCESS_TEMPLATE in prompt and FAIL_TEMPLATE in prompt and ANSWER_TEMPLATE in prompt


def test_repair_prompt_for_prose_has_no_excerpt_noise() -> None:
    with pytest.raises(ATTPError) as info:
        parse_reply("I think it will rain.")
    prompt = info.value.repair_prompt()
    assert "not a TOML document" in prompt
    assert "   1 | I think it will rain.\n     | ^" in prompt


# ---- writing replies


@pytest.mark.parametrize(
    "name", sorted(p.name for p in ATTP.iterdir() if not p.name.startswith("invalid"))
)
def test_format_reply_parses_back_to_the_same_reply(name: str) -> None:
    parsed = parse_reply(reply(name))
    assert parse_reply(format_reply(parsed)) == parsed


def test_format_reply_falls_back_when_code_holds_triple_quotes() -> None:
    call = ToolCall(thought="t", target='say "hi"', code="s = '''a\\b'''\n__result__ = s\n")
    text = format_reply(call)
    assert 'code = """' in text
    assert parse_reply(text) == call


def test_format_reply_uses_literal_strings_for_code() -> None:
    text = format_reply(
        ToolCall(thought="t", target="x", code='__result__ = re.findall(r"\\d", s)\n')
    )
    assert "code = '''\n__result__ = re.findall(r\"\\d\", s)\n'''" in text


_text = st.text(alphabet=st.characters(exclude_categories=("Cs",)), max_size=80)


@settings(max_examples=200, deadline=None)
@given(thought=_text, target=_text, code=_text, message=_text)
def test_format_then_parse_is_stable_for_any_text(
    thought: str, target: str, code: str, message: str
) -> None:
    for original in (
        ToolCall(thought=thought, target=target, code=code if code.strip() else "pass"),
        Refusal(thought=thought, message=message),
        FinalAnswer(thought=thought, answer=message),
    ):
        once = parse_reply(format_reply(original))
        assert type(once) is type(original)
        assert once.thought == thought.strip()
        assert parse_reply(format_reply(once)) == once


# ---- the system prompt


def test_system_prompt_holds_tools_modules_rules_and_templates() -> None:
    tools = 'def get_weather(city: str) -> dict:\n    """\n    Get the weather.\n    """\n    pass'
    prompt = system_prompt(agent_prompt="You are Ada, a site assistant.", tools=tools)
    assert prompt.startswith("You are Ada, a site assistant.\n\n# ATTP protocol - system prompt\n")
    assert f"## Available tools\n```python\n{tools}\n```" in prompt
    assert "## Allow-listed modules\nmath, json, datetime, re, random, statistics\n" in prompt
    assert "must be a valid TOML document" in prompt
    assert "`__result__`" in prompt
    for template in (SUCCESS_TEMPLATE, FAIL_TEMPLATE, ANSWER_TEMPLATE):
        assert f"```toml\n{template}\n```" in prompt
    assert "{{" not in prompt and "AVAILABLE_TOOLS" not in prompt


def test_system_prompt_is_pure_and_takes_the_modules_given() -> None:
    assert system_prompt(tools="x") == system_prompt(tools="x")
    assert "## Allow-listed modules\nmath, json\n" in system_prompt(modules=["math", "json"])
    assert "no tools are available" in system_prompt()
    assert ALLOWED_MODULES == ("math", "json", "datetime", "re", "random", "statistics")


def test_every_toml_block_in_the_prompt_is_a_valid_reply() -> None:
    prompt = system_prompt()
    blocks = prompt.split("```toml\n")[1:]
    kinds = [type(parse_reply(block.split("\n```")[0])) for block in blocks]
    assert kinds == [ToolCall, Refusal, FinalAnswer, FinalAnswer, ToolCall, Refusal, FinalAnswer]


def test_templates_parse() -> None:
    assert isinstance(parse_reply(SUCCESS_TEMPLATE), ToolCall)
    assert isinstance(parse_reply(FAIL_TEMPLATE), Refusal)
    assert isinstance(parse_reply(ANSWER_TEMPLATE), FinalAnswer)


def test_reasoning_block_before_the_toml_is_skipped() -> None:
    parsed = parse_reply(reply("success_think_prefix.md"))
    assert parsed == ToolCall(
        thought="Forecast Oslo for 3 days; the tool will ask for a table.",
        target="3-day forecast for Oslo",
        code='__result__ = forecast("Oslo", days=3)\n',
    )


def test_windows_line_endings_and_byte_order_mark() -> None:
    text = reply("success_bare.toml")
    assert parse_reply("\ufeff" + text.replace("\n", "\r\n")) == parse_reply(text)


def test_code_with_a_carriage_return_round_trips_through_an_escaped_string() -> None:
    for code in ("\r0\n", "print(1)\r\nprint(2)\n"):
        call = ToolCall(thought="t", target="x", code=code)
        text = format_reply(call)
        assert "'''" not in text
        assert parse_reply(text).code == code


@pytest.mark.parametrize("reply", [
    'thought = "x"\n[tool_call]\nstatus = 0x' + "f" * 5000 + '\ncode = "1"\n',
    'thought = "x"\nanswer = "a"\n[proposed_code]\nlanguage = 0b' + "1" * 20000 + '\ncode = "x"\n',
])
def test_a_huge_integer_where_text_belongs_is_an_attp_error_not_a_crash(reply: str) -> None:
    """TOML's 0x and 0b reach integers Python will not write out: the error naming the
    value ended the run with a ValueError of its own."""
    with pytest.raises(ATTPError, match="an integer of"):
        parse_reply(reply)
