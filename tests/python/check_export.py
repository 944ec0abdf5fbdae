"""Checks a folder `kiln export` wrote (or the committed Transformers fixture) with an
implementation that shares no code with Kiln: the files are read with the `safetensors`
library and the model run in float64 NumPy, then compared with the outputs stored beside it.

    python tests/python/check_export.py DIR [DIR ...]

A Llama folder (config.json) is run as Transformers' LlamaForCausalLM computes it (RMSNorm,
rotate-half RoPE, causal softmax attention, silu(gate_proj)·up_proj, tied head when the file
has none), tokenizing through tokenizer.json's vocabulary. Its kiln_reference.json (Kiln's f32
logits) must agree within 1e-4 and its greedy text exactly; a transformers_logits.json
(Transformers in float64) within 1e-6. An MLP folder (kiln_config.json) is the nn.Sequential of
its state dict; kiln_reference.json's outputs must agree within 1e-5, and data.csv must hold
the run's points. Tolerances: Kiln computes in f32 on the GPU (about 1e-6 relative per
operation, a few hundred terms per logit); NumPy and Transformers both in float64."""
import csv
import json
import os
import sys

import numpy as np
from safetensors.numpy import load_file


def rms_norm(x, w, eps):
    return x / np.sqrt((x * x).mean(-1, keepdims=True) + eps) * w


