"""PyTorch reference for Kiln's golden test (tests/golden.rs).

An independent float64 CPU implementation of Kiln's MLP and tiny Llama, written from the math
(not from Kiln's kernels), trained with torch.optim.AdamW and torch.nn.utils.clip_grad_norm_.

For each NAME in {mlp, llama} it reads NAME_inputs.safetensors (beside this file):
  - the initial weights under each parameter's Kiln name (float32),
  - batch.<k>.x / batch.<k>.y for k < K: MLP points (B, 2) float32 and labels (B) int64, or
    Llama tokens (B, T) and next tokens (B, T) int64,
  - metadata "config" (Kiln's SessionConfig as JSON) and "steps" (K),
runs K AdamW steps (one batch each) and writes NAME_expected.safetensors:
  - loss (K) float64: the mean cross-entropy of each step's batch before its update,
  - grad_norm (K) float64: the global gradient norm before clipping,
  - grad.<name>: every gradient of step 1 (before clipping),
  - final.<name>: every weight after step K,
tensors computed in float64 and stored as float32 (the test's tolerances are far above f32's
rounding), and in the metadata which steps were clipped and the torch version.

Regenerating the fixtures (torch and safetensors needed; no GPU):
  KILN_WRITE_GOLDEN=1 cargo test --test golden write_inputs   # rewrites *_inputs.safetensors
  python3 tests/golden/torch_reference.py                      # rewrites *_expected.safetensors
  cargo test --test golden                                      # compares
The committed expected files were made with torch 2.11 (CPU, float64), recorded in their
metadata. torch is not on the Rust dev machines: run the second command where it is (e.g. copy
this script and the inputs to the GPU machine and run `python3 torch_reference.py` there).
"""

import json
import math
import pathlib
import sys

import torch
from safetensors import safe_open
from safetensors.torch import save_file

HERE = pathlib.Path(__file__).resolve().parent
F64 = torch.float64


def f32(x):
    """Kiln's config holds f32 numbers: use exactly the values its kernels see."""
    return float(torch.tensor(float(x), dtype=torch.float32).item())


def silu(z):
    return z * torch.sigmoid(z)


ACTIVATIONS = {"tanh": torch.tanh, "relu": torch.relu, "silu": silu}


def cross_entropy(logits, labels):
    """Mean over rows of logsumexp(row) - row[label]."""
    picked = logits.gather(1, labels[:, None])[:, 0]
    return (torch.logsumexp(logits, dim=1) - picked).mean()


# ----------------------------------------------------------------------------------------------
# MLP: layer l: z = h W_lᵀ + b_l (W_l is (out, in)); h = act(z) except after the last layer.


def mlp_logits(cfg, p, x):
    layers = len(cfg["hidden"]) + 1
    act = ACTIVATIONS[cfg["activation"]]
    h = x
    for l in range(layers):
        z = h @ p[f"layer{l}.weight"].T + p[f"layer{l}.bias"]
        h = act(z) if l + 1 < layers else z
    return h


# ----------------------------------------------------------------------------------------------
# Llama


def rms_norm(x, w, eps):
    """x / sqrt(mean(x²) + eps) * w over the last axis."""
    return x / torch.sqrt((x * x).mean(dim=-1, keepdim=True) + eps) * w


def rope(x, theta):
    """NeoX-style RoPE on x (B, T, H, hd): element i pairs with i + hd/2 and turns by
    pos · theta^(-2i/hd), pos = t within the sequence."""
    _, t, _, hd = x.shape
    half = hd // 2
    i = torch.arange(half, dtype=F64)
    freq = theta ** (-2.0 * i / hd)
    angle = torch.arange(t, dtype=F64)[:, None] * freq[None, :]  # (T, half)
    cos = torch.cos(angle)[None, :, None, :]
    sin = torch.sin(angle)[None, :, None, :]
    x1, x2 = x[..., :half], x[..., half:]
    return torch.cat([x1 * cos - x2 * sin, x1 * sin + x2 * cos], dim=-1)


