"""Hand-written `nvdisasm -gi -hex -c` listings for parser, CFG and ISA tests.

The layout is nvdisasm 13's (see tests/data/nvdisasm_sm90.txt, captured from a real run): a
`.target`, one section per function, and per instruction its PC, text and two encoding words.
"""

from __future__ import annotations

#: A plain control word (no barriers, no waits): only `--hex` layout matters to these tests.
_CONTROL = "0x000fe20000000800"


def text_listing(instrs: list[dict], name: str = "_Z1fv", arch: str = "sm_90", entry: bool = True) -> str:
    """`instrs`: {"opcode": "ISETP.GE.AND", "operands": "P0,PT,R0,R1,PT", "predicate": "@P0"}."""
    out = [f"\t.target\t{arch}", "", f"//--------------------- .text.{name} --------------------------",
           f"        .type           {name},@function"]
    if entry:
        out.append(f'        .other          {name},@"STO_CUDA_ENTRY STV_DEFAULT"')
    out.append(f"{name}:")
    for i, ins in enumerate(instrs):
        operands = ", ".join(ins["operands"].split(",")) if ins.get("operands") else ""
        text = " ".join(x for x in (ins.get("predicate", ""), ins["opcode"], operands) if x)
        out.append(f"        /*{16 * i:04x}*/                   {text} ;     /* 0x0000000000000000 */")
        out.append(f"                                                  /* {_CONTROL} */")
    return "\n".join(out) + "\n"
