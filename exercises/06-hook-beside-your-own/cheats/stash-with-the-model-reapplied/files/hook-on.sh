#!/bin/sh
# Stash the team's settings, then install.
cp .claude/settings.json .team-before; kit hook install
