#!/usr/bin/env python3
"""Train a tiny causal transformer twice with the same seed and check whether
the two runs are bitwise identical, with three attention implementations:

  dash          dash_attn.attention (PyTorch's flash forward, DASH backward)
  sdpa          F.scaled_dot_product_attention, PyTorch's default backend
  sdpa-determ   the same under torch.use_deterministic_algorithms(True)
                (cuDNN refuses, so SDPA runs FlashAttention-2's
                deterministic backward)

The two runs of a mode step in lockstep so every gradient of every step is
compared with torch.equal, then the final weights. Prints tokens/s per mode.
Needs an H100/H200, PyTorch and `pip install ./python`; about 50 s on an H200.

  python examples/train_tiny_gpt.py [--steps 300] [--head-dim 64|128]
"""

import argparse
import os
import time

# cuBLAS is deterministic only with a fixed workspace; set before CUDA init
# (use_deterministic_algorithms refuses to run otherwise).
os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import dash_attn  # noqa: E402

WARMUP = 10  # steps not timed


class Block(nn.Module):
    def __init__(self, d, heads, attn):
        super().__init__()
        self.heads, self.attn = heads, attn
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

    def forward(self, x):
        B, S, D = x.shape
        qkv = self.qkv(self.ln1(x)).view(B, S, 3, self.heads, D // self.heads)
        q, k, v = qkv.permute(2, 0, 3, 1, 4)  # each [B, H, S, hd]: SDPA's BHSD
        y = self.attn(q, k, v).transpose(1, 2).reshape(B, S, D)
        x = x + self.proj(y)
        return x + self.mlp(self.ln2(x))


class TinyGPT(nn.Module):
    def __init__(self, vocab, d, heads, layers, seq, attn):
        super().__init__()
        self.tok, self.pos = nn.Embedding(vocab, d), nn.Embedding(seq, d)
        self.blocks = nn.ModuleList(Block(d, heads, attn) for _ in range(layers))
        self.ln, self.head = nn.LayerNorm(d), nn.Linear(d, vocab, bias=False)

    def forward(self, idx):
        # nn.Embedding's CUDA backward adds rows with atomics (nondeterministic
        # unless use_deterministic_algorithms); a one-hot matmul keeps every
        # op but attention deterministic, so the comparison isolates attention.
        onehot = F.one_hot(idx, self.tok.num_embeddings).to(self.tok.weight.dtype)
        x = onehot @ self.tok.weight + self.pos(torch.arange(idx.shape[1], device=idx.device))
        for b in self.blocks:
            x = b(x)
        return self.head(self.ln(x))


def attention_fn(mode):
    if mode == "dash":
        return lambda q, k, v: dash_attn.attention(q, k, v, causal=True)
    return lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True)


