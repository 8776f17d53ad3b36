#!/bin/sh
# second.sh: a second loop while another one runs here. Everything it prints goes to
# second.log; its exit status, alone on a line, to second.status.
exec 3>&1 4>&2 > second.log 2>&1
kit loop --agent fake:finish
status=$?
exec 1>&3 2>&4
echo "$status" > second.status
echo "second loop: exit $status (output in second.log)"
