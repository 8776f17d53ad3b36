#!/bin/sh
# The installed settings and the team's, made once in a scratch copy and kept in the lab.
cp .forged/installed.json .claude/settings.json
cp .forged/team.json .claude/settings.json.kit-backup-20261001T090000Z
