"""A DataLoader loop with a short last batch, and a no_grad eval at the end."""

import torch
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
data = TensorDataset(torch.randn(20, 8), torch.randn(20, 1))
loader = DataLoader(data, batch_size=8)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
cmodel = torch.compile(model, backend="aot_eager")
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for x, y in loader:
    loss = torch.nn.functional.mse_loss(cmodel(x), y)
    loss.backward()
    opt.step()
    opt.zero_grad()
with torch.no_grad():
    print(float(cmodel(torch.randn(8, 8)).sum()))
