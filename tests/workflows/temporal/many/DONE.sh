echo "<result>main</result>"
