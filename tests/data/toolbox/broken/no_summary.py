"""A tool whose docstring has no summary line."""


def ping(host: str) -> bool:
    """
    Args:
        host: The host.
    """
    return True
