"""``history: auto``: long conversations send what the new message needs, within a budget.

Through the real ``tce chat`` against the local OpenAI-compatible server (what it received is
what was sent), and the pure selection (``runtime.history.select``) on small histories.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from jupyter_percent_agent import format as fmt
from jupyter_percent_agent.ranking.passages import VectorCache, rank_passages
from jupyter_percent_agent.runtime import auto_history
from jupyter_percent_agent.runtime import history as hist
from jupyter_percent_agent.testing.environment import tce
from jupyter_percent_agent.testing.long_conversations import conversation


def sent_text(request) -> str:
    return "\n".join(str(m["content"]) for m in request.messages)


def reply_attrs(path: Path, index: int) -> dict:
    cell = hist.conversation_cells(fmt.read(path))[index - 1]
    (reply,) = [o for o in cell["outputs"] if fmt.output_kind(o) == "reply"]
    return fmt.output_attrs(reply)


def test_a_100_message_auto_conversation_sends_a_bounded_request_holding_the_early_cells(
        tmp_path: Path, local_model) -> None:
    conv = conversation(7, 100)
    path = tmp_path / "long.msg.md"
    path.write_text(conv.text)
    cells = hist.conversation_cells(fmt.read(path))
    whole = sum(len(fmt.message_text(c)) + sum(len(fmt.output_text(o)) for o in c["outputs"])
                for c in cells)
    local_model.script("ok")
    r = tce("chat", str(path), "-m", conv.question)
    assert r.exit_code == 0, r.output
    sent = sent_text(local_model.requests[-1])
    assert len(sent) < 0.6 * whole  # bounded: the budget of an unknown model's window
    for cid in conv.needed:  # the facts the question needs, from the first fifth
        said = fmt.message_text(next(c for c in cells if fmt.cell_id(c) == cid))
        assert said in sent
    for cell in cells[-2:]:  # the last two turns always go
        assert fmt.message_text(cell) in sent
    attrs = reply_attrs(path, 101)
    assert set(conv.needed) <= set(attrs["history_auto"])
    assert "m99" not in attrs["history_auto"]  # pinned by being recent, not auto-chosen


def test_without_history_auto_every_cell_is_sent(tmp_path: Path, local_model) -> None:
    conv = conversation(7, 100, auto=False)
    path = tmp_path / "long.msg.md"
    path.write_text(conv.text)
    local_model.script("ok")
    assert tce("chat", str(path), "-m", conv.question).exit_code == 0
    sent = sent_text(local_model.requests[-1])
    cells = hist.conversation_cells(fmt.read(path))
    assert all(fmt.message_text(c) in sent for c in cells[:100])
    assert "history_auto" not in reply_attrs(path, 101)


def test_a_history_that_fits_the_budget_is_sent_whole_and_records_no_choice(
        tmp_path: Path, local_model) -> None:
    conv = conversation(3, 12)
    path = tmp_path / "short.msg.md"
    path.write_text(conv.text)
    local_model.script("ok")
    assert tce("chat", str(path), "-m", conv.question).exit_code == 0
    sent = sent_text(local_model.requests[-1])
    cells = hist.conversation_cells(fmt.read(path))
    assert all(fmt.message_text(c) in sent for c in cells[:12])
    assert "history_auto" not in reply_attrs(path, 13)


def _cell(cid: str, text: str, reply: str = "", history: str | None = None) -> str:
    attr = f' history="{history}"' if history else ""
    out = f"### %%% Reply[^{cid}.1]\n\n[^{cid}.1]: [assistant]\n\n{reply}\n\n" if reply else ""
    return f"## %% Q[^{cid}]\n\n[^{cid}]: [markdown]{attr}\n\n{text}\n\n{out}"


def _history(tmp_path: Path, body: str, message: str, *, keep_last: int = 2,
             front: str = "history: auto\n") -> hist.History:
    path = tmp_path / "h.msg.md"
    path.write_text(f"---\n{front}---\n\n{body}")
    nb = fmt.read(path)
    cells = hist.conversation_cells(nb)
    return hist.build_history(cells, len(cells) + 1, current_text=message,
                              default=hist.default_mode(nb), keep_last=keep_last)


FILLER = "We talked about the weather and lunch plans for the week, nothing else. " * 6


def test_pinned_cells_and_last_turns_always_go_and_a_warning_says_when_they_exceed(
        tmp_path: Path) -> None:
    body = (_cell("p1", "PINNED " + FILLER, history="include")
            + "".join(_cell(f"a{i}", FILLER, "fine") for i in range(6))
            + _cell("l1", "LAST ONE " + FILLER) + _cell("l2", "LAST TWO " + FILLER))
    h = _history(tmp_path, body, "anything")
    assert h.auto == [f"a{i}" for i in range(6)]
    chosen = auto_history.select(h, 10, {})
    text = "\n".join(t.content for t in chosen.turns)
    assert "PINNED" in text and "LAST ONE" in text and "LAST TWO" in text
    assert chosen.auto_sent == []
    assert chosen.warning is not None and "history_budget" in chosen.warning
    roomy = auto_history.select(h, 10_000, {})
    assert roomy.warning is None and roomy.auto_sent == h.auto


def test_history_auto_on_one_cell_and_include_synonyms_pin(tmp_path: Path) -> None:
    body = (_cell("x1", "auto one", history="auto") + _cell("x2", "plain")
            + _cell("x3", "pinned", history="pinned") + _cell("x4", "a", "b")
            + _cell("x5", "c", "d"))
    h = _history(tmp_path, body, "q", front="title: t\n")
    assert h.auto == ["x1"]  # without history: auto in front, only the cell's own


def test_an_unknown_front_matter_history_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.msg.md"
    path.write_text("---\nhistory: summary\n---\n\n" + _cell("c1", "hi"))
    with pytest.raises(hist.HistoryValueError, match="front matter"):
        hist.check_history_values(fmt.read(path))


def test_a_large_reply_irrelevant_alone_is_left_out_of_its_chosen_message(
        tmp_path: Path) -> None:
    big = "An unrelated essay about gardening and tomatoes in the summer heat. " * 80
    body = (_cell("r1", "The release code is ZX-4471.", big)
            + "".join(_cell(f"f{i}", FILLER, "ok") for i in range(4))
            + _cell("l1", "x") + _cell("l2", "y"))
    h = _history(tmp_path, body, "what was the release code ZX-4471 for?")
    scores = {("r1", "asked"): 3.0, ("r1", "answered"): -1.0}
    chosen = auto_history.select(h, 2_000, scores)
    (first,) = [c for c in chosen.candidates if c.group == "r1"]
    assert first.sent and first.reply_left_out
    text = "\n".join(t.content for t in chosen.turns)
    assert "ZX-4471" in text and "tomatoes" not in text and "left out" in text


def test_an_exact_code_in_the_message_finds_the_cell_holding_it() -> None:
    rng_texts = {i: f"Notes on meeting {i}: we discussed the budget and the schedule."
                 for i in range(200)}
    rng_texts[57] = "Remember the part number QX-88213 for the pump."
    for embedder in (None, "bundled"):
        from jupyter_percent_agent.ranking.embed import WordLlamaEmbedder

        scores = rank_passages(rng_texts, "which pump is QX-88213",
                               embedder=WordLlamaEmbedder() if embedder else None)
        assert max(scores, key=scores.__getitem__) == 57


def test_rescoring_after_one_new_cell_embeds_only_that_cell_and_the_message(
        tmp_path: Path) -> None:
    from jupyter_percent_agent.ranking.embed import WordLlamaEmbedder

    texts = {i: f"cell {i} talks about topic {i % 17} and item {i * 7}" for i in range(1000)}
    cache = VectorCache(tmp_path / "v.sqlite")
    rank_passages(texts, "topic 3", embedder=WordLlamaEmbedder(), cache=cache)
    again = VectorCache(tmp_path / "v.sqlite")  # a new process: read from the file
    texts[1000] = "a new cell about item 5"
    rank_passages(texts, "topic 4", embedder=WordLlamaEmbedder(), cache=again)
    assert again.embedded == 2


def test_tce_chat_explain_prints_each_candidate_and_sends_nothing(tmp_path: Path,
                                                                  local_model) -> None:
    conv = conversation(11, 100)
    path = tmp_path / "long.msg.md"
    path.write_text(conv.text)
    before = path.read_text()
    r = tce("chat", str(path), "--explain", "-m", conv.question)
    assert r.exit_code == 0, r.output
    assert local_model.requests == [] and path.read_text() == before
    rows = {line.split()[0]: line for line in r.stdout.splitlines() if line.startswith("m")}
    for cid in conv.needed:
        assert "sent" in rows[cid].split()
    assert len([ln for ln in rows.values() if "sent" in ln.split()]) < 60
    listed = tce("list", str(path), "--history", conv.question)
    assert listed.exit_code == 0, listed.output
    assert listed.stdout == r.stdout


def test_exclude_overrides_auto_choice(tmp_path: Path, local_model) -> None:
    conv = conversation(7, 100)
    path = tmp_path / "long.msg.md"
    path.write_text(conv.text)
    first = int(conv.needed[0][1:])
    local_model.script("ok")
    assert tce("chat", str(path), "-e", f"[{first}]", "-m", conv.question).exit_code == 0
    cells = hist.conversation_cells(fmt.read(path))
    said = fmt.message_text(cells[first - 1])
    assert said not in sent_text(local_model.requests[-1])


def test_history_model_chooses_in_one_call_and_the_local_scorer_stands_when_it_fails(
        tmp_path: Path, local_model, user_config_dir: Path) -> None:
    conv = conversation(5, 100)
    path = tmp_path / "long.msg.md"
    path.write_text(conv.text)
    (user_config_dir / "config.toml").write_text('history_model = "test-small"\n')
    local_model.script(json.dumps({"relevant": [40, 41]}), "answer")
    assert tce("chat", str(path), "-m", conv.question).exit_code == 0
    scoring, answer = local_model.requests[-2:]
    assert scoring.body["model"] == "test-small" and "[100]" not in sent_text(scoring)
    chosen = reply_attrs(path, 101)["history_auto"]
    assert "m40" in chosen and "m41" in chosen
    assert fmt.message_text(hist.conversation_cells(fmt.read(path))[39]) in sent_text(answer)
    # a model that fails: one line, and the local scorer's choice
    from jupyter_percent_agent.testing.openai_server import Reply

    local_model.script(Reply.http_error(500), "answer again")
    r = tce("chat", str(path), "-m", conv.question)
    assert r.exit_code == 0, r.output
    assert "history_model test-small failed" in r.stderr
    assert set(conv.needed) <= set(reply_attrs(path, 102)["history_auto"])


def test_the_default_budget_is_half_what_the_window_leaves_and_history_budget_overrides(
        tmp_path: Path) -> None:
    from jupyter_percent_agent.runtime.agents import Agent
    from jupyter_percent_agent.runtime.relevance import (
        HISTORY_SHARE,
        UNKNOWN_WINDOW,
        history_budget,
        model_window,
    )

    h = _history(tmp_path, _cell("a1", "x") + _cell("a2", "y"), "q")
    fixed = auto_history.estimate_tokens("q")
    assert model_window("gpt-4o-mini") == 128_000  # litellm's map, its entry alone read
    assert history_budget(Agent("a", models=["gpt-4o-mini"]), h)[0] == \
        int(HISTORY_SHARE * (128_000 - fixed))
    assert history_budget(Agent("a", models=["unknown-model"], context_window=10_000,
                                max_output_tokens=2_000), h)[0] == \
        int(HISTORY_SHARE * (8_000 - fixed))
    assert history_budget(Agent("a", models=["unknown-model"]), h)[0] == \
        int(HISTORY_SHARE * (UNKNOWN_WINDOW - fixed))
    assert history_budget(Agent("a", history_budget=3_000), h) == (3_000, "history_budget")


def test_combine_arrays_ranks_as_combine_does() -> None:
    import numpy as np

    from jupyter_percent_agent.ranking.fusion import combine, combine_arrays

    lexical = {0: 3.0, 2: 1.0, 3: 0.5}
    vector = {i: v for i, v in enumerate([0.1, 0.7, 0.3, 0.2, 0.9])}
    expected = dict(combine(lexical, vector, 0.5))
    lex = np.array([lexical.get(i, np.nan) for i in range(5)])
    got = combine_arrays(lex, np.array([vector[i] for i in range(5)]), 0.5)
    assert np.allclose(got, [expected[i] for i in range(5)])
    words_only = combine_arrays(lex, None, 0.5)
    assert np.allclose(words_only[[0, 2, 3]], [dict(combine(lexical, {}))[i] for i in (0, 2, 3)])
    assert np.isnan(words_only[[1, 4]]).all()


def test_pinned_cells_over_the_budget_are_sent_with_one_line_naming_the_setting(
        tmp_path: Path, local_model) -> None:
    body = "".join(_cell(f"p{i}", f"pinned fact {i}. " + FILLER, history="include")
                   for i in range(5)) + "".join(_cell(f"a{i}", FILLER, "ok") for i in range(5))
    path = tmp_path / "pins.msg.md"
    path.write_text("---\nhistory: auto\nagents:\n  small:\n    models: [test-model]\n"
                    "    history_budget: 100\n---\n\n" + body)
    local_model.script("ok")
    r = tce("chat", str(path), "-m", "anything")
    assert r.exit_code == 0, r.output
    (line,) = [ln for ln in r.stderr.splitlines() if "history budget" in ln]
    assert "raise history_budget" in line
    sent = sent_text(local_model.requests[-1])
    assert all(f"pinned fact {i}." in sent for i in range(5))


def test_the_vector_cache_is_the_users_alone(tmp_path: Path) -> None:
    from jupyter_percent_agent.ranking.embed import WordLlamaEmbedder

    cache = VectorCache(tmp_path / "cache" / "v.sqlite")
    cache.vectors(WordLlamaEmbedder(), ["a private cell"])
    assert (tmp_path / "cache" / "v.sqlite").stat().st_mode & 0o777 == 0o600
    assert (tmp_path / "cache").stat().st_mode & 0o777 == 0o700
