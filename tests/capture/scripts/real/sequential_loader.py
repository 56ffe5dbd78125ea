"""torch.compile(nn.Sequential(...)) in a DataLoader train/eval loop: the last short batch, then
evaluation under torch.no_grad()."""

import torch
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 2))
compiled = torch.compile(model, backend="aot_eager")
opt = torch.optim.SGD(model.parameters(), lr=0.1)
data = torch.utils.data.TensorDataset(torch.randn(10, 8), torch.randint(0, 2, (10,)))
for _epoch in range(2):
    model.train()
    for x, y in torch.utils.data.DataLoader(data, batch_size=4):  # 4, 4, 2: drop_last=False
        loss = nn.functional.cross_entropy(compiled(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad()
    model.eval()
    with torch.no_grad():
        for x, _ in torch.utils.data.DataLoader(data, batch_size=4):
            compiled(x)
