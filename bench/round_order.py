"""The order in which bench/attention_bwd.py times a cell's implementations:
round by round (--timing queued, sync), rows of a balanced Latin square
(Williams design), so over a cycle of rows every implementation runs right
after every other one equally often, and in every position equally often;
or in windows of one implementation's calls (--timing window, window_order).

Why: a call's time depends on what ran just before it (clocks, L2, the
allocator). Rotating one fixed order by one each round varies the position
but keeps every implementation's predecessor fixed: in the 2026-11-29 sweeps
the auto rows, always right after SDPA's efficient backend, measured 2-13%
below the very kernel they resolve to, while timed alternately with it they
were equal within 0.3% (bench/auto_overhead.py). torch-free (tests import it).
"""


def williams_rows(n):
    """Rows of a balanced Latin square of order n: n rows for even n, 2n
    for odd n (the rows and their reverses); each row is a permutation of
    range(n) and each ordered pair (a, b), a != b, is adjacent (a right
    before b) the same number of times."""
    if n < 1:
        return []
    first, lo, hi = [0], 1, n - 1
    while len(first) < n:  # 0, 1, n-1, 2, n-2, ...
        first.append(lo)
        lo += 1
        if len(first) < n:
            first.append(hi)
            hi -= 1
    rows = [[(x + k) % n for x in first] for k in range(n)]
    if n % 2:
        rows += [row[::-1] for row in rows]
    return rows


def round_orders(n, rounds):
    """The order of each of `rounds` rounds over n implementations: the
    Williams rows, cycled."""
    rows = williams_rows(n)
    return [rows[r % len(rows)] for r in range(rounds)] if rows else []


def window_order(n, runs):
    """--timing window: (implementation, calls) per window, each
    implementation timed in windows of its own calls as do_bench does (the
    anchors' method), the implementations in order and then in reverse
    order (0 1 .. n-1 n-1 .. 1 0), its runs split between its two windows
    (the first takes the odd one), so a drift over the cell weighs on every
    implementation alike and none runs in a fixed neighbourhood."""
    if n < 1 or runs < 1:
        return []
    first, second = runs - runs // 2, runs // 2
    out = [(i, first) for i in range(n)]
    if second:
        out += [(i, second) for i in reversed(range(n))]
    return out
