echo "end $RAYMOND_INPUT" >> runs.log
echo "<result>answered $RAYMOND_INPUT</result>"
