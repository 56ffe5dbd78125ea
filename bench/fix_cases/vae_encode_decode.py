"""A tiny diffusers AutoencoderKL (from a config) compiled whole with `torch.compile(vae)` but
called, as diffusers pipelines call it, through `vae.encode` and `vae.decode`."""

import torch
from diffusers import AutoencoderKL

torch.manual_seed(0)
vae = AutoencoderKL(
    block_out_channels=(8,),
    down_block_types=("DownEncoderBlock2D",),
    up_block_types=("UpDecoderBlock2D",),
    latent_channels=2,
    norm_num_groups=4,
    layers_per_block=1,
).eval()
vae = torch.compile(vae, backend="eager")
with torch.no_grad():
    for size in (16, 24):
        z = vae.encode(torch.randn(1, 3, size, size)).latent_dist.mode()
        img = vae.decode(z).sample
print(tuple(img.shape))
