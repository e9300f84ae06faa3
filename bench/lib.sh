# Shared by the bench scripts (source it): a free loopback port, and waiting for a server.
# shellcheck shell=bash

# A TCP port free on 127.0.0.1 now.
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# wait_ready PORT [TRIES]: until the server on PORT answers PING (every 10 ms, TRIES times,
# default 3000: 30 s); fails after that.
wait_ready() {
  for _ in $(seq "${2:-3000}"); do
    [ "$(redis-cli -p "$1" ping 2>/dev/null)" = "PONG" ] && return 0
    sleep 0.01
  done
  return 1
}
