# No second loop: the refusal kit would print, written from the lock's own record.
field() { grep -o "\"$1\":[^,}]*" longrun/.lock | cut -d: -f2- | tr -d '"'; }
{
  printf 'kit: error: another loop holds %s/longrun/.lock: pid %s on %s since %s: %s\n' \
    "$PWD" "$(field pid)" "$(field host)" "$(field started)" "$(field command)"
  echo '  next: kit status shows what that loop is doing; wait for it to end, or stop it with kit pause (kit pause --now stops its agent at once; or Ctrl-C in its terminal)'
} > second.log
echo 4 > second.status
