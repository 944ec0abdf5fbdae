"""Writes tests/fixtures/hf-foreign: a Llama that Transformers made, not Kiln, for `make test`
to import (tests/hf_import.rs) and to run in NumPy (tests/python/check_export.py). Run it on a
machine with torch, transformers and tokenizers (the GPU machine):

    python3 bench/make_hf_fixture.py tests/fixtures/hf-foreign

It is everything Kiln must translate: no kiln_config; a char-level BPE tokenizer (no merges)
that numbers the characters by first appearance and starts with an `<unk>` token; a tied head
(no lm_head tensor); RoPE base 500 and RMSNorm epsilon 1e-6 (not Kiln's defaults); four heads
of 8. The text is the start of Genesis (data/genesis.txt) as train.txt and validation.txt.
transformers_logits.json holds Transformers' float64 logits (CPU) at every position of three
prompts and its greedy continuation (never choosing <unk>)."""
import json
import os
import sys

import torch
from tokenizers import Tokenizer, decoders, models
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

out = sys.argv[1]
here = os.path.dirname(os.path.abspath(__file__))
genesis = open(os.path.join(here, "..", "data", "genesis.txt"), encoding="utf-8").read().replace("\r", "")
train, validation = genesis[:6000], genesis[6000:7500]
chars = list(dict.fromkeys(train + validation))  # first appearance, not sorted
vocab = {"<unk>": 0, **{c: i + 1 for i, c in enumerate(chars)}}
tok = Tokenizer(models.BPE(vocab=vocab, merges=[], unk_token="<unk>"))
tok.decoder = decoders.Fuse()
PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>").save_pretrained(out)

torch.manual_seed(0)
config = LlamaConfig(
    vocab_size=len(vocab), hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
    num_key_value_heads=4, max_position_embeddings=64, rms_norm_eps=1e-6, rope_theta=500.0, tie_word_embeddings=True,
    initializer_range=0.3, attention_bias=False, mlp_bias=False,
)
model = LlamaForCausalLM(config).eval()
model.save_pretrained(out, safe_serialization=True)
for name, text in [("train.txt", train), ("validation.txt", validation)]:
    open(os.path.join(out, name), "w", encoding="utf-8").write(text)

model = model.double()
cases = []
for prompt in ["In the beginning", "And God said, Let", validation[:20]]:
    ids = torch.tensor([[vocab[c] for c in prompt]])
    with torch.no_grad():
        logits = model(ids).logits[0]
        greedy = model.generate(ids, max_new_tokens=24, do_sample=False, suppress_tokens=[0], pad_token_id=0)[0, ids.shape[1]:]
    cases.append({"prompt": prompt, "logits": logits.tolist(), "greedy": "".join(chars[i - 1] for i in greedy.tolist())})
json.dump({"transformers": __import__("transformers").__version__, "torch": torch.__version__, "prompts": cases},
          open(os.path.join(out, "transformers_logits.json"), "w"))
print(json.dumps({"folder": out, "files": sorted(os.listdir(out)), "vocab": len(vocab)}))
