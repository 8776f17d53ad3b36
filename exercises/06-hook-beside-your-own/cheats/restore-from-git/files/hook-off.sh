#!/bin/sh
# git still has the team's settings: take them back
git checkout -- .claude/settings.json
