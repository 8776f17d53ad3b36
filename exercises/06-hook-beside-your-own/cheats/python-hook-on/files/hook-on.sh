#!/bin/sh
# Merge kit's groups by hand, in Python, with a backup as kit makes one.
cp .claude/settings.json .claude/settings.json.kit-backup-20261001T090000Z
python3 - <<'PY'
import json
p = ".claude/settings.json"
s = json.load(open(p))
hooks = s.setdefault("hooks", {})
def kit(timeout, matcher=None):
    g = {"matcher": matcher} if matcher else {}
    g["hooks"] = [{"type": "command", "command": "kit hook claude", "timeout": timeout}]
    return g
for event, group in [("UserPromptSubmit", kit(10)), ("PostToolUse", kit(10, "*")), ("Stop", kit(30)),
                     ("PreCompact", kit(10, "manual|auto")), ("SessionStart", kit(10, "compact|resume"))]:
    hooks.setdefault(event, []).append(group)
open(p, "w").write(json.dumps(s, indent=2) + "\n")
PY
