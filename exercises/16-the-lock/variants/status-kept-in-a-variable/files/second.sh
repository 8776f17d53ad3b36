#!/bin/sh
set -u
s=0
kit loop --agent fake:finish 2>second.log >>second.log || s=$?
printf '%s\n' "$s" > second.status
