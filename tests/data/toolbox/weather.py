"""Weather tools (sample toolbox for tests and docs): deterministic, no network."""

from __future__ import annotations

from math import floor  # imported functions are not tools

_TEMPERATURES = {"paris": 18.5, "oslo": 4.0, "cairo": 31.0, "tokyo": 22.25}


def _lookup(city: str) -> float:
    """Private helpers (leading underscore) are not tools."""
    try:
        return _TEMPERATURES[city.strip().lower()]
    except KeyError:
        raise ValueError(f"unknown city: {city}") from None


def get_weather(city: str, unit: str = "celsius") -> dict:
    """
    Get the current weather of a city.

    Args:
        city: Name of the city, e.g. "Paris".
        unit: "celsius" or "fahrenheit". Defaults to "celsius".

    Returns:
        dict: The weather, with fields:
            - city: str - the city as given
            - temperature: float - the temperature in the requested unit
            - unit: str - the unit

    Example:
        >>> get_weather("Paris")
        {'city': 'Paris', 'temperature': 18.5, 'unit': 'celsius'}
    """
    celsius = _lookup(city)
    value = celsius if unit == "celsius" else celsius * 9 / 5 + 32
    return {"city": city, "temperature": value, "unit": unit}


def forecast(city: str, days: int = 3) -> dict:
    """
    Forecast the daily temperature of a city for the next days.

    Args:
        city: Name of the city.
        days: How many days, 1 to 7.

    Returns:
        dict: ``data`` is a list of daily temperatures in celsius; the tool also tells the model
            how to present them.

    Example:
        >>> forecast("Oslo", days=2)
        [4, 5]
    """
    if not 1 <= days <= 7:
        raise ValueError("days must be between 1 and 7")
    base = _lookup(city)
    return {
        "data": [floor(base) + i for i in range(days)],
        "instruction": "Present the forecast as a Markdown table with one row per day.",
    }
