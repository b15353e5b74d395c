# The main agent: check the folder, start one agent per count, and go on to ASK while they work.
folder="${RAYMOND_INPUT:-docs}"
if [ ! -d "$folder" ]; then
  echo "no folder '$folder' here" >&2
  exit 1
fi
echo "<fork next=\"ASK.sh\" input=\"$folder\">WORDS.sh</fork>"
echo "<fork input=\"$folder\">TODOS.sh</fork>"
