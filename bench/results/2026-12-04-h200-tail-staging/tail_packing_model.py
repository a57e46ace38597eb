#!/usr/bin/env python3
"""The tail of the causal symmetric-shift schedule, repacked: a model, not a
kernel (bench/NOTES.md section 37).

Symmetric-shift runs P = B*H*N/2 pairs of walks (s (N + 1) steps each, s =
BlockN / BlockM) in ceil(P / G) waves. Here the first floor(P / G) - 1
waves stay pairs and the rest become single walks: packed best-fit
decreasing into the G units with capacity T (raised until every walk fits),
each walk rotated over its Q tiles (greedy: the offset with the fewest
same-head, same-row, same-step collisions with the walks placed before it),
and every dQ row's ranks taken in the order of the walks' ideal visit times
(so no rank waits on a later visit: deadlock-free). simulate() then runs the
tail: compute 1 a step, an ordered reduce of r a hand-off, B staging buffers
per unit. Pure Python, < 1 s:  python3 tail_packing_model.py
"""
import collections
import heapq
import math


def pack(walks, units_n):
    """Best-fit decreasing with capacity T, T raised until all fit."""
    walks = sorted(walks, key=lambda w: (-w[0], w[1], w[2]))
    cap = math.ceil(sum(w[0] for w in walks) / units_n)
    while True:
        units = [[] for _ in range(units_n)]
        loads = [0] * units_n
        for w in walks:
            fits = [u for u in range(units_n) if loads[u] + w[0] <= cap]
            if not fits:
                break
            best = max(fits, key=lambda u: (loads[u], -u))
            units[best].append(w)
            loads[best] += w[0]
        else:
            return units, cap
        cap += 1


def simulate(unit_tasks, rank, r, buffers):
    """Event simulation; returns (makespan, every task reduced)."""
    n = len(unit_tasks)
    events, seq = [], [0]

    def push(t, kind, u):
        heapq.heappush(events, (t, seq[0], kind, u))
        seq[0] += 1

    nxt = [0] * n
    pending = [collections.deque() for _ in range(n)]
    reducing = [False] * n
    computing = [False] * n
    sem = collections.defaultdict(int)
    waiting = collections.defaultdict(list)
    finish = [0.0] * n

    def start_compute(u, t):
        if computing[u] or nxt[u] >= len(unit_tasks[u]) or len(pending[u]) >= buffers:
            return
        computing[u] = True
        push(t + 1.0, "compute", u)

    def try_reduce(u, t):
        if reducing[u] or not pending[u]:
            return
        task = pending[u][0]
        row = task[:2]
        if sem[row] == rank[(u, task)]:
            reducing[u] = True
            push(t + r, "reduce", u)
        else:
            waiting[(row, rank[(u, task)])].append(u)

    for u in range(n):
        start_compute(u, 0.0)
    while events:
        t, _, kind, u = heapq.heappop(events)
        if kind == "compute":
            computing[u] = False
            pending[u].append(unit_tasks[u][nxt[u]])
            nxt[u] += 1
        else:
            reducing[u] = False
            row = pending[u].popleft()[:2]
            sem[row] += 1
            finish[u] = t
            for v in waiting.pop((row, sem[row]), []):
                try_reduce(v, t)
        try_reduce(u, t)
        start_compute(u, t)
    return max(finish), sum(nxt) == sum(len(x) for x in unit_tasks)


def tail(heads, n_kv, s, units_n=132, r=0.75, buffers=2):
    """The last wave of pairs and the partial one, repacked as walks."""
    m = s * n_kv
    pairs = heads * n_kv // 2
    body_waves = pairs // units_n - 1
    walks = []
    for t in range(body_waves * units_n, pairs):
        hb, p = divmod(t, n_kv // 2)
        for j in (p, n_kv - 1 - p):
            walks.append((s * (n_kv - j), hb, j))
    units, cap = pack(walks, units_n)
    taken = collections.defaultdict(int)  # (head, row, step) -> visits
    unit_tasks = []
    for ws in units:
        t, tasks = 0, []
        for length, hb, _ in ws:
            first = m - length
            best = min(range(length), key=lambda o: sum(
                taken[(hb, first + (o + k) % length, t + k)] for k in range(length)))
            for k in range(length):
                row = first + (best + k) % length
                taken[(hb, row, t + k)] += 1
                tasks.append((hb, row, t + k))
            t += length
        unit_tasks.append(tasks)
    by_row = collections.defaultdict(list)
    for u, tasks in enumerate(unit_tasks):
        for task in tasks:
            by_row[task[:2]].append((task[2], u, task))
    rank = {}
    for visits in by_row.values():
        for i, (_, u, task) in enumerate(sorted(visits)):
            rank[(u, task)] = i
    makespan, ok = simulate(unit_tasks, rank, r, buffers)
    return dict(body=body_waves * s * (n_kv + 1), cap=cap, tail=makespan, ok=ok)


def main():
    cells = [("d = 64 causal s = 8192 (N = 64, 64 heads)", 64, 64, 1),
             ("d = 128 causal s = 8192 (N = 64, s = 2, 32 heads)", 32, 64, 2),
             ("d = 128 causal s = 16384 (N = 128, s = 2, 16 heads)", 16, 128, 2)]
    print("| cell | waves | steps now | body + packed tail (T) | tail simulated | steps | gain |")
    print("|---|---|---|---|---|---|---|")
    for name, heads, n_kv, s in cells:
        pairs = heads * n_kv // 2
        now = -(-pairs // 132) * s * (n_kv + 1)
        res = tail(heads, n_kv, s)
        assert res["ok"], "the tail's ranks deadlocked"
        total = res["body"] + res["tail"]
        print("| %s | %.2f | %d | %d + %d | %.2f | %.1f | %+.1f%% |" % (
            name, pairs / 132, now, res["body"], res["cap"], res["tail"], total,
            100 * (now / total - 1)))


if __name__ == "__main__":
    main()
