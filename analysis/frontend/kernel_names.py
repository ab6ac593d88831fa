"""Kernel names: one function for each way a stage shortens a name.

A kernel has three names. The SASS and the reports of Nsight Compute key it by its Itanium-
mangled name (`_Z5scaleILi256EEvPfi`); the result shows the demangled one
(`void ns::scale<256>(float*, int)`); the source declares the identifier (`scale`), which is
what launch sites, annotations and settings name. Every match between two of these goes
through here, so a kernel in a namespace, a template instance or an anonymous namespace
matches in every stage or in none.
"""

from __future__ import annotations

import re


def base_name(demangled: str) -> str:
    """`void ns::scale<256>(float*, int)` -> `scale`: the identifier as written at the definition.

    Return type, namespaces, template arguments and parameters go; a kernel in an anonymous
    namespace (`(anonymous namespace)::k(int)`) is `k`. A name with nothing to trim is itself."""
    s = _strip_trailing_group(demangled.strip(), "(", ")")
    s = _strip_trailing_group(s, "<", ">")
    return re.split(r"[\s:*&]+", s)[-1] if s else demangled


def without_parameters(demangled: str) -> str:
    """`void ns::scale<256>(float*, int)` -> `void ns::scale<256>`: the name a label has room for."""
    return _strip_trailing_group(demangled.strip(), "(", ")")


def instance_name(demangled: str) -> str:
    """`void MatrixMulCUDA<32>(float*, ...)` -> `MatrixMulCUDA<32>`: which instance of a template,
    as a user would write it in a setting (the return type every kernel has left out)."""
    return without_parameters(demangled).removeprefix("void ").strip()


def mangled_base_name(mangled: str) -> str:
    """Base function name from an Itanium-mangled name (`_Z10naive_gemmPKf...` -> `naive_gemm`,
    `_ZN2ns6kernelEv` -> `kernel`); an unmangled (extern "C") name is its own base name."""
    if not mangled.startswith("_Z"):
        return mangled
    s = mangled[2:]
    nested = s.startswith("N")
    if nested:
        s = s[1:]
        while s[:1] in ("K", "V", "r"):  # cv-qualifiers of a nested member function
            s = s[1:]
    last = mangled
    while s and s[0].isdigit():
        n = re.match(r"\d+", s)
        assert n is not None
        length = int(n.group())
        start = n.end()
        last = s[start:start + length]
        s = s[start + length:]
        if not nested:
            break
        if s.startswith("I"):  # template args of an intermediate component: give up there
            break
    return last


def _strip_trailing_group(s: str, open_: str, close: str) -> str:
    """`s` without its last balanced `open_ ... close` group, where it ends with one."""
    if not s.endswith(close):
        return s
    depth = 0
    for i in range(len(s) - 1, -1, -1):
        depth += (s[i] == close) - (s[i] == open_)
        if depth == 0:
            return s[:i].rstrip()
    return s
