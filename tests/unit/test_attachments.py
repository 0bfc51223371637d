"""Which files and images a message names (``attachments.mentions``), and what is read of
them (files of a temporary folder; no process, no server)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from jupyter_percent_agent.runtime.attachments import check, expand, image_type, mentions
from jupyter_percent_agent.runtime.code_history import TEXT_BUDGET, cut
from jupyter_percent_agent.trust import TrustError
from tests.paths import TEST_DATA


def paths(text: str) -> list[tuple[str, bool]]:
    return [(m.path, m.image) for m in mentions(text)]


def test_file_mentions_end_at_a_blank_or_the_sentence_and_take_escaped_blanks() -> None:
    assert paths("See @file:data.csv, then @file:my\\ notes.txt.") == [
        ("data.csv", False), ("my notes.txt", False)]


def test_markdown_images_with_angle_brackets_and_titles_are_mentions_in_order() -> None:
    assert paths('A ![a](<my plot.png> "title") and @file:b.txt and ![c](c.jpg)') == [
        ("my plot.png", True), ("b.txt", False), ("c.jpg", True)]


def test_nothing_inside_code_or_an_address_is_a_mention() -> None:
    text = "Mail ada@file:x or `@file:y`\n```\n![z](z.png)\n@file:w\n```\n~~~\n@file:open"
    assert paths(text) == []


def test_a_path_named_twice_goes_once() -> None:
    assert paths("@file:a.png and ![again](a.png)") == [("a.png", False)]


def test_images_are_known_by_their_bytes_not_their_names() -> None:
    assert image_type((TEST_DATA / "attachments" / "red.png").read_bytes()) == "image/png"
    assert image_type((TEST_DATA / "attachments" / "green.jpg").read_bytes()) == "image/jpeg"
    assert image_type(b"RIFF\0\0\0\0WEBPVP8 ") == "image/webp"
    assert image_type(b"%PDF-1.4") is None


def test_a_fence_closes_only_with_its_own_character_at_least_as_long() -> None:
    text = "````\n```\n@file:inside\n~~~~\n````\n@file:after\n  ~~~\n@file:open"
    assert paths(text) == [("after", False)]



def test_a_large_file_is_read_in_pieces_and_cut_as_the_whole_text_would_be(
    tmp_path: Path,
) -> None:
    text = "".join(f"line {i}: café ☕ données\n" for i in range(200_000))  # over 4 MiB
    (tmp_path / "big.log").write_text(text)
    sent = check("Look at @file:big.log", tmp_path)
    assert cut(text, TEXT_BUDGET, what="the file").rstrip() in sent.content
    assert "characters of the file cut ...]" in sent.content and sent.sent == ["big.log"]


def test_a_file_with_another_hard_link_is_refused(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("shared\n")
    os.link(tmp_path / "a.txt", tmp_path / "b.txt")
    with pytest.raises(TrustError, match="hard links"):
        check("@file:a.txt", tmp_path)


def test_an_earlier_message_whose_file_went_is_sent_with_one_line_in_its_place(
    tmp_path: Path,
) -> None:
    sent = expand("It was in @file:gone.csv", tmp_path)
    assert sent.content.endswith("[gone.csv was left out: @file 'gone.csv': no such file in "
                                 f"{tmp_path}]")
    assert sent.sent == []
