"""An external agent's prompt for a new session: the file's history as ACP content blocks,
each turn's images after its text."""

from __future__ import annotations

from jupyter_percent_agent.runtime.acp_turn import prompt_blocks


def test_a_turns_images_follow_its_text_and_the_text_reads_as_one_labelled_history() -> None:
    messages = [
        {"role": "user", "content": [
            {"type": "text", "text": "a plot\n[image 1: image/png]"},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}]},
        {"role": "assistant", "content": "a red square"},
        {"role": "user", "content": "and now?"},
    ]
    blocks = prompt_blocks(messages, "chat.msg.md")
    assert [b["type"] for b in blocks] == ["text", "image", "text"]
    assert blocks[1] == {"type": "image", "mimeType": "image/png", "data": "AAAA"}
    assert "".join(b.get("text", "") for b in blocks) == (
        "The conversation so far, from the message file chat.msg.md:\n\n"
        "[user]\na plot\n[image 1: image/png]\n\n[assistant]\na red square\n\n"
        "[the new message]\nand now?")


def test_a_lone_message_is_sent_as_it_is() -> None:
    assert prompt_blocks([{"role": "user", "content": "hi"}], "f") == [
        {"type": "text", "text": "hi"}]
    only_image = [{"role": "user", "content": [
        {"type": "text", "text": ""},
        {"type": "image_url", "image_url": {"url": "data:image/jpeg;base64,BB"}}]}]
    assert prompt_blocks(only_image, "f") == [
        {"type": "text", "text": ""}, {"type": "image", "mimeType": "image/jpeg", "data": "BB"}]
