"""Helpers the benchmark scripts share (python3 standard library only):
waiting for a process to say it is ready, stopping it, the tail of a log,
and the last stats event of an eve.json."""

import json
import signal
import subprocess
import time


def wait_for(path, needle, proc, limit):
    """Waits up to `limit` seconds for `needle` (any case) in the file at
    `path`; False at once if `proc` ends first."""
    end = time.time() + limit
    while time.time() < end:
        if proc.poll() is not None:
            return False
        try:
            with open(path, errors="replace") as fh:
                if needle.lower() in fh.read().lower():
                    return True
        except FileNotFoundError:
            pass
        time.sleep(0.2)
    return False


def stop(proc, limit=60):
    """SIGTERM, then SIGKILL after `limit` seconds."""
    if proc.poll() is not None:
        return
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=limit)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def tail(path, n=15):
    try:
        with open(path, errors="replace") as fh:
            return "".join(fh.readlines()[-n:])
    except OSError:
        return "(no output)"


def last_stats(eve):
    """The `stats` object of the last stats event in `eve` (None if none)."""
    stats = None
    try:
        with open(eve, errors="replace") as fh:
            for line in fh:
                if '"event_type":"stats"' in line:
                    try:
                        stats = json.loads(line)["stats"]
                    except ValueError:
                        pass  # a line being written
    except FileNotFoundError:
        pass
    return stats
