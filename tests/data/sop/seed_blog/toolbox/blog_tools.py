"""Tools of the blog workflow (seed 003): an outline check and a stand-in image maker."""

from __future__ import annotations

import hashlib


def validate_script(input: list) -> dict:
    """
    Check that a blog outline is a list of at least three section titles.

    Args:
        input (list): The outline: a list of section titles.

    Returns:
        dict: The verdict: ok, error_type ("不够详细" when too short) and message.

    Example:
        >>> validate_script(["引言", "历史", "现状", "展望"])["ok"]
        True
    """
    if not isinstance(input, list) or not all(isinstance(x, str) for x in input):
        return {"ok": False, "error_type": "格式错误",
                "message": "大纲必须是一个由小节标题组成的 JSON 数组"}
    if len(input) < 3:
        return {"ok": False, "error_type": "不够详细",
                "message": f"大纲只有 {len(input)} 个小节，至少需要 3 个"}
    return {"ok": True, "error_type": "", "message": f"{len(input)} 个小节"}


def make_image(prompt: str, sections: list) -> dict:
    """
    Make a cover image for a blog (a stand-in: returns a stable URL for the prompt).

    Args:
        prompt (str): What the image shows.
        sections (list): The blog's section titles.

    Returns:
        dict: The image's url and the prompt it was made from.

    Example:
        >>> make_image("一只猫", ["引言"])["url"].startswith("https://")
        True
    """
    digest = hashlib.sha256((prompt + "|" + "|".join(sections)).encode()).hexdigest()[:12]
    return {"url": f"https://images.example/{digest}.png", "prompt": prompt}
