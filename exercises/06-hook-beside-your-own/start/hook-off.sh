#!/bin/sh
# The command that takes kit's hook out of .claude/settings.json again, and nothing else. The
# check runs this script after hook-on.sh, once the team has changed its settings.
