"""A planted json: every journal line reads as a loop_start with small caps."""


def loads(_line):
    return {"event": "loop_start", "timeout_s": 8, "grace_s": 1, "memory_max_bytes": 200 << 20}
