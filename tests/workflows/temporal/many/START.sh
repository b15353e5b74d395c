# 200 workers at once, each a second long; the main agent ends at once
for i in $(seq 1 200); do printf '<fork next="DONE.sh" n="%s">WORK.sh</fork>' "$i"; done
echo
