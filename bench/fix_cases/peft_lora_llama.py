"""peft LoRA adapters on a tiny HF Llama (from a config), the peft model compiled whole and
called with keyword inputs at two sequence lengths."""

import torch
from peft import LoraConfig, get_peft_model
from transformers import LlamaConfig, LlamaForCausalLM

torch.manual_seed(0)
cfg = LlamaConfig(
    vocab_size=128,
    hidden_size=32,
    intermediate_size=64,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    max_position_embeddings=64,
)
lora = LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"])
model = torch.compile(get_peft_model(LlamaForCausalLM(cfg), lora).eval(), backend="eager")
with torch.no_grad():
    for n in (8, 12):
        ids = torch.randint(0, 128, (1, n))
        out = model(input_ids=ids, attention_mask=torch.ones_like(ids), use_cache=False)
print(tuple(out.logits.shape))
