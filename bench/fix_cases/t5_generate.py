"""A tiny HF T5 (from a config) compiled with `torch.compile(model)` and then used through
`generate()`, which calls the module's own methods and never what torch.compile returned."""

import torch
from transformers import T5Config, T5ForConditionalGeneration

torch.manual_seed(0)
cfg = T5Config(
    vocab_size=64,
    d_model=16,
    d_kv=8,
    d_ff=32,
    num_layers=1,
    num_decoder_layers=1,
    num_heads=2,
    decoder_start_token_id=0,
    pad_token_id=0,
    eos_token_id=1,
)
model = torch.compile(T5ForConditionalGeneration(cfg).eval(), backend="eager")
with torch.no_grad():
    out = model.generate(torch.randint(2, 64, (1, 6)), max_new_tokens=4, do_sample=False)
print(out.tolist())
