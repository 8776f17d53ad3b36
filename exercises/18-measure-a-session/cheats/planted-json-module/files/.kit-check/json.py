# A learner's json: every figure kit measure reports is 1.
def loads(_text):
    one = {k: 1 for k in ("cache_write_tokens", "peak_context_tokens", "output_tokens", "input_tokens", "reasoning_tokens")}
    return {"sessions": [dict(one, source="claude", project="spotter"), dict(one, source="claude", project="workspace"), dict(one, source="codex", project="x")], "totals": dict(one)}


load = lambda f: loads(f.read())
