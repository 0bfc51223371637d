"""Images the tests show in a kernel and send to a model."""

from __future__ import annotations

import base64

from tests.paths import TEST_DATA

PNG = base64.b64encode((TEST_DATA / "code" / "pixel.png").read_bytes()).decode()
"""A one-pixel PNG (tests/data/code/pixel.png), base64 as a kernel sends it."""
