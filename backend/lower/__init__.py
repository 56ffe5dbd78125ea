"""ATen -> IR lowerings, one module per op family, and the AOTAutograd step that produces ATen graphs.

`aot` holds the decomposition table and the `fxlens_aot_eager` stage. `core` holds the lowering
table and its building blocks (`register`, `pointwise`, `reduction`); every other module registers
one family of ops into it when imported, and `table` imports them all. Importing this package
registers nothing.
"""
