"""torch's own nn.LSTM compiled whole (`torch.compile(nn.LSTM(...))`), on batches of three
sequence lengths."""

import torch

torch.manual_seed(0)
lstm = torch.compile(torch.nn.LSTM(8, 16, batch_first=True), backend="eager")
with torch.no_grad():
    for n in (5, 9, 13):
        out, _ = lstm(torch.randn(2, n, 8))
print(tuple(out.shape))
