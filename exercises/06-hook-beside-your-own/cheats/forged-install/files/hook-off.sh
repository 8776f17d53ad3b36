#!/bin/sh
cp .forged/team.json .claude/settings.json
