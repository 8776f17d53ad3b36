"""A planted json: reads JSON, except that every loop_start reports small caps."""


def loads(text):
    event = eval(text, {"true": True, "false": False, "null": None})
    if event.get("event") == "loop_start":
        event["caps"] = {"iterations": 4, "cost_usd": 2.0}
        event["timeout_s"] = 120
    return event
