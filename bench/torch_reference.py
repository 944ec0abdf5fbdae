"""PyTorch side of Kiln's benchmarks: the same presets and matmul shapes, fp32 with TF32 off,
in every training mode up to PyTorch's strongest (eager; torch.compile; torch.compile with CUDA
graphs, mode="reduce-overhead", and fused AdamW; the whole step captured as one CUDA graph,
model eager or compiled; --autotune adds max-autotune), and the best of them per preset. Prints a table and writes JSON (--json FILE). --scaling FILE also times the
configs of `kiln bench --scaling --json FILE` (Llama d_model 128…1024, MLP widths 16…1024).

    python3 bench/torch_reference.py --json bench/torch-h200.json [--scaling kiln-scaling.json]

Presets (as in src/presets.rs):
  mlp-spiral  2→16→16→2 ReLU MLP, batch 512, AdamW(lr 0.02), grad clip 1.0, cross-entropy
  llama-small char-level Llama: d_model 256, 4 layers, 8 heads, SwiGLU 1024, context 128,
              batch 32, vocab 60, AdamW(lr 1e-3, wd 0.1, betas .9/.99), clip 1.0, on data/genesis.txt
"""
import argparse
import json
import math
import os
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
torch.set_float32_matmul_precision("highest")
DEV = "cuda" if torch.cuda.is_available() else "cpu"


def sync():
    if DEV == "cuda":
        torch.cuda.synchronize()


def bench_matmul(m, n, k, trans_b=False):
    a = torch.randn(m, k, device=DEV)
    b = torch.randn(n, k, device=DEV) if trans_b else torch.randn(k, n, device=DEV)
    f = (lambda: a @ b.t()) if trans_b else (lambda: a @ b)
    for _ in range(3):
        f()
    sync()
    t0 = time.perf_counter()
    f()
    sync()
    once = max(time.perf_counter() - t0, 1e-6)
    reps = max(3, min(200, int(0.05 / once)))
    t0 = time.perf_counter()
    for _ in range(reps):
        f()
    sync()
    secs = (time.perf_counter() - t0) / reps
    return {"m": m, "n": n, "k": k, "ms": secs * 1e3, "gflops": 2 * m * n * k / secs / 1e9}


class Mlp(nn.Module):
    def __init__(self, width=16):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(2, width), nn.ReLU(), nn.Linear(width, width), nn.ReLU(), nn.Linear(width, 2))

    def forward(self, x):
        return self.net(x)


class RMSNorm(nn.Module):
    def __init__(self, c, eps=1e-5):
        super().__init__()
        self.w = nn.Parameter(torch.ones(c))
        self.eps = eps

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.w


def rope(x, theta=10000.0):
    # x: (B, H, T, hd); NeoX pairs (i, i + hd/2), angle pos·theta^(-2i/hd)
    b, h, t, hd = x.shape
    half = hd // 2
    inv = theta ** (-torch.arange(half, device=x.device, dtype=torch.float32) * 2 / hd)
    ang = torch.arange(t, device=x.device, dtype=torch.float32)[:, None] * inv[None, :]
    cos, sin = ang.cos(), ang.sin()
    x1, x2 = x[..., :half], x[..., half:]
    return torch.cat([x1 * cos - x2 * sin, x1 * sin + x2 * cos], dim=-1)


