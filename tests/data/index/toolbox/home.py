"""智能家居工具（工具选择测试用的 40 个工具之一）：温度、灯光、音乐、门锁。"""

from __future__ import annotations


def set_thermostat(temperature: float) -> str:
    """
    设置家里空调或地暖的目标温度。

    Args:
        temperature: 目标温度（摄氏度）。

    Returns:
        str: 设置结果。
    """
    return f"已设为 {temperature}°C"


def turn_on_lights(room: str, brightness: int = 100) -> str:
    """
    打开某个房间的电灯并调节亮度。

    Args:
        room: 房间名称，例如“客厅”。
        brightness: 亮度百分比。

    Returns:
        str: 操作结果。
    """
    return f"{room}的灯已打开（{brightness}%）"


def play_music(query: str) -> str:
    """
    在音箱上播放歌曲、歌手或歌单。

    Args:
        query: 歌名、歌手或歌单名。

    Returns:
        str: 正在播放的内容。
    """
    return f"正在播放：{query}"


def lock_door(door: str = "front") -> str:
    """
    远程锁上家里的门锁。

    Args:
        door: 哪一扇门。

    Returns:
        str: 门锁状态。
    """
    return f"{door} 已上锁"


def start_vacuum(rooms: str = "all") -> str:
    """
    让扫地机器人开始打扫地面。

    Args:
        rooms: 要打扫的房间，默认全部。

    Returns:
        str: 清扫任务状态。
    """
    return f"开始清扫：{rooms}"


def get_energy_usage(period: str = "month") -> dict:
    """
    查询家庭用电量和电费。

    Args:
        period: 统计周期：day、week 或 month。

    Returns:
        dict: {"kwh": float, "cost": float}
    """
    return {"period": period, "kwh": 230.0, "cost": 120.5}
