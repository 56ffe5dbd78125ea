"""A tiny HF BART (from a config, random weights): `model = torch.compile(model)` then
`model.generate(...)`, as users write it. generate() calls the original module, never the compiled
wrapper: nothing compiles."""

import torch
from transformers import BartConfig, BartForConditionalGeneration

torch.manual_seed(0)
cfg = BartConfig(
    vocab_size=96,
    d_model=32,
    encoder_layers=1,
    decoder_layers=1,
    encoder_attention_heads=2,
    decoder_attention_heads=2,
    encoder_ffn_dim=64,
    decoder_ffn_dim=64,
    max_position_embeddings=64,
)
model = torch.compile(BartForConditionalGeneration(cfg).eval(), backend="eager")
for n in (8, 12):
    ids = torch.randint(3, 96, (1, n))
    out = model.generate(input_ids=ids, max_new_tokens=4, do_sample=False, num_beams=1)
print(out.tolist())
