"""History assembly and context fitting: pure functions over parsed message files."""

from __future__ import annotations

import pytest

from jupyter_percent_agent import format as fmt
from jupyter_percent_agent.format import set_cell_attrs
from jupyter_percent_agent.runtime import history as hist
from tests.paths import TEST_DATA

DATA = TEST_DATA / "runtime"


@pytest.fixture
def nb() -> dict:
    return fmt.read(DATA / "basic.msg.md")


def _cells(nb: dict) -> list:
    return hist.conversation_cells(nb)


def test_order_roles_and_history_none(nb: dict) -> None:
    h = hist.build_history(_cells(nb), 4, system_prompt="SYS")
    assert h.messages[0] == {"role": "system", "content": "SYS"}
    assert h.messages[1] == {"role": "user", "content": "What is 2+2?"}
    assert h.messages[2] == {"role": "assistant", "content": "It is 4."}
    assert h.messages[-1] == {"role": "user", "content": "What now?"}
    assert not any("secret" in m["content"] for m in h.messages)
    # a summary cell without a stored summary goes whole
    assert any("dragon" in m["content"] for m in h.messages)


def test_stored_summary_replaces_the_cell(nb: dict) -> None:
    cell = _cells(nb)[2]
    set_cell_attrs(cell, {"summary": "A knight beat a dragon."})
    set_cell_attrs(cell, {"summary_hash": hist.content_hash(cell)})
    h = hist.build_history(_cells(nb), 4)
    text = "\n".join(m["content"] for m in h.messages)
    assert "A knight beat a dragon." in text
    assert "dragon and a knight" not in text and "The knight won." not in text


def test_stale_summary_is_not_used(nb: dict) -> None:
    cell = _cells(nb)[2]
    set_cell_attrs(cell, {"summary": "OLD SUMMARY"})
    set_cell_attrs(cell, {"summary_hash": "0000000000000000"})
    assert hist.stored_summary(cell) is None
    h = hist.build_history(_cells(nb), 4)
    assert not any("OLD SUMMARY" in m["content"] for m in h.messages)


def test_fresh_summaries_win(nb: dict) -> None:
    cid = fmt.cell_id(_cells(nb)[2])
    h = hist.build_history(_cells(nb), 4, summaries={cid: "NEW"})
    assert any(m["content"].endswith("NEW") for m in h.messages)


def test_exclude_and_force_include(nb: dict) -> None:
    h = hist.build_history(_cells(nb), 4, exclude=[1], include=[2])
    text = [m["content"] for m in h.messages]
    assert "What is 2+2?" not in text
    assert "do not send this secret" in text


def test_included_cells_of_another_file_come_first(nb: dict) -> None:
    other = hist.Included("other[1]", _cells(nb)[0])
    h = hist.build_history(_cells(nb), 2, system_prompt="S", included=[other])
    assert [t.group for t in h.turns][:3] == ["system", "other[1]", "other[1]"]


def test_current_text_overrides(nb: dict) -> None:
    h = hist.build_history(_cells(nb), 4, current_text="live source")
    assert h.messages[-1]["content"] == "live source"


@pytest.mark.parametrize(("value", "kind", "mode"), [
    (None, "message", "include"), ("none", "message", "exclude"), (0, "message", "exclude"),
    (False, "message", "exclude"), ("false", "message", "exclude"), (1, "raw", "include"),
    ("summary", "message", "summary"), (None, "raw", "exclude"), (None, "agent", "exclude"),
    (True, "note", "include"), ("include", "note", "include"),
])
def test_history_modes(value, kind: str, mode: str) -> None:
    assert hist.history_mode(value, kind) == mode


def _words(messages: list[dict]) -> int:
    return sum(len(m["content"].split()) + 1 for m in messages)


def test_fit_drops_oldest_whole_cells_never_system_or_current() -> None:
    turns = [hist.Turn("system", "sys " * 10, hist.SYSTEM)]
    for i in range(5):
        turns += [hist.Turn("user", f"q{i} " * 20, f"c{i}"),
                  hist.Turn("assistant", f"a{i} " * 20, f"c{i}")]
    turns.append(hist.Turn("user", "now " * 10, hist.CURRENT))
    fitted = hist.fit(hist.History(turns), 100, _words)
    assert fitted.dropped == ["c0", "c1", "c2", "c3"]
    assert fitted.turns[0].group == hist.SYSTEM and fitted.turns[-1].group == hist.CURRENT
    assert {t.group for t in fitted.turns} == {hist.SYSTEM, "c4", hist.CURRENT}
    assert _words(fitted.messages) <= 100


def test_fit_without_budget_or_when_bytes_fit_counts_nothing() -> None:
    turns = [hist.Turn("user", "hi", hist.CURRENT)]

    def boom(messages: list[dict]) -> int:
        raise AssertionError("counted")

    assert hist.fit(hist.History(turns), None, boom).turns == turns
    assert hist.fit(hist.History(turns), 1000, boom).dropped == []


def test_fit_keeps_system_and_current_even_when_too_big() -> None:
    turns = [hist.Turn("system", "s " * 500, hist.SYSTEM), hist.Turn("user", "x", "c1"),
             hist.Turn("user", "n " * 500, hist.CURRENT)]
    fitted = hist.fit(hist.History(turns), 50, _words)
    assert [t.group for t in fitted.turns] == [hist.SYSTEM, hist.CURRENT]
    assert fitted.dropped == ["c1"]


def test_fit_uses_a_batch_counter_when_there_is_one() -> None:
    calls: list[int] = []

    class Counter:
        def __call__(self, messages: list[dict]) -> int:
            raise AssertionError("per-message counting")

        def each(self, messages: list[dict]) -> list[int]:
            calls.append(len(messages))
            return [len(m["content"].split()) + 1 for m in messages]

    turns = [hist.Turn("user", "x " * 50, "c1"), hist.Turn("user", "now", hist.CURRENT)]
    fitted = hist.fit(hist.History(turns), 20, Counter())
    assert calls == [2]
    assert fitted.dropped == ["c1"]


def test_an_empty_reply_is_no_assistant_turn() -> None:
    """A call that failed can leave an empty reply behind; strict providers reject an empty
    assistant message, so it is left out."""
    cell = fmt.new_message("Is anyone there?", cell_id="q")
    cell["outputs"] = [fmt.reply_output("", agent="a", out_id="q.1"),
                       fmt.reply_output("  \n", agent="a", out_id="q.2")]
    assert [(t.role, t.content) for t in hist.cell_turns(cell, "q")] == [
        ("user", "Is anyone there?")]


@pytest.mark.parametrize("mark", ["incomplete", "interrupted"])
def test_a_reply_that_did_not_finish_is_sent_saying_so(mark: str) -> None:
    """A reply saved while it streamed (incomplete) or stopped (interrupted) is what the
    model said so far, not its whole answer: the next message's history says so."""
    cell = fmt.new_message("Tell me a story.", cell_id="q")
    cell["outputs"] = [fmt.reply_output("Once upon a time ", agent="a", out_id="q.1",
                                        attrs={mark: True})]
    turns = [(t.role, t.content) for t in hist.cell_turns(cell, "q")]
    assert turns == [("user", "Tell me a story."),
                     ("assistant", "Once upon a time" + hist.CUT_NOTE)]


def test_a_finished_reply_is_sent_as_it_is() -> None:
    cell = fmt.new_message("Tell me a story.", cell_id="q")
    cell["outputs"] = [fmt.reply_output("The end.", agent="a", out_id="q.1",
                                        attrs={"model": "m"})]
    assert [t.content for t in hist.cell_turns(cell, "q")] == ["Tell me a story.", "The end."]
