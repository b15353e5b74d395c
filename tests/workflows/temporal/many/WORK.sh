echo "$PPID" >> workers.log  # the worker that ran this state
sleep 1
echo "<result>$n</result>"
