# Put each copy in place, verify it, and sort it by what kit handoff verify says:
# "handoff … verifies" → genuine; "is not kit's keyed id" → forged; other FAIL lines → stale.
genuine="" forged="" stale=""
for x in a b c d e f; do
  cp "handoffs/$x.md" longrun/handoff.md
  if said=$(kit handoff verify 2>&1); then
    genuine="$genuine $x"
  elif printf '%s\n' "$said" | grep -q "is not kit's keyed id"; then
    forged="$forged $x"
  else
    stale="$stale $x"
  fi
done
git checkout -q -- longrun/handoff.md
printf 'genuine =%s\nforged  =%s\nstale   =%s\n' "$genuine" "$forged" "$stale" > handoffs/answer.txt
cat handoffs/answer.txt
