"""More tiny HF architectures (from configs: no download) called as users call them: keyword inputs,
a training step at two sequence lengths, then validation under torch.no_grad(). ARCH: mistral, qwen2,
qwen3, gemma, gemma2, phi, mixtral, opt, neox, t5, bart."""

import sys

import torch
import transformers as T

arch = sys.argv[1]
torch.manual_seed(0)
small = dict(
    vocab_size=64,
    hidden_size=16,
    intermediate_size=32,
    num_hidden_layers=1,
    num_attention_heads=2,
    num_key_value_heads=1,
    max_position_embeddings=64,
)
if arch in ("mistral", "qwen2", "qwen3", "gemma", "gemma2", "phi", "mixtral"):
    cfg = {
        "mistral": T.MistralConfig,
        "qwen2": T.Qwen2Config,
        "qwen3": T.Qwen3Config,
        "gemma": T.GemmaConfig,
        "gemma2": T.Gemma2Config,
        "phi": T.PhiConfig,
        "mixtral": T.MixtralConfig,
    }[arch]
    extra = {"head_dim": 8} if arch.startswith(("gemma", "qwen3")) else {}
    if arch == "mixtral":
        extra = {"num_local_experts": 2, "num_experts_per_tok": 1}
    model = T.AutoModelForCausalLM.from_config(cfg(**small, **extra))
elif arch == "opt":
    model = T.OPTForCausalLM(
        T.OPTConfig(
            vocab_size=64,
            hidden_size=16,
            ffn_dim=32,
            num_hidden_layers=1,
            num_attention_heads=2,
            max_position_embeddings=64,
            word_embed_proj_dim=16,
        )
    )
elif arch == "neox":
    model = T.GPTNeoXForCausalLM(
        T.GPTNeoXConfig(
            vocab_size=64,
            hidden_size=16,
            intermediate_size=32,
            num_hidden_layers=1,
            num_attention_heads=2,
            max_position_embeddings=64,
        )
    )
elif arch == "t5":
    model = T.T5ForConditionalGeneration(
        T.T5Config(
            vocab_size=64,
            d_model=16,
            d_kv=8,
            d_ff=32,
            num_layers=1,
            num_decoder_layers=1,
            num_heads=2,
            decoder_start_token_id=0,
        )
    )
elif arch == "bart":
    model = T.BartForConditionalGeneration(
        T.BartConfig(
            vocab_size=64,
            d_model=16,
            encoder_layers=1,
            decoder_layers=1,
            encoder_attention_heads=2,
            decoder_attention_heads=2,
            encoder_ffn_dim=32,
            decoder_ffn_dim=32,
            max_position_embeddings=64,
        )
    )
compiled = torch.compile(model, backend="eager")
opt = torch.optim.SGD(model.parameters(), lr=0.01)
model.train()
for seq in (16, 24):
    ids = torch.randint(1, 64, (2, seq))
    out = compiled(input_ids=ids, attention_mask=torch.ones_like(ids), labels=ids)
    out.loss.backward()
    opt.step()
    opt.zero_grad()
with torch.no_grad():
    ids = torch.randint(1, 64, (2, 24))
    compiled(input_ids=ids, attention_mask=torch.ones_like(ids), labels=ids)