def llama_logits(cfg, p, tokens):
    """tokens (B, T) → logits (B·T, V)."""
    b, t = tokens.shape
    c, h = cfg["d_model"], cfg["heads"]
    hd = c // h
    eps, theta = f32(cfg["norm_eps"]), f32(cfg["rope_theta"])
    causal = torch.ones(t, t, dtype=torch.bool).tril()
    x = p["wte"][tokens]  # (B, T, C)
    for l in range(cfg["layers"]):
        w = lambda s: p[f"blocks.{l}.{s}"]  # noqa: E731
        n1 = rms_norm(x, w("attn_norm"), eps)
        qkv = n1 @ w("qkv").T  # (B, T, 3C): [q (H, hd) | k (H, hd) | v (H, hd)]
        q, k, v = (part.reshape(b, t, h, hd) for part in qkv.split(c, dim=-1))
        q = rope(q, theta).transpose(1, 2)  # (B, H, T, hd)
        k = rope(k, theta).transpose(1, 2)
        v = v.transpose(1, 2)
        scores = (q @ k.transpose(-1, -2)) / math.sqrt(hd)
        scores = scores.masked_fill(~causal, float("-inf"))
        att = torch.softmax(scores, dim=-1) @ v  # (B, H, T, hd)
        att = att.transpose(1, 2).reshape(b, t, c)
        x = x + att @ w("proj").T
        n2 = rms_norm(x, w("mlp_norm"), eps)
        x = x + (silu(n2 @ w("up").T) * (n2 @ w("gate").T)) @ w("down").T
    x = rms_norm(x, p["final_norm"], eps)
    return (x @ p["lm_head"].T).reshape(b * t, -1)


# ----------------------------------------------------------------------------------------------


def run(name):
    path = HERE / f"{name}_inputs.safetensors"
    with safe_open(str(path), framework="pt") as f:
        meta = f.metadata()
        tensors = {k: f.get_tensor(k) for k in f.keys()}
    cfg = json.loads(meta["config"])
    steps = int(meta["steps"])
    opt = cfg["optimizer"]
    assert opt["kind"] == "adamw", opt
    assert opt["accumulation"] == 1, opt
    assert opt["schedule"]["kind"] == "constant", opt
    (kind, model), = cfg["model"].items()

    names = [k for k in tensors if not k.startswith("batch.")]
    params = {n: tensors[n].to(F64).clone().requires_grad_(True) for n in names}
    # Weight decay on matrices (linear weights, embeddings); none on norm weights and biases.
    decayed = [params[n] for n in names if params[n].ndim >= 2]
    plain = [params[n] for n in names if params[n].ndim < 2]
    optimizer = torch.optim.AdamW(
        [{"params": decayed, "weight_decay": f32(opt["weight_decay"])}, {"params": plain, "weight_decay": 0.0}],
        lr=f32(opt["lr"]),
        betas=(f32(opt["beta1"]), f32(opt["beta2"])),
        eps=f32(opt["eps"]),
        foreach=False,
    )
    clip = f32(opt["clip"])

    out, losses, norms, clipped = {}, [], [], []
    for k in range(steps):
        x, y = tensors[f"batch.{k}.x"], tensors[f"batch.{k}.y"]
        optimizer.zero_grad(set_to_none=True)
        if kind == "mlp":
            logits = mlp_logits(model, params, x.to(F64))
        else:
            logits = llama_logits(model, params, x.long())
        loss = cross_entropy(logits, y.long().reshape(-1))
        loss.backward()
        if k == 0:
            for n in names:
                out[f"grad.{n}"] = params[n].grad.detach().to(torch.float32).contiguous()
        grads = [params[n].grad for n in names]
        if clip > 0:
            norm = torch.nn.utils.clip_grad_norm_([params[n] for n in names], clip)
        else:
            norm = torch.sqrt(sum((g * g).sum() for g in grads))
        losses.append(loss.item())
        norms.append(norm.item())
        clipped.append(bool(clip > 0 and norm.item() > clip))
        optimizer.step()

    out["loss"] = torch.tensor(losses, dtype=F64)
    out["grad_norm"] = torch.tensor(norms, dtype=F64)
    for n in names:
        out[f"final.{n}"] = params[n].detach().to(torch.float32).contiguous()
    save_file(out, str(HERE / f"{name}_expected.safetensors"),
              metadata={"clipped": json.dumps(clipped), "torch": torch.__version__})
    print(f"{name}: losses {losses}, grad norms {norms}, clip {clip}, clipped {clipped}")


if __name__ == "__main__":
    for name in sys.argv[1:] or ["mlp", "llama"]:
        run(name)
