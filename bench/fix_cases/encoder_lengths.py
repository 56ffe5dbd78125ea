"""torch's own nn.TransformerEncoder compiled whole, on batches of three sequence lengths."""

import torch

torch.manual_seed(0)
layer = torch.nn.TransformerEncoderLayer(d_model=16, nhead=2, dim_feedforward=32, batch_first=True)
encoder = torch.compile(torch.nn.TransformerEncoder(layer, num_layers=2).eval(), backend="eager")
with torch.no_grad():
    for n in (6, 10, 14):
        out = encoder(torch.randn(2, n, 16))
print(tuple(out.shape))
