"""A tiny HF model (built from its config: no download) called as users call it: keyword inputs, a
training step at two sequence lengths, then validation under torch.no_grad(). ARCH: llama|gpt2|bert."""

import sys

import torch
from transformers import (
    BertConfig,
    BertForMaskedLM,
    GPT2Config,
    GPT2LMHeadModel,
    LlamaConfig,
    LlamaForCausalLM,
)

arch = sys.argv[1] if len(sys.argv) > 1 else "llama"
backend = sys.argv[2] if len(sys.argv) > 2 else "eager"
torch.manual_seed(0)
if arch == "llama":
    model = LlamaForCausalLM(
        LlamaConfig(
            vocab_size=64,
            hidden_size=16,
            intermediate_size=32,
            num_hidden_layers=1,
            num_attention_heads=2,
            num_key_value_heads=1,
            max_position_embeddings=64,
        )
    )
elif arch == "gpt2":
    model = GPT2LMHeadModel(GPT2Config(vocab_size=64, n_embd=16, n_layer=1, n_head=2, n_positions=64))
else:
    model = BertForMaskedLM(
        BertConfig(
            vocab_size=64,
            hidden_size=16,
            num_hidden_layers=1,
            num_attention_heads=2,
            intermediate_size=32,
            max_position_embeddings=64,
        )
    )
compiled = torch.compile(model, backend=backend)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
model.train()
for seq in (16, 24):  # a new sequence length: the recompile every HF user meets
    ids = torch.randint(0, 64, (2, seq))
    out = compiled(input_ids=ids, attention_mask=torch.ones_like(ids), labels=ids)
    out.loss.backward()
    opt.step()
    opt.zero_grad()
with torch.no_grad():  # validation: grad mode changes
    ids = torch.randint(0, 64, (2, 24))
    compiled(input_ids=ids, attention_mask=torch.ones_like(ids), labels=ids)
