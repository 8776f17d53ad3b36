#!/bin/sh
# The command that merges kit's hook into this repository's .claude/settings.json, beside the
# team's own entries. The check runs this script on a settings file of its own.
kit hook install
