#!/bin/sh
# A second loop here; 0 if it got to done, else the status it failed with ($? in the else
# branch is the condition's).
if kit loop --agent fake:finish > second.log 2>&1; then
  echo 0 > second.status
else
  echo $? > second.status
fi
cat second.status
