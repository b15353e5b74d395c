echo "ask" >> runs.log
echo '<ask next="END.sh">Ship it?</ask>'
