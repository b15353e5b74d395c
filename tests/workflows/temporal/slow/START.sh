echo start >> step/log
echo "<goto>SLOW.sh</goto>"
