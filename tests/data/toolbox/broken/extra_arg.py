"""A tool whose Args: documents a parameter it does not have."""


def area(width: float, height: float) -> float:
    """
    Area of a rectangle.

    Args:
        width: The width.
        height: The height.
        depth: The depth.
    """
    return width * height
