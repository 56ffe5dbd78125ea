"""ATen -> IR lowerings, one module per op family, and the AOTAutograd step that produces ATen graphs.

`aot` holds the decomposition table and the `fxlens_aot_eager` stage (re-exported here, where they
lived as the module `fxlens.backend.lower`). `core` holds the lowering table and its building blocks
(`register`, `pointwise`, `reduction`); every other module registers one family of ops into it when
imported. Importing this package registers nothing and stays as cheap as the old module was.
"""

from fxlens.backend.lower.aot import aot_eager_compile, aot_options, decomposition_table

__all__ = ["aot_eager_compile", "aot_options", "decomposition_table"]
