"""Masking by value: a known secret is masked in its exact form and in the forms it takes in
a header, a URL or a dump (base64, hex, URL encoding), also when a stream splits it, in one
scan linear in the text's size."""

from __future__ import annotations

import base64
import io
import time
from urllib.parse import quote

import pytest

from jupyter_percent_agent import format as fmt
from jupyter_percent_agent import masking

SECRET = "tok-9f8e7d6c5b4a3210>>? x"  # its base64 holds "+" and "=", its URL encoding "%3E"
RAW = SECRET.encode()
FORMS = {
    "exact": SECRET,
    "base64": base64.b64encode(RAW).decode(),
    "base64, no padding": base64.b64encode(RAW).decode().rstrip("="),
    "URL-safe base64": base64.urlsafe_b64encode(RAW).decode(),
    "URL-safe base64, no padding": base64.urlsafe_b64encode(RAW).decode().rstrip("="),
    "hex": RAW.hex(),
    "HEX": RAW.hex().upper(),
    "URL encoding": quote(SECRET, safe=""),
}


@pytest.fixture(autouse=True)
def secret(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MY_SERVICE_TOKEN", SECRET)


def test_the_forms_under_test_are_all_different() -> None:
    assert len(set(FORMS.values())) == len(FORMS)
    assert "+" in FORMS["base64"] and "-" in FORMS["URL-safe base64"]
    assert FORMS["base64"].endswith("=")


@pytest.mark.parametrize("form", FORMS)
def test_every_form_of_a_secret_is_masked(form: str) -> None:
    text = f"Authorization: Basic {FORMS[form]}\n"
    assert masking.mask(text) == "Authorization: Basic [masked MY_SERVICE_TOKEN]\n"


@pytest.mark.parametrize("form", FORMS)
def test_every_form_is_masked_in_a_written_file_and_in_results(form: str) -> None:
    nb = fmt.reads(f"# %%[^a]\n[^a]: [markdown]\n\nheader: {FORMS[form]}\n")
    text = fmt.writes(nb, path="talk.msg.md")
    assert "[masked MY_SERVICE_TOKEN]" in text and FORMS[form] not in text
    result = masking.mask_data({"headers": [f"Basic {FORMS[form]}"]})
    assert result == {"headers": ["Basic [masked MY_SERVICE_TOKEN]"]}


def test_a_short_secret_is_masked_as_it_is_only(monkeypatch: pytest.MonkeyPatch) -> None:
    short = "pw-12345678"  # 11 characters: its hex or base64 would be ordinary-looking text
    monkeypatch.setenv("SHORT_PASSWORD", short)
    encoded = [base64.b64encode(short.encode()).decode(), short.encode().hex()]
    text = " ".join([short, *encoded])
    assert masking.mask(text) == " ".join(["[masked SHORT_PASSWORD]", *encoded])


@pytest.mark.parametrize("form", FORMS)
def test_a_form_split_across_stream_chunks_is_masked_and_never_shown_in_part(form: str) -> None:
    value = FORMS[form]
    text = f"Send Basic {value} now."
    for cut in range(len("Send Basic ") + 1, len("Send Basic ") + len(value)):
        out = io.StringIO()
        stream = masking.MaskedStream(out)
        stream.write(text[:cut])
        assert out.getvalue() == "Send Basic ", cut  # not one character of the form
        stream.write(text[cut:])
        stream.release()
        assert out.getvalue() == "Send Basic [masked MY_SERVICE_TOKEN] now.", cut


def test_masking_stays_linear_in_the_texts_size() -> None:
    """Twice the text, at most three times the time, on text full of near misses (every
    form's start, again and again), the worst case for the one scan."""
    near = "".join(v[:-1] + " " for v in FORMS.values())
    mask = masking.masker()

    def seconds(repeat: int) -> float:
        text = near * repeat
        best = float("inf")
        for _ in range(3):
            start = time.perf_counter()
            masked = mask(text + SECRET)
            best = min(best, time.perf_counter() - start)
        assert masked.endswith("[masked MY_SERVICE_TOKEN]")
        return best

    small, large = seconds(2_000), seconds(4_000)
    assert large <= 3 * small, (small, large)