def make_data(steps, batch, seq, vocab, seed):
    """A fixed token stream with structure to learn (noisy repeated phrases)."""
    g = torch.Generator().manual_seed(seed)
    phrases = torch.randint(0, vocab, (64, 32), generator=g)
    n = steps * batch * (seq + 1)
    picks = torch.randint(0, 64, (n // 32 + 1,), generator=g)
    stream = phrases[picks].flatten()
    noise = torch.rand(stream.shape, generator=g) < 0.05
    stream[noise] = torch.randint(0, vocab, (int(noise.sum()),), generator=g)
    return stream[:n].view(steps, batch, seq + 1)


def run_mode(mode, args, data):
    torch.use_deterministic_algorithms(mode == "sdpa-determ")
    dev = torch.device("cuda")
    models, opts = [], []
    for _ in range(2):
        torch.manual_seed(args.seed)
        m = TinyGPT(256, args.d_model, args.d_model // args.head_dim, args.layers, args.seq,
                    attention_fn(mode)).to(dev)
        models.append(m)
        opts.append(torch.optim.AdamW(m.parameters(), lr=3e-4, weight_decay=0.1))
    grads_equal, steps_differing = True, 0
    busy = [0.0, 0.0]
    loss = None
    curve = []  # run 0's loss at every step, to compare the modes' curves
    for step in range(args.steps):
        batch = data[step].to(dev, non_blocking=True)
        x, y = batch[:, :-1], batch[:, 1:]
        for r in range(2):
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            with torch.autocast("cuda", dtype=torch.bfloat16):
                logits = models[r](x)
            loss_r = F.cross_entropy(logits.float().view(-1, logits.shape[-1]), y.reshape(-1))
            opts[r].zero_grad(set_to_none=True)
            loss_r.backward()
            torch.cuda.synchronize()
            if step >= WARMUP:
                busy[r] += time.perf_counter() - t0
            if r == 0:
                loss = loss_r.item()
                curve.append(loss)
        same = all(torch.equal(a.grad, b.grad)
                   for a, b in zip(models[0].parameters(), models[1].parameters()))
        if not same:
            if grads_equal and args.verbose:
                print("  %s step %d: grads differ in %s" % (mode, step, ", ".join(
                    n for (n, a), b in zip(models[0].named_parameters(), models[1].parameters())
                    if not torch.equal(a.grad, b.grad))))
            grads_equal = False
            steps_differing += 1
        for r in range(2):
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            opts[r].step()
            torch.cuda.synchronize()
            if step >= WARMUP:
                busy[r] += time.perf_counter() - t0
    weights_equal = all(torch.equal(a, b) for a, b in
                        zip(models[0].parameters(), models[1].parameters()))
    torch.use_deterministic_algorithms(False)
    # Mean throughput of the two runs, warm-up steps (kernel loading) excluded.
    tokens = (args.steps - WARMUP) * args.batch * args.seq
    tok_s = tokens / (sum(busy) / 2)
    return dict(grads_equal=grads_equal, steps_differing=steps_differing,
                weights_equal=weights_equal, tok_s=tok_s, final_loss=loss,
                curve=curve)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--seq", type=int, default=1024)
    ap.add_argument("--d-model", type=int, default=512)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--head-dim", type=int, default=64, choices=(64, 128))
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--modes", default="dash,sdpa,sdpa-determ")
    ap.add_argument("--verbose", action="store_true", help="name the first differing gradients")
    args = ap.parse_args()
    if args.steps <= WARMUP:
        raise SystemExit("--steps must exceed %d warm-up steps" % WARMUP)
    if not torch.cuda.is_available():
        raise SystemExit("needs a CUDA GPU (H100/H200)")
    print("device: %s, torch %s, %d steps of %d x %d tokens, d_model %d, %d layers, "
          "head dim %d, bf16 autocast"
          % (torch.cuda.get_device_name(), torch.__version__, args.steps, args.batch,
             args.seq, args.d_model, args.layers, args.head_dim))
    data = make_data(args.steps, args.batch, args.seq, 256, args.seed)
    results = {}
    for mode in args.modes.split(","):
        results[mode] = r = run_mode(mode, args, data)
        print("%-12s grads bitwise equal: %-5s (%d/%d steps differ)  final weights equal: %-5s"
              "  %8.0f tokens/s  loss %.3f"
              % (mode, r["grads_equal"], r["steps_differing"], args.steps,
                 r["weights_equal"], r["tok_s"], r["final_loss"]))
    # Loss curves: DASH vs SDPA differ only by the rounding of a different
    # (deterministic) reduction order: the gap should be bf16 noise.
    if "dash" in results and "sdpa" in results:
        a, b = results["dash"]["curve"], results["sdpa"]["curve"]
        gaps = [abs(x - y) / max(abs(y), 1e-6) for x, y in zip(a, b)]
        marks = [i for i in (0, len(a) // 4, len(a) // 2, 3 * len(a) // 4, len(a) - 1)]
        print("loss curve dash vs sdpa: max rel. gap %.2e over %d steps; "
              "steps %s: dash %s / sdpa %s"
              % (max(gaps), len(gaps), marks,
                 " ".join("%.3f" % a[i] for i in marks),
                 " ".join("%.3f" % b[i] for i in marks)))
    if "dash" in results and not (results["dash"]["grads_equal"]
                                  and results["dash"]["weights_equal"]):
        raise SystemExit("FAIL: dash_attn.attention was not bitwise reproducible")


if __name__ == "__main__":
    main()
