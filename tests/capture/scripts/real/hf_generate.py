"""HF generate() with a compiled forward, as the HF docs show: model.forward = torch.compile(model.forward).

`hf_generate.py llama module`: the classic mistake instead, `compiled = torch.compile(model)` then
`compiled.generate(...)`, which runs the original module and compiles nothing."""

import sys

import torch
import transformers as T

arch = sys.argv[1] if len(sys.argv) > 1 else "llama"
torch.manual_seed(0)
if arch == "llama":
    model = T.LlamaForCausalLM(
        T.LlamaConfig(
            vocab_size=64,
            hidden_size=16,
            intermediate_size=32,
            num_hidden_layers=1,
            num_attention_heads=2,
            num_key_value_heads=1,
            max_position_embeddings=64,
        )
    )
else:
    model = T.GPT2LMHeadModel(T.GPT2Config(vocab_size=64, n_embd=16, n_layer=1, n_head=2, n_positions=64))
model.eval()
ids = torch.randint(1, 64, (1, 8))
kwargs = dict(attention_mask=torch.ones_like(ids), max_new_tokens=6, do_sample=False, pad_token_id=0)
if sys.argv[2:] == ["module"]:
    compiled = torch.compile(model, backend="eager")
    out = compiled.generate(input_ids=ids, **kwargs)
else:
    model.forward = torch.compile(model.forward, backend="eager")
    out = model.generate(input_ids=ids, **kwargs)
print(out.shape)
