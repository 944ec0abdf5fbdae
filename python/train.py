"""Keep training a run Kiln exported (`kiln export <checkpoint> --to DIR`) with PyTorch, on one
process or many (torchrun: DistributedDataParallel, NCCL on GPUs, gloo on CPUs). A Llama folder
(config.json) trains with Hugging Face Transformers; an MLP folder (kiln_config.json) is the
nn.Sequential of its model.py.

    python DIR/train.py DIR --steps 1000 --out DIR2
    torchrun --nproc_per_node=8 DIR/train.py DIR --steps 1000 --out DIR2
    torchrun --nproc_per_node=2 DIR/train.py DIR --steps 100 --out DIR2 --cpu

It trains as Kiln did: a Llama on random windows of `context` characters from train.txt (the
next character the target of every position), an MLP on random points of data.csv's train
split (cross-entropy for labels, mean squared error for targets); AdamW (or SGD) with the run's
learning rate, betas, weight decay (matrices only) and gradient clipping, and its schedule
continued from the exported step. The global batch is the run's batch, split across processes.
At the end it scores the validation split as Kiln's `evaluate` does and writes DIR2, a folder
`kiln import DIR2` reads back."""
import argparse
import json
import math
import os
import shutil
import sys

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel

MAX_EVAL_TOKENS = 16_384


def lr_at(t, opt):
    """Kiln's schedule at step t (1-based; src/optim.rs `lr_at`): constant, or linear warmup to
    lr at warmup_steps, then cosine down to min_lr_fraction · lr at total_steps."""
    s = opt.get("schedule", {"kind": "constant"})
    if s.get("kind") != "warmup_cosine":
        return opt["lr"]
    warmup, total, floor = s["warmup_steps"], s["total_steps"], s["min_lr_fraction"]
    if t <= warmup:
        return opt["lr"] * t / max(warmup, 1)
    progress = min(1.0, (t - warmup) / (total - warmup))
    return opt["lr"] * (floor + (1 - floor) * 0.5 * (1 + math.cos(math.pi * progress)))


