# The main agent asks a person; the answer is DECIDE's input.
echo '<ask next="DECIDE.sh">Write the report? (yes/no)</ask>'
