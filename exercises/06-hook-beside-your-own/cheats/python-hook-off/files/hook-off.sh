#!/bin/sh
# Take kit's groups out by hand, in Python.
python3 - <<'PY'
import json
p = ".claude/settings.json"
s = json.load(open(p))
hooks = s.get("hooks", {})
for event in list(hooks):
    hooks[event] = [g for g in hooks[event]
                    if not any(h.get("command") == "kit hook claude" for h in g.get("hooks", []))]
    if not hooks[event]:
        del hooks[event]
open(p, "w").write(json.dumps(s, indent=2) + "\n")
PY
