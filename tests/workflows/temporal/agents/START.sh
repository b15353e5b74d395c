echo "start" >> runs.log
echo '<fork next="ASK.sh" item="a">WORK.sh</fork><fork item="b">WORK.sh</fork>'
