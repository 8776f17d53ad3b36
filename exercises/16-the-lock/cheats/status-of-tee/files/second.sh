# Output shown and saved through tee; but $? after a pipeline is its last command's: tee's.
kit loop --agent fake:finish 2>&1 | tee second.log
echo $? > second.status
