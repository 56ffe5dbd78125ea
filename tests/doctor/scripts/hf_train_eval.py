"""A tiny HF model (random weights), trained a few steps, then evaluated after `model.eval()`.

The training calls are the most frequent input shapes, so doctor's re-timing replays one of them
after the script has switched the model to eval: it must replay it in train mode (and with
gradients), as the script called it, and compile nothing the script did not.
`python hf_train_eval.py [vit|wav2vec2|llama] [BACKEND]`.
"""

import sys

import torch
import transformers

name = sys.argv[1] if len(sys.argv) > 1 else "vit"
backend = sys.argv[2] if len(sys.argv) > 2 else "inductor"
torch.manual_seed(0)
if name == "vit":
    cfg = transformers.ViTConfig(
        hidden_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=64,
        image_size=16,
        patch_size=8,
        num_labels=4,
    )
    model = transformers.ViTForImageClassification(cfg)
    train_x, eval_x = torch.randn(4, 3, 16, 16), torch.randn(2, 3, 16, 16)
    kw = "pixel_values"
elif name == "wav2vec2":
    cfg = transformers.Wav2Vec2Config(
        hidden_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=64,
        conv_dim=(16, 16),
        conv_stride=(5, 2),
        conv_kernel=(10, 3),
        num_conv_pos_embeddings=16,
        num_conv_pos_embedding_groups=2,
        vocab_size=12,
    )
    model = transformers.Wav2Vec2ForCTC(cfg)
    train_x, eval_x = torch.randn(2, 800), torch.randn(1, 800)
    kw = "input_values"
else:
    cfg = transformers.LlamaConfig(
        hidden_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=2,
        intermediate_size=64,
        vocab_size=64,
        max_position_embeddings=64,
    )
    model = transformers.LlamaForCausalLM(cfg)
    train_x, eval_x = torch.randint(0, 64, (2, 16)), torch.randint(0, 64, (1, 16))
    kw = "input_ids"

cmodel = torch.compile(model, backend=backend)
opt = torch.optim.SGD(model.parameters(), lr=1e-3)
model.train()
for _ in range(4):
    loss = cmodel(**{kw: train_x}).logits.float().pow(2).mean()
    loss.backward()
    opt.step()
    opt.zero_grad()
model.eval()
with torch.no_grad():
    out = cmodel(**{kw: eval_x}).logits
print("eval", tuple(out.shape))
