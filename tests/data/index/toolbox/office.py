"""Office tools (a toolbox of 40 tools for tool selection tests): mail, calendar, documents."""

from __future__ import annotations


def send_email(to: str, subject: str, body: str) -> str:
    """
    Send an email message to a recipient.

    Args:
        to: Recipient address.
        subject: Subject line.
        body: Message text.

    Returns:
        str: The message id.
    """
    return f"<{abs(hash((to, subject))) % 10**6}@mail>"


def read_inbox(folder: str = "inbox", limit: int = 10) -> list:
    """
    List the latest received emails of a mailbox folder with sender and subject.

    Args:
        folder: The mailbox folder.
        limit: How many messages.

    Returns:
        list: Messages with sender, subject and date.
    """
    return [{"from": "boss@example.org", "subject": "Q3 plan", "folder": folder}][:limit]


def create_calendar_event(title: str, start: str, duration_minutes: int = 30,
                          attendees: str = "") -> dict:
    """
    Add an appointment to the calendar and invite people to it.

    Args:
        title: What the event is.
        start: Start date and time, ISO format.
        duration_minutes: Length in minutes.
        attendees: Comma-separated email addresses to invite.

    Returns:
        dict: {"event_id": str}
    """
    return {"event_id": "E1", "title": title, "start": start}


def list_calendar_events(day: str = "today") -> list:
    """
    Show the agenda of a day: meetings and appointments already planned.

    Args:
        day: "today", "tomorrow" or an ISO date.

    Returns:
        list: Events with title, start and end.
    """
    return [{"title": "Standup", "start": "09:30", "day": day}]


def book_meeting_room(room: str, start: str, duration_minutes: int = 60) -> dict:
    """
    Reserve a conference room of the office for a time slot.

    Args:
        room: Room name or size, e.g. "large".
        start: Start date and time.
        duration_minutes: Length in minutes.

    Returns:
        dict: {"room": str, "booked": bool}
    """
    return {"room": room, "start": start, "booked": True}


def set_reminder(text: str, when: str) -> dict:
    """
    Remind the user of something at a given time with a notification.

    Args:
        text: What to remind.
        when: When, e.g. "in 2 hours" or an ISO time.

    Returns:
        dict: {"reminder_id": str}
    """
    return {"reminder_id": "R1", "text": text, "when": when}


def create_document(title: str, content: str) -> str:
    """
    Create a new text document in the shared drive.

    Args:
        title: Document title.
        content: Its text.

    Returns:
        str: The document's link.
    """
    return f"https://drive.example/{title.replace(' ', '-')}"


def search_documents(query: str) -> list:
    """
    Find files in the shared drive whose name or content matches a query.

    Args:
        query: Words to look for.

    Returns:
        list: Matching files with title and link.
    """
    return [{"title": f"Notes about {query}", "link": "https://drive.example/notes"}]


def summarize_pdf(path: str) -> str:
    """
    Read a PDF file and return a short summary of its content.

    Args:
        path: The PDF's path or link.

    Returns:
        str: A summary of a few sentences.
    """
    return f"A summary of {path}."
