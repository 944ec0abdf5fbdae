"""Checks a folder written by `kiln export` with Hugging Face Transformers (no custom code):
the model loads through AutoModelForCausalLM, the tokenizer through AutoTokenizer, and for each
prompt in kiln_reference.json the tokens match, the logits at every position match Kiln's, and
greedy generation gives Kiln's greedy text.

    python3 bench/hf_check.py DIR [--device cpu|cuda]

Prints one JSON line of figures; exits 1 if a check fails (logits beyond 1e-4, or any text or
token difference)."""
import json
import sys

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

folder = sys.argv[1]
device = sys.argv[sys.argv.index("--device") + 1] if "--device" in sys.argv else "cpu"
torch.backends.cuda.matmul.allow_tf32 = False  # fp32 products, as Kiln computes them
model = AutoModelForCausalLM.from_pretrained(folder, torch_dtype=torch.float32).to(device).eval()
tokenizer = AutoTokenizer.from_pretrained(folder)
reference = json.load(open(f"{folder}/kiln_reference.json"))
worst, failures, rows = 0.0, [], []
for case in reference["prompts"]:
    ids = tokenizer(case["prompt"], return_tensors="pt").input_ids
    if ids[0].tolist() != case["tokens"]:
        failures.append(f"tokens of {case['prompt']!r}: {ids[0].tolist()} vs Kiln's {case['tokens']}")
        continue
    with torch.no_grad():
        logits = model(ids.to(device)).logits[0].double().cpu()
    diff = (logits - torch.tensor(case["logits"], dtype=torch.float64)).abs().max().item()
    worst = max(worst, diff)
    out = model.generate(ids.to(device), max_new_tokens=len(case["greedy"]), do_sample=False)
    text = tokenizer.decode(out[0, ids.shape[1]:].cpu())
    rows.append({"prompt": case["prompt"], "max_abs_logit_diff": diff, "greedy_equal": text == case["greedy"]})
    if text != case["greedy"]:
        failures.append(f"greedy after {case['prompt']!r}: {text!r} vs Kiln's {case['greedy']!r}")
if worst > 1e-4:
    failures.append(f"logits differ by {worst:.3e} (> 1e-4)")
print(json.dumps({"folder": folder, "device": device, "max_abs_logit_diff": worst, "prompts": rows, "failures": failures}))
sys.exit(1 if failures else 0)
