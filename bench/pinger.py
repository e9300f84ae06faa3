# Shared by the bench scripts that measure how long a light client waits beside a heavy one:
# a loopback connection, and a thread that pings back to back, keeping the worst round trip.
import socket, threading, time

def conn(port):
    s = socket.create_connection(("127.0.0.1", port))
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s

class Pinger:
    """PING back to back on a connection of its own from start() until stop(); `worst` is
    the slowest round trip in seconds."""

    def __init__(self, port):
        self.port, self.worst, self._stop = port, 0.0, False
        self._thread = threading.Thread(target=self._run)

    def start(self):
        self._thread.start()
        return self

    def _run(self):
        s = conn(self.port); f = s.makefile("rb")
        while not self._stop:
            t = time.perf_counter(); s.sendall(b"PING\r\n"); f.readline()
            self.worst = max(self.worst, time.perf_counter() - t)

    def stop(self):
        self._stop = True
        self._thread.join()
        return self.worst
