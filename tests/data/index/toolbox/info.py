"""Information tools (a toolbox of 40 tools for tool selection tests): search, news, facts."""

from __future__ import annotations

import ast
import operator


def search_web(query: str) -> list:
    """
    Search the internet and return the top result pages with a snippet each.

    Args:
        query: What to search for.

    Returns:
        list: Results with title, link and snippet.
    """
    return [{"title": query, "link": "https://example.org", "snippet": "..."}]


def get_news(topic: str = "") -> list:
    """
    Get today's headlines, optionally about a topic.

    Args:
        topic: Optional subject, e.g. "elections".

    Returns:
        list: Articles with headline, source and time.
    """
    return [{"headline": f"Latest on {topic or 'the world'}", "source": "Example Times"}]


def define_word(word: str) -> str:
    """
    Look up the dictionary meaning of an English word.

    Args:
        word: The word.

    Returns:
        str: Its definitions.
    """
    return f"{word}: (definition)"


def translate_text(text: str, target_language: str) -> str:
    """
    Translate a text into another language.

    Args:
        text: The text.
        target_language: The language to translate into, e.g. "French".

    Returns:
        str: The translation.
    """
    return f"[{target_language}] {text}"


def convert_units(value: float, from_unit: str, to_unit: str) -> float:
    """
    Convert a measurement between units: length, weight, volume, temperature.

    Args:
        value: The number.
        from_unit: Its unit, e.g. "miles".
        to_unit: The wanted unit, e.g. "km".

    Returns:
        float: The converted value.
    """
    return value


_OPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
        ast.Div: operator.truediv, ast.Pow: operator.pow, ast.USub: operator.neg}


def solve_math(expression: str) -> float:
    """
    Evaluate an arithmetic expression such as "(3 + 4) * 12 / 7".

    Args:
        expression: The expression.

    Returns:
        float: Its value.
    """
    def ev(node: ast.AST) -> float:
        if isinstance(node, ast.Constant) and isinstance(node.value, int | float):
            return node.value
        if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
            return _OPS[type(node.op)](ev(node.left), ev(node.right))
        if isinstance(node, ast.UnaryOp) and type(node.op) in _OPS:
            return _OPS[type(node.op)](ev(node.operand))
        raise ValueError("not arithmetic")

    return float(ev(ast.parse(expression, mode="eval").body))


def get_sports_scores(team: str) -> dict:
    """
    Get the latest match result and next fixture of a sports team.

    Args:
        team: The team's name.

    Returns:
        dict: {"last": str, "next": str}
    """
    return {"team": team, "last": "2-1 win", "next": "Saturday"}


def track_package(tracking_number: str) -> dict:
    """
    Tell where a parcel is and when the courier will deliver it.

    Args:
        tracking_number: The shipment's tracking number.

    Returns:
        dict: {"status": str, "eta": str}
    """
    return {"tracking_number": tracking_number, "status": "in transit", "eta": "tomorrow"}


def get_recipe(dish: str) -> dict:
    """
    Give the ingredients and cooking steps of a dish.

    Args:
        dish: The dish, e.g. "lasagna".

    Returns:
        dict: {"ingredients": list, "steps": list}
    """
    return {"dish": dish, "ingredients": [], "steps": []}


def lookup_wikipedia(title: str) -> str:
    """
    Return the introduction of the encyclopedia article on a subject.

    Args:
        title: The subject.

    Returns:
        str: The article's first paragraph.
    """
    return f"{title} is ..."
