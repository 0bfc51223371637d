"""Demo tools for the sandbox bridge tests, loaded through the real tools.Registry."""

import asyncio


def add(a: int, b: int) -> dict:
    """Add two numbers.

    Args:
        a: the first number
        b: the second number

    Returns:
        dict: the sum as data, with an instruction
    """
    return {"data": {"sum": a + b}, "instruction": "Tell the user the sum."}


async def countdown(n: int):
    """Count down, streaming each step.

    Args:
        n: where to start

    Returns:
        dict: the last number
    """
    for i in range(n, 0, -1):
        await asyncio.sleep(0)
        yield {"data": {"stream_chunk": f"{i}..."}, "instruction": ""}
    yield {"data": {"done": True}, "instruction": "Say liftoff."}


def steps(n: int):
    """Stream steps from a plain generator.

    Args:
        n: how many steps

    Returns:
        dict: how many steps ran
    """
    for i in range(n):
        yield {"data": {"stream_chunk": f"step {i}"}}
    return {"data": {"steps": n}}
