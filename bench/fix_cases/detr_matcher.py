"""A tiny HF DETR (from a config: a small ResNet backbone built from its config, nothing
downloaded) compiled whole and trained with labels: the Hungarian matcher loss (scipy) runs on
images holding 1, 2 and 3 boxes."""

import torch
from transformers import DetrConfig, DetrForObjectDetection, ResNetConfig

torch.manual_seed(0)
backbone = ResNetConfig(embedding_size=8, hidden_sizes=[8, 16], depths=[1, 1], out_features=["stage2"])
cfg = DetrConfig(
    use_timm_backbone=False,
    use_pretrained_backbone=False,
    backbone_config=backbone,
    d_model=16,
    encoder_layers=1,
    decoder_layers=1,
    encoder_attention_heads=2,
    decoder_attention_heads=2,
    encoder_ffn_dim=32,
    decoder_ffn_dim=32,
    num_queries=4,
    num_labels=3,
)
model = torch.compile(DetrForObjectDetection(cfg), backend="eager")
for boxes in (1, 2, 3):
    labels = [{"class_labels": torch.randint(0, 3, (boxes,)), "boxes": torch.rand(boxes, 4) * 0.5 + 0.25}]
    out = model(pixel_values=torch.randn(1, 3, 32, 32), labels=labels)
    out.loss.backward()
print(round(float(out.loss), 3))
