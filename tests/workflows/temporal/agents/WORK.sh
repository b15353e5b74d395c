echo "work $item" >> runs.log
echo "<result>done $item</result>"
