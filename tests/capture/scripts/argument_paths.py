"""A detection-style model: the compiled call's own argument path names the tensor that changed.

`labels` is a list of dicts (DETR's targets); a new box count recompiles on `labels[0]['boxes']`,
a tensor the script passes, guarded in the code resumed after a graph break. The resumed code also
guards the model's own hidden state, whose layout a module setting decides: a tensor the script
never holds (no input to make contiguous).
"""

import torch


class Detector(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(4, 4)
        self.transposed = False

    def forward(self, pixel_values, labels=None):
        hidden = self.proj(pixel_values)
        if self.transposed:
            hidden = hidden.t()  # same sizes (square), other strides
        torch._dynamo.graph_break()  # a break, as DETR's matcher has: the rest is a resumed frame
        loss = hidden.sum(0).sum()
        if labels is not None:
            loss = loss + labels[0]["boxes"].sum()
        return loss


model = Detector()
compiled = torch.compile(model, backend="eager", dynamic=False)
for boxes in (3, 5):
    compiled(torch.randn(4, 4), labels=[{"boxes": torch.randn(boxes, 4)}])
model.transposed = True
compiled(torch.randn(4, 4), labels=[{"boxes": torch.randn(5, 4)}])
