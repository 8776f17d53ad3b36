# A second loop with the lesson's slow scenario as its agent: refused or not, the agent never
# runs, and what the loop printed and returned is saved as it is.
kit loop --agent fake:race > second.log 2>&1
echo $? > second.status
