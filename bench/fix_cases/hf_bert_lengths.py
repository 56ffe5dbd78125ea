"""A tiny HF BERT (from a config) compiled whole, called with keyword inputs at three lengths."""

import torch
from transformers import BertConfig, BertModel

torch.manual_seed(0)
cfg = BertConfig(
    vocab_size=100, hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64
)
model = torch.compile(BertModel(cfg).eval(), backend="eager")
with torch.no_grad():
    for n in (8, 12, 16):
        ids = torch.randint(0, 100, (2, n))
        out = model(input_ids=ids, attention_mask=torch.ones_like(ids))
print(tuple(out.last_hidden_state.shape))
