"""A module called with its input as a keyword (`m(input=x)`, as HF models take `input_ids=`), whose
batch size changes: torch's recompile reason names `kwargs['input']`, its guard tree
`L['kwargs']['input']`."""

import torch

torch._dynamo.config.automatic_dynamic_shapes = False
m = torch.compile(torch.nn.Linear(4, 4), backend="eager")
m(input=torch.ones(2, 4))
m(input=torch.ones(3, 4))