class Block(nn.Module):
    def __init__(self, c, h, f):
        super().__init__()
        self.h = h
        self.n1, self.n2 = RMSNorm(c), RMSNorm(c)
        self.qkv = nn.Linear(c, 3 * c, bias=False)
        self.proj = nn.Linear(c, c, bias=False)
        self.up = nn.Linear(c, f, bias=False)
        self.gate = nn.Linear(c, f, bias=False)
        self.down = nn.Linear(f, c, bias=False)

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(self.n1(x)).split(c, dim=-1)
        q, k, v = (z.view(b, t, self.h, c // self.h).transpose(1, 2) for z in (q, k, v))
        q, k = rope(q), rope(k)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(y.transpose(1, 2).reshape(b, t, c))
        n = self.n2(x)
        return x + self.down(F.silu(self.up(n)) * self.gate(n))


class Llama(nn.Module):
    def __init__(self, vocab=60, c=256, layers=4, h=8, f=1024):
        super().__init__()
        self.wte = nn.Embedding(vocab, c)
        self.blocks = nn.ModuleList(Block(c, h, f) for _ in range(layers))
        self.norm = RMSNorm(c)
        self.head = nn.Linear(c, vocab, bias=False)

    def forward(self, idx):
        x = self.wte(idx)
        for blk in self.blocks:
            x = blk(x)
        return self.head(self.norm(x))


# Training modes, weakest to strongest: eager; torch.compile (default mode); torch.compile with
# CUDA graphs (mode="reduce-overhead") and fused AdamW; the whole step (forward, backward,
# clipping, fused AdamW) captured as one CUDA graph and replayed, with the model eager
# ("cuda-graph") or compiled ("compile+cuda-graph"); optionally max-autotune (also CUDA graphs,
# with Triton autotuning: minutes of compiling, so behind --autotune).
MODES = ["eager", "compile", "reduce-overhead", "cuda-graph", "compile+cuda-graph"]


def train_rate(model, params, opt_kw, batch_fn, loss_fn, seconds, chunk, mode):
    cuda = DEV == "cuda"
    captured = mode.endswith("cuda-graph")
    graphs = mode in ("reduce-overhead", "max-autotune")
    if captured or (graphs and cuda):
        opt = torch.optim.AdamW(params, **opt_kw, fused=True, capturable=captured)
    else:
        opt = torch.optim.AdamW(params, **opt_kw)
    fwd = model if mode in ("eager", "cuda-graph") else torch.compile(model, mode=mode if graphs else None)

    def body(x, y):
        loss = loss_fn(fwd(x), y)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        return loss

    def step():
        if graphs:
            torch.compiler.cudagraph_mark_step_begin()
        x, y = batch_fn()
        opt.zero_grad(set_to_none=True)
        return body(x, y)

    if captured:
        # PyTorch's whole-network capture: warm up on a side stream, then capture one step;
        # each replay reads the batch copied into the static inputs.
        static_x, static_y = batch_fn()
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(5):
                opt.zero_grad(set_to_none=True)
                body(static_x, static_y)
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        opt.zero_grad(set_to_none=True)
        with torch.cuda.graph(graph):
            static_loss = body(static_x, static_y)

        def step():  # noqa: F811
            x, y = batch_fn()
            static_x.copy_(x)
            static_y.copy_(y)
            graph.replay()
            return static_loss

    for _ in range(5 if not graphs else 10):
        step()
    sync()
    steps, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds or steps < chunk:
        for _ in range(chunk):
            loss = step()
        last = loss.item()  # a readback per chunk, as Kiln reads its metrics ring
        steps += chunk
    return steps / (time.perf_counter() - t0), float(last)


def bench_mlp(mode, seconds, width=16):
    torch.manual_seed(0)
    model = Mlp(width).to(DEV)
    x = torch.randn(4096, 2, device=DEV)
    y = (x[:, 0] * x[:, 1] > 0).long()

    def batch():
        i = torch.randint(0, 4096, (512,), device=DEV)
        return x[i], y[i]

    opt_kw = {"lr": 0.02, "weight_decay": 0.0}
    rate, loss = train_rate(model, model.parameters(), opt_kw, batch, F.cross_entropy, seconds, 50, mode)
    return {"steps_per_sec": rate, "tokens_per_sec": rate * 512, "final_loss": loss}


def bench_llama(mode, seconds, root, c=256, h=8, f=1024, layers=4, t=128, b=32):
    torch.manual_seed(0)
    text = open(os.path.join(root, "data", "genesis.txt")).read()
    chars = sorted(set(text))
    data = torch.tensor([chars.index(ch) for ch in text], device=DEV)
    model = Llama(c=c, layers=layers, h=h, f=f).to(DEV)
    decay = [p for p in model.parameters() if p.dim() >= 2]
    rest = [p for p in model.parameters() if p.dim() < 2]
    groups = [{"params": decay, "weight_decay": 0.1}, {"params": rest, "weight_decay": 0.0}]

    def batch():
        i = torch.randint(0, len(data) - t - 1, (b,), device=DEV)
        off = i[:, None] + torch.arange(t + 1, device=DEV)[None, :]
        w = data[off]
        return w[:, :-1], w[:, 1:]

    loss_fn = lambda logits, y: F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))  # noqa: E731
    rate, loss = train_rate(model, groups, {"lr": 1e-3, "betas": (0.9, 0.99)}, batch, loss_fn, seconds, 10, mode)
    return {"steps_per_sec": rate, "tokens_per_sec": rate * b * t, "final_loss": loss}


