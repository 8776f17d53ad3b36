cp .check/saved.log second.log
echo 4 > second.status
cp .check/saved.log .check/rec/loop.err 2>/dev/null
