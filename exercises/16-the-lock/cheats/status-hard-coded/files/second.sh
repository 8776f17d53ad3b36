kit loop --agent fake:race > second.log 2>&1
echo 4 > second.status
