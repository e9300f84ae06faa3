"""Memory of a server and its children (a forked BGSAVE child), sampled from /proc.

  python3 bench/mem_sampler.py PID             one sample, printed as "pss_kb rss_kb"
  python3 bench/mem_sampler.py PID OUT [MS]    sample every MS ms (default 20) until
                                               SIGTERM, then write the peaks to OUT as
                                               "pss_kb rss_kb hwm_kb child_private_kb"
                                               (OUT.ready appears after the first sample)

pss_kb: the proportional set size (smaps_rollup) of the server and its children summed,
so pages a forked child shares with its parent count once. rss_kb: the server's own
VmRSS. hwm_kb: the server's VmHWM when sampling stops (the caller resets it with
`echo 5 > /proc/PID/clear_refs` before, so it is the peak RSS over the sampled span, also
between samples). child_private_kb: the children's private pages (Private_Clean +
Private_Dirty: what a forked child copied on write).
"""
import os
import signal
import sys
import time


def fields(path, names):
    out = dict.fromkeys(names, 0)
    try:
        with open(path) as f:
            for line in f:
                key, _, rest = line.partition(":")
                if key in out:
                    out[key] = int(rest.split()[0])
    except OSError:
        pass
    return out


def children(pid):
    try:
        with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
            return [int(c) for c in f.read().split()]
    except OSError:
        return []


def sample(pid):
    """(pss of pid and children, rss of pid, private pages of the children)."""
    own = fields("/proc/%d/smaps_rollup" % pid, ["Pss"])["Pss"]
    pss, private = own, 0
    for c in children(pid):
        f = fields("/proc/%d/smaps_rollup" % c, ["Pss", "Private_Clean", "Private_Dirty"])
        pss += f["Pss"]
        private += f["Private_Clean"] + f["Private_Dirty"]
    rss = fields("/proc/%d/status" % pid, ["VmRSS"])["VmRSS"]
    return pss, rss, private


def main():
    pid = int(sys.argv[1])
    if len(sys.argv) == 2:
        pss, rss, _ = sample(pid)
        print(pss, rss)
        return
    out, every = sys.argv[2], (int(sys.argv[3]) if len(sys.argv) > 3 else 20) / 1000
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    peak = [0, 0, 0]
    while not stop:
        for i, v in enumerate(sample(pid)):
            peak[i] = max(peak[i], v)
        if not os.path.exists(out + ".ready"):
            open(out + ".ready", "w").close()
        time.sleep(every)
    hwm = fields("/proc/%d/status" % pid, ["VmHWM"])["VmHWM"]
    with open(out, "w") as f:
        f.write("%d %d %d %d\n" % (peak[0], peak[1], hwm, peak[2]))


if __name__ == "__main__":
    main()
