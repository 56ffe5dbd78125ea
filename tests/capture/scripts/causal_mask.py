"""nn.Transformer seq2seq given a causal target mask: without `tgt_is_causal=True` torch checks the mask
(`_detect_is_causal_mask`: a Tensor.item() break); argv[1] `causal` passes the switch (the fix, by hand)."""

import sys

import torch

torch.manual_seed(0)
causal = len(sys.argv) > 1 and sys.argv[1] == "causal"
model = torch.nn.Transformer(
    d_model=32, nhead=2, num_encoder_layers=1, num_decoder_layers=1, dim_feedforward=64, batch_first=True
).eval()
compiled = torch.compile(model, backend="eager")
src, tgt = torch.randn(2, 6, 32), torch.randn(2, 5, 32)
mask = torch.nn.Transformer.generate_square_subsequent_mask(5)
with torch.no_grad():
    for _ in range(2):
        if causal:
            compiled(src, tgt, tgt_mask=mask, tgt_is_causal=True)
        else:
            compiled(src, tgt, tgt_mask=mask)
