"""Money tools (a toolbox of 40 tools for tool selection tests): currencies, markets, loans."""

from __future__ import annotations


def convert_currency(amount: float, from_currency: str, to_currency: str) -> dict:
    """
    Convert an amount of money from one currency to another at the current exchange rate.

    Args:
        amount: How much money.
        from_currency: ISO code of the money you have, e.g. "EUR".
        to_currency: ISO code of the money you want, e.g. "JPY".

    Returns:
        dict: {"amount": float, "rate": float}
    """
    rate = 160.0
    return {"amount": amount * rate, "rate": rate, "from": from_currency, "to": to_currency}


def get_exchange_rate_history(base: str, quote: str, days: int = 30) -> list:
    """
    Get past daily exchange rates of a currency pair, for charts and trends.

    Args:
        base: Base currency code.
        quote: Quote currency code.
        days: How many past days.

    Returns:
        list: One {"date", "rate"} per day.
    """
    return [{"date": f"day-{i}", "rate": 1.08} for i in range(days)]


def get_stock_quote(symbol: str) -> dict:
    """
    Get the latest share price of a listed company by ticker symbol.

    Args:
        symbol: The ticker, e.g. "AAPL".

    Returns:
        dict: {"price": float, "change_percent": float}
    """
    return {"symbol": symbol, "price": 190.0, "change_percent": 0.4}


def get_crypto_price(coin: str) -> dict:
    """
    Get the current market price of a cryptocurrency such as bitcoin or ether.

    Args:
        coin: The coin's name or symbol.

    Returns:
        dict: {"usd": float}
    """
    return {"coin": coin, "usd": 60000.0}


def calculate_loan_payment(principal: float, annual_rate: float, years: int) -> float:
    """
    Compute the monthly installment of a mortgage or loan.

    Args:
        principal: The amount borrowed.
        annual_rate: Yearly interest rate in percent.
        years: Duration of the loan.

    Returns:
        float: The monthly payment.
    """
    r = annual_rate / 1200
    n = years * 12
    return principal * r / (1 - (1 + r) ** -n) if r else principal / n


def calculate_tax(income: float, region: str) -> dict:
    """
    Estimate the income tax owed for a yearly salary in a country or state.

    Args:
        income: Gross yearly income.
        region: Country or state code.

    Returns:
        dict: {"tax": float, "net": float}
    """
    return {"tax": income * 0.3, "net": income * 0.7, "region": region}


def split_bill(total: float, people: int, tip_percent: float = 0.0) -> float:
    """
    Divide a restaurant check between several people, tip included.

    Args:
        total: The check before tip.
        people: How many share it.
        tip_percent: Tip in percent.

    Returns:
        float: What each person pays.
    """
    return round(total * (1 + tip_percent / 100) / people, 2)