def rope(x, theta):
    """x (T, H, hd), NeoX / Transformers rotate_half layout."""
    t, _, hd = x.shape
    inv = theta ** (-np.arange(0, hd, 2) / hd)
    ang = np.arange(t)[:, None] * inv[None, :]
    cos, sin = np.cos(np.concatenate([ang, ang], -1))[:, None, :], np.sin(np.concatenate([ang, ang], -1))[:, None, :]
    half = np.concatenate([-x[..., hd // 2:], x[..., :hd // 2]], -1)
    return x * cos + half * sin


class Llama:
    def __init__(self, folder):
        cfg = json.load(open(os.path.join(folder, "config.json")))
        self.w = {k: v.astype(np.float64) for k, v in load_file(os.path.join(folder, "model.safetensors")).items()}
        self.layers, self.heads = cfg["num_hidden_layers"], cfg["num_attention_heads"]
        self.eps = cfg.get("rms_norm_eps", 1e-6)
        self.theta = cfg.get("rope_theta") or cfg.get("rope_parameters", {}).get("rope_theta", 10000.0)
        self.head = self.w.get("lm_head.weight", self.w["model.embed_tokens.weight"])
        self.vocab = json.load(open(os.path.join(folder, "tokenizer.json")))["model"]["vocab"]
        self.chars = {i: t for t, i in self.vocab.items() if len(t) == 1}

    def encode(self, text):
        return [self.vocab[c] for c in text]

    def logits(self, ids):
        w, x = self.w, self.w["model.embed_tokens.weight"][ids]
        t, c = x.shape
        hd = c // self.heads
        mask = np.triu(np.full((t, t), -np.inf), 1)
        for l in range(self.layers):
            p = lambda s: w[f"model.layers.{l}.{s}.weight"]  # noqa: E731
            h = rms_norm(x, p("input_layernorm"), self.eps)
            q, k, v = (h @ p(f"self_attn.{n}_proj").T for n in "qkv")
            q, k, v = (a.reshape(t, self.heads, hd) for a in (q, k, v))
            q, k = rope(q, self.theta), rope(k, self.theta)
            s = np.einsum("thd,shd->hts", q, k) / np.sqrt(hd) + mask
            a = np.exp(s - s.max(-1, keepdims=True))
            a /= a.sum(-1, keepdims=True)
            x = x + np.einsum("hts,shd->thd", a, v).reshape(t, c) @ p("self_attn.o_proj").T
            h = rms_norm(x, p("post_attention_layernorm"), self.eps)
            g = h @ p("mlp.gate_proj").T
            x = x + ((g / (1 + np.exp(-g))) * (h @ p("mlp.up_proj").T)) @ p("mlp.down_proj").T
        return rms_norm(x, w["model.norm.weight"], self.eps) @ self.head.T

    def greedy(self, prompt, n):
        ids = self.encode(prompt)
        for _ in range(n):
            row = self.logits(ids)[-1]
            ids.append(max(self.chars, key=lambda i: row[i]))  # characters only, as Kiln samples
        return "".join(self.chars[i] for i in ids[len(prompt):])


def check_llama(folder, checks):
    m = Llama(folder)
    for name, tol in [("kiln_reference.json", 1e-4), ("transformers_logits.json", 2e-5)]:
        path = os.path.join(folder, name)
        if not os.path.exists(path):
            continue
        for case in json.load(open(path))["prompts"]:
            ids = m.encode(case["prompt"])
            if "tokens" in case:
                checks.expect(ids == case["tokens"], f"{name}: {case['prompt']!r} tokenizes as stored")
            want = np.array(case["logits"])
            got = m.logits(ids)[: len(want)]
            err = np.abs(got - want).max()
            checks.expect(err <= tol, f"{name}: logits of {case['prompt']!r} within {tol} (max error {err:.2e})")
            if "greedy" in case:
                text = m.greedy(case["prompt"], len(case["greedy"]))
                checks.expect(text == case["greedy"], f"{name}: greedy text of {case['prompt']!r} is {case['greedy']!r} (NumPy: {text!r})")


def check_mlp(folder, checks):
    meta = json.load(open(os.path.join(folder, "kiln_config.json")))
    mlp = meta["kiln_config"]["model"]["mlp"]
    w = {k: v.astype(np.float64) for k, v in load_file(os.path.join(folder, "model.safetensors")).items()}
    act = {"relu": lambda z: np.maximum(z, 0), "tanh": np.tanh, "silu": lambda z: z / (1 + np.exp(-z))}[mlp["activation"]]
    ref = json.load(open(os.path.join(folder, "kiln_reference.json")))
    x = np.array(ref["inputs"])
    scaling = meta.get("kiln_input_scaling")
    asked = meta["kiln_config"]["data"]["points"].get("standardize", False)
    model_py = open(os.path.join(folder, "model.py")).read()
    checks.expect(bool(scaling) == asked == ("INPUT_MEAN = [" in model_py), f"input scaling in kiln_config.json and model.py exactly when the run standardizes ({asked})")
    if scaling:  # data.points.standardize: the network sees (x - mean) / std
        x = (x - np.array(scaling["mean"])) / np.array(scaling["std"])
    layers = len(w) // 2
    for i in range(layers):
        x = x @ w[f"{2 * i}.weight"].T + w[f"{2 * i}.bias"]
        x = act(x) if i < layers - 1 else x
    err = np.abs(x - np.array(ref["outputs"])).max()
    checks.expect(err <= 1e-5, f"kiln_reference.json: the MLP's outputs within 1e-5 (max error {err:.2e})")
    rows = list(csv.DictReader(open(os.path.join(folder, "data.csv"))))
    inputs = sum(1 for k in rows[0] if k.startswith("x"))
    checks.expect(inputs == mlp["input_dim"] and len(rows) > 0, f"data.csv: {len(rows)} points of {inputs} inputs")


class Checks:
    def __init__(self):
        self.passed, self.failed = 0, 0

    def expect(self, ok, what):
        print(("ok    " if ok else "FAIL  ") + what)
        self.passed += ok
        self.failed += not ok


if __name__ == "__main__":
    checks = Checks()
    for folder in sys.argv[1:]:
        print(f"-- {folder}")
        (check_llama if os.path.exists(os.path.join(folder, "config.json")) else check_mlp)(folder, checks)
    print(f"python export check: {checks.passed} passed, {checks.failed} failed")
    sys.exit(1 if checks.failed or not checks.passed else 0)
