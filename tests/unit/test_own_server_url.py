"""The user's own server as stored in their config (``trust.server``): which URLs may be
stored, when a key over plain http is warned about, and which key ``route_for`` gives it."""

from __future__ import annotations

import pytest

from jupyter_percent_agent import trust
from jupyter_percent_agent.trust.server import plain_http_warning

KEY = "sk-my-server-0123456789"


@pytest.mark.parametrize(("url", "has_key", "warned"), [
    ("http://gpu-box:8000/v1", True, True),
    ("http://192.168.1.20:11434/v1", True, True),
    ("http://gpu-box:8000/v1", False, False),  # no key: nothing to read on the way
    ("https://gpu-box/v1", True, False),
    ("http://localhost:11434/v1", True, False),
    ("http://127.0.0.5:8000/v1", True, False),
    ("http://[::1]:8000/v1", True, False),
])
def test_a_key_over_plain_http_to_another_machine_is_warned_about(
        url: str, has_key: bool, warned: bool) -> None:
    assert (plain_http_warning(url, has_key) is not None) is warned


def test_a_stored_url_is_trimmed_and_its_key_goes_with_exactly_it(
        no_keys, user_config_dir) -> None:
    url, warning = trust.set_server(" http://127.0.0.1:8000/v1/ ", KEY)
    assert url == "http://127.0.0.1:8000/v1" and warning is None
    mine = trust.route_for(None, folder=None, agent="default")
    assert (mine.api_base, mine.api_key, mine.source) == (url, KEY, "config")
    same = trust.route_for(url + "/", folder=None, agent="a")  # a file naming it: the same URL
    assert same.api_key == KEY
    other = trust.route_for(None, folder=None, agent="default",
                            env={"PERCENT_AGENT_API_BASE": "http://127.0.0.1:8001/v1"})
    assert (other.api_base, other.api_key) == ("http://127.0.0.1:8001/v1", trust.NO_KEY)
    with pytest.raises(trust.TrustError):  # another port: a file may not choose it
        trust.route_for("http://127.0.0.1:8001/v1", folder=None, agent="a")


def test_the_stored_key_is_masked_like_a_provider_key(no_keys, user_config_dir) -> None:
    from jupyter_percent_agent import masking

    trust.set_server("http://127.0.0.1:8000/v1", KEY)
    assert KEY not in masking.mask(f"the server said: bad key {KEY}")
