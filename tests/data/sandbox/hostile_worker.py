"""A hostile stand-in for a sandbox worker: a real process that abuses the bridge protocol.

Run as ``python hostile_worker.py MODE``. It speaks (or breaks) the parent's frame protocol on
its stdin/stdout the way escaped sandbox code could: garbage bytes, oversized frames, floods
of calls, deeply nested JSON, forked children, early exit.
"""

import json
import os
import struct
import sys
import time


def send(obj):
    body = json.dumps(obj).encode()
    os.write(1, struct.pack(">I", len(body)) + body)


def send_raw(data):
    view = memoryview(data)
    while view:
        view = view[os.write(1, view) :]


REPLIES = [0]  # replies read: a well-behaved worker's tool calls say so ("n")


def call(obj):
    send({**obj, "n": REPLIES[0]})


def recv():
    head = b""
    while len(head) < 4:
        chunk = os.read(0, 4 - len(head))
        if not chunk:
            raise SystemExit(0)
        head += chunk
    (size,) = struct.unpack(">I", head)
    body = b""
    while len(body) < size:
        body += os.read(0, size - len(body))
    message = json.loads(body)
    REPLIES[0] += message.get("t") == "reply"
    return message


mode = sys.argv[1]
send({"t": "ready"})
if mode == "never_reads":
    while True:
        send({"t": "ready"})
job = recv()
if mode == "garbage":
    send_raw(b"\xff\xfe GARBAGE \x00" * 1000)
elif mode == "huge_header":
    send_raw(struct.pack(">I", 2**31) + b"x" * (1 << 20))
elif mode == "endless_bytes":
    while True:
        send_raw(b"\x00\x00\x10\x00" + b"y" * 4096)
elif mode == "not_an_object":
    send_raw(struct.pack(">I", 2) + b"[]")
elif mode == "deep_json":
    body = b"[" * 200_000 + b"]" * 200_000
    send_raw(struct.pack(">I", len(body)) + body)
elif mode == "flood_calls":
    for _ in range(10_000):
        send({"t": "call", "name": "record", "args": [], "kwargs": {"x": 1}})
    time.sleep(30)
elif mode == "many_calls":
    while True:
        call({"t": "call", "name": "record", "args": [], "kwargs": {"x": 1}})
        recv()
elif mode == "bad_calls":
    answers = []
    for bad in (
        {"t": "call", "name": "no_such_tool", "args": [], "kwargs": {}},
        {"t": "call", "name": "__import__", "args": ["os"], "kwargs": {}},
        {"t": "call", "name": "record", "args": "not a list", "kwargs": {}},
        {"t": "call", "name": "record", "args": [], "kwargs": ["not", "a", "dict"]},
        {"t": "call", "name": "record", "args": [], "kwargs": {"x": "a" * 300_000}},
        {"t": "call", "name": "record", "args": [1, 2, 3], "kwargs": {}},
        {"t": "call", "name": "record", "args": [], "kwargs": {"nope": 1}},
        {"t": "call", "name": ["record"], "args": [], "kwargs": {}},
    ):
        call(bad)
        answers.append(recv())
    send({"t": "done", "status": "ok", "result_json": json.dumps(answers)})
elif mode == "defined_end_first":
    send({"t": "end", "name": "tool", "status": "ok"})
    time.sleep(30)
elif mode == "defined_double_begin":
    call({"t": "begin", "name": "tool", "args": {}})
    recv()
    call({"t": "begin", "name": "tool", "args": {}})
    time.sleep(30)
elif mode == "defined_bad_report":
    call({"t": "begin", "name": "tool", "args": {}})
    recv()
    send({"t": "end", "name": "tool", "status": "pwned", "instruction": 42})
    time.sleep(30)
elif mode == "defined_big_report":
    call({"t": "begin", "name": "tool", "args": {}})
    recv()
    send({"t": "end", "name": "tool", "status": "ok", "instruction": "i" * 300_000})
    time.sleep(30)
elif mode == "defined_bad_begins":
    answers = []
    for bad in (
        {"t": "begin", "name": "nope", "args": {}},
        {"t": "begin", "name": "tool", "args": ["not", "a", "dict"]},
        {"t": "begin", "name": "tool", "args": {"x": 1}, "error": "could not load"},
        {"t": "begin", "name": "tool", "args": {"x": "a" * 300_000}},
        {"t": "begin", "name": "tool", "args": {"x": "not an integer"}},
    ):
        call(bad)
        answers.append(recv())
    call({"t": "begin", "name": "tool", "args": {"x": 1}})
    answers.append(recv())
    send({"t": "done", "status": "ok", "result_json": json.dumps(answers)})
elif mode == "bad_result":
    send({"t": "done", "status": "ok", "result_json": "{not json"})
elif mode == "huge_result":
    send({"t": "done", "status": "ok", "result_json": json.dumps("z" * 2_000_000)})
elif mode == "odd_status":
    send({"t": "done", "status": "pwned", "stdout": 42, "error": "not a dict"})
elif mode == "exit_early":
    os._exit(3)
elif mode == "fork_and_hang":
    kids = []
    for _ in range(20):
        pid = os.fork()
        if pid == 0:
            while True:
                time.sleep(1)
        kids.append(pid)
    call({"t": "call", "name": "record", "args": [], "kwargs": {"x": kids}})
    recv()
    while True:
        time.sleep(1)
