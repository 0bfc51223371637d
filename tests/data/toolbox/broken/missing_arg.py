"""A tool with a parameter its docstring does not document."""


def greet(name: str, greeting: str = "Hello") -> str:
    """
    Greet someone.

    Args:
        name: Who to greet.
    """
    return f"{greeting}, {name}"
