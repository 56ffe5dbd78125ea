"""torchvision's resnet18 (random weights, nothing downloaded) compiled whole, trained on one
DataLoader and evaluated on another whose last batch is short (10 images in batches of 4)."""

import torch
import torchvision
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
model = torchvision.models.resnet18(num_classes=4)
cmodel = torch.compile(model, backend="eager")
train = DataLoader(TensorDataset(torch.randn(8, 3, 32, 32), torch.randint(0, 4, (8,))), batch_size=4)
val = DataLoader(TensorDataset(torch.randn(10, 3, 32, 32), torch.randint(0, 4, (10,))), batch_size=4)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
model.train()
for x, y in train:
    torch.nn.functional.cross_entropy(cmodel(x), y).backward()
    opt.step()
    opt.zero_grad()
model.eval()
correct = 0
with torch.no_grad():
    for x, y in val:
        correct += int((cmodel(x).argmax(-1) == y).sum())
print("val correct", correct)
