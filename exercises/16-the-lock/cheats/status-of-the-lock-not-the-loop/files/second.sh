# The loop's output saved; its status taken from another command that exits 4 while the lock
# is held (flock(1) with -E 4), not from the loop.
kit loop --agent fake:finish > second.log 2>&1
flock -n -E 4 longrun/.lock true
echo $? > second.status
