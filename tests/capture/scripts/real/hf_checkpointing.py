"""A tiny HF Llama (from its config) trained with gradient checkpointing, keyword inputs: torch gives
up on some of transformers' frames (breaks it cannot resume inside them), which then run eagerly."""

import torch
from transformers import LlamaConfig, LlamaForCausalLM

torch.manual_seed(0)
config = LlamaConfig(
    vocab_size=64,
    hidden_size=16,
    intermediate_size=32,
    num_hidden_layers=2,
    num_attention_heads=2,
    num_key_value_heads=1,
    max_position_embeddings=64,
)
model = LlamaForCausalLM(config)
model.gradient_checkpointing_enable()
compiled = torch.compile(model, backend="eager")
opt = torch.optim.SGD(model.parameters(), lr=1e-3)
model.train()
for _ in range(2):
    ids = torch.randint(1, 64, (2, 16))
    compiled(input_ids=ids, labels=ids).loss.backward()
    opt.step()
    opt.zero_grad()
