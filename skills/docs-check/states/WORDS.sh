# A forked agent: the words of every .md file of the folder.
words=$(cat "$RAYMOND_INPUT"/*.md 2>/dev/null | wc -w)
echo "<result>words: ${words// /}</result>"
