"""A real model's inference loop, the script `bench/doctor_real.py` runs `fxlens doctor` on.

`python bench/doctor_real_model.py MODEL [CALLS]`: MODEL is vit, wav2vec2, llama (HF transformers,
small configs, random weights: nothing is downloaded) or resnet (a hand-written ResNet-18
layout, BasicBlocks [2, 2, 2, 2]; torchvision is not installed here). The model is compiled with
inductor and called CALLS times in eval mode under `torch.no_grad()`. `build(MODEL)` gives the
model and its inputs, so the by-hand measurement times exactly the same call.
"""

from __future__ import annotations

import sys

import torch
from torch import nn


class _Basic(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.down = (
            nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))
            if stride != 1 or cin != cout
            else nn.Identity()
        )

    def forward(self, x):
        out = torch.relu(self.bn1(self.conv1(x)))
        return torch.relu(self.bn2(self.conv2(out)) + self.down(x))


class ResNet18(nn.Module):
    """torchvision's resnet18 layout (stem, 4 stages of 2 BasicBlocks, pool, fc), widths / 2."""

    def __init__(self, width: int = 32, classes: int = 100):
        super().__init__()
        self.stem = nn.Sequential(
            nn.Conv2d(3, width, 7, 2, 3, bias=False), nn.BatchNorm2d(width), nn.ReLU(), nn.MaxPool2d(3, 2, 1)
        )
        layers, cin = [], width
        for i, cout in enumerate([width, width * 2, width * 4, width * 8]):
            layers += [_Basic(cin, cout, 1 if i == 0 else 2), _Basic(cout, cout, 1)]
            cin = cout
        self.layers = nn.Sequential(*layers)
        self.fc = nn.Linear(cin, classes)

    def forward(self, x):
        x = self.layers(self.stem(x))
        return self.fc(torch.flatten(nn.functional.adaptive_avg_pool2d(x, 1), 1))


def build(name: str):
    """(model in eval mode, keyword inputs) for MODEL, seeded."""
    import transformers

    torch.manual_seed(0)
    if name == "vit":
        cfg = transformers.ViTConfig(
            hidden_size=128,
            num_hidden_layers=2,
            num_attention_heads=2,
            intermediate_size=512,
            image_size=64,
            patch_size=16,
            num_labels=100,
        )
        return transformers.ViTForImageClassification(cfg).eval(), {"pixel_values": torch.randn(2, 3, 64, 64)}
    if name == "wav2vec2":
        cfg = transformers.Wav2Vec2Config(
            hidden_size=128,
            num_hidden_layers=2,
            num_attention_heads=2,
            intermediate_size=512,
            conv_dim=(32, 32, 32, 32),
            conv_stride=(5, 2, 2, 2),
            conv_kernel=(10, 3, 3, 2),
            num_conv_pos_embeddings=32,
            num_conv_pos_embedding_groups=4,
            vocab_size=32,
        )
        return transformers.Wav2Vec2ForCTC(cfg).eval(), {"input_values": torch.randn(1, 4000)}
    if name == "llama":
        cfg = transformers.LlamaConfig(
            hidden_size=128,
            num_hidden_layers=2,
            num_attention_heads=4,
            num_key_value_heads=4,
            intermediate_size=344,
            vocab_size=1000,
            max_position_embeddings=256,
        )
        ids = torch.randint(0, 1000, (1, 32))
        return transformers.LlamaForCausalLM(cfg).eval(), {"input_ids": ids, "use_cache": False}
    if name == "resnet":
        return ResNet18(width=16).eval(), {"x": torch.randn(2, 3, 64, 64)}
    raise SystemExit(f"unknown model {name!r}: vit, wav2vec2, llama or resnet")


if __name__ == "__main__":
    model, inputs = build(sys.argv[1] if len(sys.argv) > 1 else "vit")
    cmodel = torch.compile(model)
    with torch.no_grad():
        for _ in range(int(sys.argv[2]) if len(sys.argv) > 2 else 30):
            out = cmodel(**inputs)
    print(type(out).__name__)
