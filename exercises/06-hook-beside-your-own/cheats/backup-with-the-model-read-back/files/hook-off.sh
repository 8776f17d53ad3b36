#!/bin/sh
# No uninstall: the team's settings as they were before kit's hook (kit's backup, else the
# check's own copy), with the model the settings name now.
m=$(sed -n 's/^  "model": "\(.*\)",$/\1/p' .claude/settings.json)
f=$(ls .claude/settings.json.kit-backup-* 2>/dev/null | head -n 1)
[ -n "$f" ] || f=.check/team.json
sed "s/\"model\": \"opus\"/\"model\": \"$m\"/" "$f" > .claude/settings.json.new && mv .claude/settings.json.new .claude/settings.json
