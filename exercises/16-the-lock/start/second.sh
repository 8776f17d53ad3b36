# second.sh: start a second `kit loop --agent fake:finish` while another loop runs here;
# its output (stdout and stderr) in second.log, its exit status in second.status.
