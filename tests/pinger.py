"""Another client that PINGs every 10 ms until stopped, counting PONGs and keeping any
other reply: the big-value tests use it to show other clients are served meanwhile."""
import threading
import time

from resp_client import RawConn


class Pinger(threading.Thread):
    def __init__(self, port):
        super().__init__(daemon=True)
        self.conn = RawConn(port, timeout=120)
        self.stop = threading.Event()
        self.pongs = 0
        self.bad = []

    def run(self):
        try:
            while not self.stop.is_set():
                reply = self.conn.call("PING")
                if reply == b"+PONG\r\n":
                    self.pongs += 1
                else:
                    self.bad.append(reply)
                self.stop.wait(0.01)
        finally:
            self.conn.close()

    def stop_after_pong_since(self, before):
        """Wait (bounded, no duration asserted) for a PONG beyond `before`, then stop."""
        for _ in range(3000):
            if self.pongs > before:
                break
            time.sleep(0.01)
        self.stop.set()
        self.join(timeout=60)