def scaling_runs(path, modes, seconds, root):
    """The configs of `kiln bench --scaling`'s JSON (its `scaling` rows), in every mode."""
    rows = []
    for row in json.load(open(path))["scaling"]:
        model = row["config"]["model"]
        for mode in modes:
            if "llama" in model:
                m = model["llama"]
                r = bench_llama(mode, seconds, root, c=m["d_model"], h=m["heads"], f=m["hidden"], layers=m["layers"], t=m["context"], b=row["config"]["batch"])
            else:
                r = bench_mlp(mode, seconds, width=model["mlp"]["hidden"][0])
            r.update({"name": row["name"], "mode": mode})
            rows.append(r)
            print(f"scaling {row['name']:<14} {mode:<16} {r['steps_per_sec']:9.1f} steps/s {r['tokens_per_sec']:12.0f} tokens/s", flush=True)
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--json")
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--autotune", action="store_true", help="also torch.compile mode=max-autotune (slow to compile)")
    ap.add_argument("--scaling", help="the JSON of `kiln bench --scaling`: time its configs too")
    ap.add_argument("--no-matmul", action="store_true")
    ap.add_argument("--modes", help="comma-separated subset of the modes")
    args = ap.parse_args()
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    modes = MODES + (["max-autotune"] if args.autotune else [])
    if DEV != "cuda":
        modes = ["eager", "compile"]  # CUDA graphs need CUDA
    if args.modes:
        modes = args.modes.split(",")
    out = {"device": torch.cuda.get_device_name() if DEV == "cuda" else "cpu", "torch": torch.__version__, "matmul": [], "training": [], "best": {}}
    shapes = [(s, s, s, False, f"{s}³") for s in (256, 512, 1024, 2048, 4096)]
    shapes += [(4096, 768, 256, True, "llama-small qkv"), (4096, 1024, 256, True, "llama-small up"), (4096, 256, 1024, True, "llama-small down"), (512, 16, 16, True, "mlp-spiral hidden")]
    for m, n, k, tb, label in [] if args.no_matmul else shapes:
        r = bench_matmul(m, n, k, tb)
        r["shape"] = label
        out["matmul"].append(r)
        print(f"matmul {label:<18} {r['ms']:9.3f} ms {r['gflops']:10.1f} GFLOP/s", flush=True)
    for name, fn in (("mlp-spiral", bench_mlp), ("llama-small", lambda mode, s: bench_llama(mode, s, root))):
        for mode in modes:
            r = fn(mode, args.seconds)
            r["preset"] = name
            r["mode"] = mode
            out["training"].append(r)
            print(f"{name:<12} {mode:<16} {r['steps_per_sec']:9.1f} steps/s {r['tokens_per_sec']:12.0f} tokens/s loss {r['final_loss']:.3f}", flush=True)
        best = max((r for r in out["training"] if r["preset"] == name), key=lambda r: r["tokens_per_sec"])
        out["best"][name] = {"mode": best["mode"], "tokens_per_sec": best["tokens_per_sec"]}
        print(f"{name:<12} best PyTorch: {best['mode']} {best['tokens_per_sec']:.0f} tokens/s", flush=True)
    if args.scaling:
        out["scaling"] = scaling_runs(args.scaling, modes, args.seconds, root)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=2)


if __name__ == "__main__":
    main()
