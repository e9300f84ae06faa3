"""SET commands in RESP for `redis-cli --pipe`: N keys of 15 bytes (key:00000000000 ...)
with 64-byte values. Usage: python3 bench/set_keys.py N > load.resp"""
import sys

n = int(sys.argv[1])
v = "x" * 64
w = sys.stdout.write
for i in range(n):
    w("*3\r\n$3\r\nSET\r\n$15\r\nkey:%011d\r\n$64\r\n%s\r\n" % (i, v))
