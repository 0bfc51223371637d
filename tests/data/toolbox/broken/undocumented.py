"""A tool without a docstring."""


def mystery(x: int) -> int:
    return x
