"""Reading a cubin directly: its ELF sections and symbols, its line table, and its SASS.

`listing.decode_cubin` gives the `SassModule` that `nvdisasm -gi -hex -c` would, from
per-architecture encoding tables (`encoding`, data in `analysis/data/sass_encodings/`) that
`learn` derives from nvdisasm itself; what the tables do not cover is left to nvdisasm.
"""
