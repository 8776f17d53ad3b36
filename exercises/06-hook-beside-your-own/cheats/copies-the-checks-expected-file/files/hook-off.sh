#!/bin/sh
# Takes nothing out: the settings the check expects are already in its .check/want.
cp .check/want .claude/settings.json
