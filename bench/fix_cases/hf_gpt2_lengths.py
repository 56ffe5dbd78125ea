"""A tiny HF GPT-2 (from a config) compiled whole, called with keyword inputs at three lengths."""

import torch
from transformers import GPT2Config, GPT2LMHeadModel

torch.manual_seed(0)
cfg = GPT2Config(vocab_size=100, n_embd=32, n_layer=2, n_head=2, n_positions=64)
model = torch.compile(GPT2LMHeadModel(cfg).eval(), backend="eager")
with torch.no_grad():
    for n in (8, 12, 16):
        ids = torch.randint(0, 100, (1, n))
        out = model(input_ids=ids)
print(tuple(out.logits.shape))
