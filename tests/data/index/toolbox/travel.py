"""Travel tools (a toolbox of 40 tools for tool selection tests): weather, flights, hotels."""

from __future__ import annotations


def get_weather(city: str, date: str = "today") -> dict:
    """
    Get the weather conditions of a city on a day: temperature, sky, wind and rain chance.

    Args:
        city: The city, e.g. "Paris".
        date: The day, "today" or an ISO date.

    Returns:
        dict: {"city": str, "temperature_c": float, "sky": str, "rain_chance": float}
    """
    return {"city": city, "date": date, "temperature_c": 21.0, "sky": "clear", "rain_chance": 0.1}


def get_forecast(city: str, days: int = 7) -> list:
    """
    Get a multi-day weather forecast for a city.

    Args:
        city: The city.
        days: How many days ahead, 1 to 14.

    Returns:
        list: One {"date", "high_c", "low_c", "sky"} per day.
    """
    return [{"date": f"day+{i}", "high_c": 20.0, "low_c": 12.0, "sky": "cloudy"}
            for i in range(days)]


def check_air_quality(city: str) -> dict:
    """
    Get the air pollution index of a city (AQI, PM2.5, ozone) with a health advice.

    Args:
        city: The city.

    Returns:
        dict: {"aqi": int, "pm25": float, "advice": str}
    """
    return {"city": city, "aqi": 42, "pm25": 8.0, "advice": "good"}


def search_flights(origin: str, destination: str, date: str) -> list:
    """
    Search airline flights between two airports on a date, cheapest first.

    Args:
        origin: Departure airport or city.
        destination: Arrival airport or city.
        date: Departure date, ISO format.

    Returns:
        list: Flights with carrier, departure time, duration and fare.
    """
    return [{"carrier": "XA", "from": origin, "to": destination, "date": date, "fare": 120.0}]


def book_hotel(city: str, check_in: str, nights: int = 1) -> dict:
    """
    Reserve a hotel room in a city for a number of nights.

    Args:
        city: Where to stay.
        check_in: Arrival date, ISO format.
        nights: How many nights.

    Returns:
        dict: {"confirmation": str, "hotel": str, "total": float}
    """
    return {"confirmation": "H123", "hotel": f"{city} Central", "nights": nights, "total": 95.0}


def get_local_time(city: str) -> str:
    """
    Tell the current local time and time zone of a city.

    Args:
        city: The city.

    Returns:
        str: The local time, e.g. "14:05 CET".
    """
    return f"14:05 in {city}"


def find_restaurants(city: str, cuisine: str = "") -> list:
    """
    Find places to eat nearby, filtered by cuisine, with ratings and price level.

    Args:
        city: The city or neighbourhood.
        cuisine: Optional kind of food, e.g. "sushi".

    Returns:
        list: Restaurants with name, rating and price level.
    """
    return [{"name": "Chez Nous", "city": city, "cuisine": cuisine or "any", "rating": 4.5}]


def get_directions(origin: str, destination: str, mode: str = "driving") -> dict:
    """
    Give a route between two places by car, transit, bike or on foot, with travel time.

    Args:
        origin: Starting address.
        destination: Target address.
        mode: "driving", "transit", "cycling" or "walking".

    Returns:
        dict: {"minutes": int, "steps": list}
    """
    return {"from": origin, "to": destination, "mode": mode, "minutes": 25, "steps": []}
