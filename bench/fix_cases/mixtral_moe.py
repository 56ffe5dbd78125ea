"""A tiny HF Mixtral (mixture of experts, from a config) compiled whole, called with keyword
inputs at two sequence lengths."""

import torch
from transformers import MixtralConfig, MixtralForCausalLM

torch.manual_seed(0)
cfg = MixtralConfig(
    vocab_size=128,
    hidden_size=32,
    intermediate_size=64,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    num_local_experts=4,
    num_experts_per_tok=2,
    max_position_embeddings=64,
)
model = torch.compile(MixtralForCausalLM(cfg).eval(), backend="eager")
with torch.no_grad():
    for n in (8, 12):
        ids = torch.randint(0, 128, (1, n))
        out = model(input_ids=ids, attention_mask=torch.ones_like(ids), use_cache=False)
print(tuple(out.logits.shape))
