"""Camera tools (sample toolbox): a Jarvis-style async tool that shows a video at once."""

from __future__ import annotations

import json


async def get_camera_live_url(camera_id: str) -> dict:
    """
    Get the live stream address of a site camera and show the video to the user.

    Args:
        camera_id: The camera's identifier, e.g. "gate-1".

    Returns:
        dict: {"url": str} the stream address.

    Example:
        >>> get_camera_live_url("gate-1")
        {'url': 'rtsp://cameras.example/gate-1'}
    """
    url = f"rtsp://cameras.example/{camera_id}"
    tag = (
        "<video>\n"
        + json.dumps({"type": "监控视频", "url": url}, ensure_ascii=False)
        + "\n</video>"
    )
    return {
        "data": {"stream_chunk": tag, "url": url},
        "instruction": "The video is already shown to the user; do not repeat the address.",
    }
