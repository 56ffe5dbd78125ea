"""A tiny BERT (from a config) called with two sequence lengths: the seq dim of `input_ids` recompiles.

argv[1] applies a fix by hand: `mark` (torch._dynamo.mark_dynamic(input_ids, 1)), `maybe`
(maybe_mark_dynamic), `dynamic` (torch.compile(..., dynamic=True)); none: as a user wrote it.
"""

import sys

import torch
from transformers import BertConfig, BertModel

mode = sys.argv[1] if len(sys.argv) > 1 else ""
torch.manual_seed(0)
cfg = BertConfig(
    vocab_size=100,
    hidden_size=32,
    num_hidden_layers=1,
    num_attention_heads=2,
    intermediate_size=64,
    max_position_embeddings=64,
)
model = BertModel(cfg).eval()
compiled = torch.compile(model, backend="eager", dynamic=True if mode == "dynamic" else None)
with torch.no_grad():
    for length in (8, 12, 16):
        ids = torch.randint(0, 100, (2, length))
        if mode == "mark":
            torch._dynamo.mark_dynamic(ids, 1)
        elif mode == "maybe":
            torch._dynamo.maybe_mark_dynamic(ids, 1)
        compiled(input_ids=ids, attention_mask=torch.ones_like(ids))