class Llama:
    """A Hugging Face LlamaForCausalLM folder with train.txt and validation.txt."""

    copies = ["tokenizer.json", "tokenizer_config.json", "generation_config.json", "train.txt", "validation.txt", "train.py"]

    def __init__(self, folder, device):
        from transformers import AutoModelForCausalLM, AutoTokenizer

        config = json.load(open(os.path.join(folder, "config.json")))
        self.kiln, self.step = config["kiln_config"], config.get("kiln_step", 0)
        self.context = self.kiln["model"]["llama"]["context"]
        tokenizer = AutoTokenizer.from_pretrained(folder)
        read = lambda name: torch.tensor(tokenizer(open(os.path.join(folder, name), encoding="utf-8").read()).input_ids)  # noqa: E731
        self.train_ids, self.val_ids = read("train.txt"), read("validation.txt")
        self.model = AutoModelForCausalLM.from_pretrained(folder, torch_dtype=torch.float32).to(device)

    def loss(self, net, batch, gen, device):
        starts = torch.randint(0, len(self.train_ids) - self.context, (batch,), generator=gen)
        x = torch.stack([self.train_ids[s:s + self.context + 1] for s in starts]).to(device)
        logits = net(x[:, :-1]).logits
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), x[:, 1:].reshape(-1))

    def evaluate(self, device):
        """Mean next-character cross-entropy over consecutive windows from the split's start."""
        windows = min(MAX_EVAL_TOKENS // self.context, (len(self.val_ids) - 1) // self.context)
        total = 0.0
        with torch.no_grad():
            for w in range(windows):
                x = self.val_ids[w * self.context:(w + 1) * self.context + 1].to(device)
                logits = self.model(x[None, :-1]).logits[0].double()
                total += F.cross_entropy(logits, x[1:], reduction="sum").item()
        return {"validation_loss": total / max(windows * self.context, 1)}

    def save(self, out, step):
        self.model.config.kiln_step = step
        self.model.save_pretrained(out, safe_serialization=True)


class Mlp:
    """Kiln's MLP export: model.py's nn.Sequential, data.csv, kiln_config.json."""

    copies = ["model.py", "data.csv", "train.py"]

    def __init__(self, folder, device):
        import csv

        sys.path.insert(0, folder)
        from model import model  # the folder's model.py

        meta = json.load(open(os.path.join(folder, "kiln_config.json")))
        self.kiln, self.step = meta["kiln_config"], meta.get("kiln_step", 0)
        self.model = model().train().to(device)
        rows = list(csv.DictReader(open(os.path.join(folder, "data.csv"))))
        self.classes = "label" in rows[0]

        def split(name):
            part = [r for r in rows if r["split"] == name]
            xs = torch.tensor([[float(r[k]) for k in r if k.startswith("x")] for r in part])
            ys = torch.tensor([int(r["label"]) if self.classes else float(r["target"]) for r in part])
            return xs.to(device), ys.to(device)

        self.train_set, self.val_set = split("train"), split("validation")

    def score(self, out, ys):
        return F.cross_entropy(out, ys) if self.classes else F.mse_loss(out[:, 0], ys)

    def loss(self, net, batch, gen, device):
        xs, ys = self.train_set
        picks = torch.randint(0, len(xs), (batch,), generator=gen).to(device)
        return self.score(net(xs[picks]), ys[picks])

    def evaluate(self, device):
        xs, ys = self.val_set
        with torch.no_grad():
            out = self.model(xs).double()
        scores = {"validation_loss": self.score(out, ys.double() if not self.classes else ys).item()}
        if self.classes:
            scores["validation_accuracy"] = (out.argmax(1) == ys).double().mean().item()
        return scores

    def save(self, out, step):
        from safetensors.torch import save_file

        os.makedirs(out, exist_ok=True)
        save_file({k: v.detach().cpu().contiguous() for k, v in self.model.state_dict().items()}, os.path.join(out, "model.safetensors"))
        json.dump({"kiln_config": self.kiln, "kiln_step": step}, open(os.path.join(out, "kiln_config.json"), "w"), indent=2)


def optimizer(model, opt):
    decay = [p for p in model.parameters() if p.dim() >= 2]
    rest = [p for p in model.parameters() if p.dim() < 2]
    groups = [{"params": decay, "weight_decay": opt.get("weight_decay", 0.0)}, {"params": rest, "weight_decay": 0.0}]
    if opt.get("kind", "adamw") == "sgd":
        return torch.optim.SGD(groups, lr=opt["lr"], momentum=opt.get("momentum", 0.0))
    return torch.optim.AdamW(groups, lr=opt["lr"], betas=(opt.get("beta1", 0.9), opt.get("beta2", 0.999)), eps=opt.get("eps", 1e-8))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("folder")
    ap.add_argument("--steps", type=int, default=500)
    ap.add_argument("--out", required=True)
    ap.add_argument("--cpu", action="store_true", help="train on CPUs (gloo) even where CUDA is available")
    ap.add_argument("--log-every", type=int, default=20)
    args = ap.parse_args()

    distributed = "RANK" in os.environ
    cuda = torch.cuda.is_available() and not args.cpu
    if distributed:
        dist.init_process_group(backend="nccl" if cuda else "gloo")
    rank, world = (dist.get_rank(), dist.get_world_size()) if distributed else (0, 1)
    local = int(os.environ.get("LOCAL_RANK", 0))
    device = torch.device(f"cuda:{local}" if cuda else "cpu")
    torch.backends.cuda.matmul.allow_tf32 = False

    run = (Llama if os.path.exists(os.path.join(args.folder, "config.json")) else Mlp)(args.folder, device)
    opt, start = run.kiln["optimizer"], run.step
    net = DistributedDataParallel(run.model, device_ids=[local] if cuda else None) if distributed else run.model
    step_fn = optimizer(run.model, opt)
    batch = max(1, run.kiln["batch"] * opt.get("accumulation", 1) // world)  # the global batch, split
    gen = torch.Generator().manual_seed(run.kiln.get("seed", 0) * 1000 + rank)
    for step in range(start, start + args.steps):
        loss = run.loss(net, batch, gen, device)
        step_fn.zero_grad(set_to_none=True)
        loss.backward()
        if opt.get("clip", 0) > 0:
            torch.nn.utils.clip_grad_norm_(run.model.parameters(), opt["clip"])
        for g in step_fn.param_groups:
            g["lr"] = lr_at(step + 1, opt)
        step_fn.step()
        if rank == 0 and (step - start) % args.log_every == 0:
            print(json.dumps({"step": step + 1, "loss": loss.item(), "world": world, "device": str(device)}), flush=True)
    if rank == 0:
        run.model.eval()
        print(json.dumps({"step": start + args.steps, **run.evaluate(device)}), flush=True)
        run.save(args.out, start + args.steps)
        for name in run.copies:
            shutil.copy(os.path.join(args.folder, name), os.path.join(args.out, name))
    if distributed:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
