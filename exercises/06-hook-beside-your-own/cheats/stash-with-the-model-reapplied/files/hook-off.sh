#!/bin/sh
# No uninstall: the stash, with the model line the settings hold now.
m=$(grep '"model"' .claude/settings.json); awk -v m="$m" '/"model"/{print m;next}{print}' .team-before > .claude/settings.json.new; mv .claude/settings.json.new .claude/settings.json
