sleep 1
echo "<result>$n</result>"
