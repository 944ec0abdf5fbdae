"""Keep training a Llama that Kiln exported (`kiln export <checkpoint> --to DIR`), with PyTorch
and Hugging Face Transformers, on one process or many (torchrun: DistributedDataParallel, NCCL
on GPUs, gloo on CPUs):

    python DIR/train.py DIR --steps 1000 --out DIR2
    torchrun --nproc_per_node=8 DIR/train.py DIR --steps 1000 --out DIR2
    torchrun --nproc_per_node=2 DIR/train.py DIR --steps 100 --out DIR2 --cpu

It trains as Kiln did: random windows of `context` characters from train.txt, the next
character as the target of every position, AdamW (or SGD) with the run's learning rate, betas, weight
decay (matrices only) and gradient clipping, and its schedule continued from the exported
step. The global batch is the run's batch, split across processes. At the end it scores
validation.txt as Kiln's `evaluate` does (consecutive windows from its start, at most 16,384
next characters) and writes DIR2, a folder `kiln import DIR2` reads back."""
import argparse
import json
import math
import os
import shutil

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel
from transformers import AutoModelForCausalLM, AutoTokenizer

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


def evaluate(model, ids, context, device):
    """Mean next-character cross-entropy over consecutive windows from the split's start."""
    windows = min(MAX_EVAL_TOKENS // context, (len(ids) - 1) // context)
    total, count = 0.0, 0
    with torch.no_grad():
        for w in range(windows):
            x = ids[w * context:(w + 1) * context + 1].to(device)
            logits = model(x[None, :-1]).logits[0].double()
            total += F.cross_entropy(logits, x[1:], reduction="sum").item()
            count += context
    return total / max(count, 1)


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

    config = json.load(open(os.path.join(args.folder, "config.json")))
    kiln = config["kiln_config"]
    opt, context = kiln["optimizer"], kiln["model"]["llama"]["context"]
    start = config.get("kiln_step", 0)
    tokenizer = AutoTokenizer.from_pretrained(args.folder)
    read = lambda name: torch.tensor(tokenizer(open(os.path.join(args.folder, name), encoding="utf-8").read()).input_ids)  # noqa: E731
    train_ids, val_ids = read("train.txt"), read("validation.txt")
    model = AutoModelForCausalLM.from_pretrained(args.folder, torch_dtype=torch.float32).to(device)
    net = DistributedDataParallel(model, device_ids=[local] if cuda else None) if distributed else model
    decay = [p for p in model.parameters() if p.dim() >= 2]
    rest = [p for p in model.parameters() if p.dim() < 2]
    groups = [{"params": decay, "weight_decay": opt.get("weight_decay", 0.0)}, {"params": rest, "weight_decay": 0.0}]
    if opt.get("kind", "adamw") == "sgd":
        adamw = torch.optim.SGD(groups, lr=opt["lr"], momentum=opt.get("momentum", 0.0))
    else:
        adamw = torch.optim.AdamW(groups, lr=opt["lr"], betas=(opt.get("beta1", 0.9), opt.get("beta2", 0.999)), eps=opt.get("eps", 1e-8))
    batch = max(1, kiln["batch"] * opt.get("accumulation", 1) // world)  # the global batch, split
    gen = torch.Generator().manual_seed(kiln.get("seed", 0) * 1000 + rank)
    for step in range(start, start + args.steps):
        starts = torch.randint(0, len(train_ids) - context, (batch,), generator=gen)
        x = torch.stack([train_ids[s:s + context + 1] for s in starts]).to(device)
        logits = net(x[:, :-1]).logits
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), x[:, 1:].reshape(-1))
        adamw.zero_grad(set_to_none=True)
        loss.backward()
        if opt.get("clip", 0) > 0:
            torch.nn.utils.clip_grad_norm_(model.parameters(), opt["clip"])
        for g in adamw.param_groups:
            g["lr"] = lr_at(step + 1, opt)
        adamw.step()
        if rank == 0 and (step - start) % args.log_every == 0:
            print(json.dumps({"step": step + 1, "loss": loss.item(), "world": world, "device": str(device)}), flush=True)
    if rank == 0:
        val = evaluate(model, val_ids, context, device)
        print(json.dumps({"step": start + args.steps, "validation_loss": val}), flush=True)
        model.config.kiln_step = start + args.steps
        model.save_pretrained(args.out, safe_serialization=True)
        for name in ["tokenizer.json", "tokenizer_config.json", "generation_config.json", "train.txt", "validation.txt", "train.py"]:
            shutil.copy(os.path.join(args.folder, name), os.path.join(args.out, name))
    if distributed:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
