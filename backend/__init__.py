"""fxlens's compiler: staged torch.compile backends (see `fxlens.backend.stages.STAGES`).

Importing this package must stay cheap: `torch.compile(backend="fxlens")` resolves through the
`torch_dynamo_backends` entry point to `fxlens.backend.registry`, which imports stages lazily.
"""
