"""Text tools (sample toolbox): a sync tool, an async tool, streaming generators, a failing tool."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator


def word_count(text: str) -> int:
    """
    Count the words of a text.

    Args:
        text (str): The text.

    Returns:
        int: The number of whitespace-separated words.

    Example:
        >>> word_count("to be or not to be")
        6
    """
    return len(text.split())


async def shout(text: str) -> str:
    """
    Upper-case a text, asynchronously.

    Args:
        text: The text.

    Returns:
        str: The text in capitals.

    Example:
        >>> shout("hello")
        'HELLO'
    """
    await asyncio.sleep(0)
    return text.upper()


async def spell(word: str) -> AsyncIterator[dict]:
    """
    Spell a word letter by letter, streaming each letter as it comes.

    Each letter is shown to the user at once; the code gets the list of letters.

    Args:
        word: The word to spell.

    Returns:
        list[str]: The letters.

    Example:
        >>> spell("abc")
        ['a', 'b', 'c']
    """
    for letter in word:
        await asyncio.sleep(0)
        yield {"data": {"stream_chunk": letter}}
    yield {"data": list(word), "instruction": "Tell the user how many letters the word has."}


def countdown(start: int) -> Iterator[dict]:
    """
    Count down to zero, streaming a progress line per step (a sync generator tool).

    Args:
        start: Where to start counting.

    Returns:
        str: "liftoff".

    Example:
        >>> countdown(3)
        'liftoff'
    """
    for n in range(start, 0, -1):
        yield {"data": {"stream_chunk": f"{n}..."}}
    return "liftoff"


def divide(a: float, b: float) -> float:
    """
    Divide a by b.

    Args:
        a: The dividend.
        b: The divisor; dividing by zero raises ZeroDivisionError.

    Returns:
        float: a / b.

    Example:
        >>> divide(1, 4)
        0.25
    """
    return a / b
