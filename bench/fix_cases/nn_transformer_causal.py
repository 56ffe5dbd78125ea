"""nn.Transformer called with a causal tgt_mask: the decoder compares the mask with a causal one
(a Python bool of a tensor: a graph break inside torch/nn/modules/transformer.py)."""

import torch

m = torch.nn.Transformer(
    d_model=16, nhead=2, num_encoder_layers=1, num_decoder_layers=1, dim_feedforward=32, batch_first=True
)
f = torch.compile(m, backend="eager")
src, tgt = torch.randn(2, 5, 16), torch.randn(2, 4, 16)
mask = torch.nn.Transformer.generate_square_subsequent_mask(4)
print(f(src, tgt, tgt_mask=mask).shape)
