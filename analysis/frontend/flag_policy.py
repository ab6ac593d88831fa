"""Which nvcc flags a source other than the user's own settings may add (docs/configuration.md, "Security").

A file inside a workspace (a cloned repository's .kernelscope.toml or pyproject.toml) and the
editor settings of an untrusted workspace may only ask for flags that change what the compiler
makes of the code, never which program runs or what a shell sees:

- nvcc hands `-D`/`-U` values to /bin/sh inside double quotes (`nvcc --dryrun '-DX=$(id)'` shows
  `-D "X=$(id)"` in the host preprocessor's command line), so `-DKS=$(touch marker)` runs `touch`;
- `--forward-unknown-to-host-compiler -B<dir>/` makes gcc run `<dir>/cc1plus`; `-ccbin`,
  `-Xcompiler` and `--options-file` choose or feed another program the same way.

So such flags pass an allow-list, and no character a shell treats specially may appear in them.
Pure: the callers (server/settings.py) decide whose flags these are and say so.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

#: what /bin/sh gives a meaning to, inside double quotes (`$`, backtick, `\`, `"`) or outside them;
#: whitespace and control characters split or end a command
SHELL_METACHARACTERS = frozenset("$`\\\"';|&<>()*?[]{}~!#") | frozenset(chr(c) for c in range(33)) | {"\x7f"}

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_TRUE_FALSE = re.compile(r"true|false")


def _macro_definition(value: str) -> bool:
    name, _, _ = value.partition("=")
    return _IDENTIFIER.fullmatch(name) is not None


def _path(value: str) -> bool:
    return bool(value) and not value.startswith("-")


_ARCH = re.compile(r"[A-Za-z0-9_.,=+-]+")

#: flags that take a value (`-I dir`, `-Idir`, `--include-path=dir`): spellings -> the value's check
_WITH_VALUE: dict[tuple[str, ...], Callable[[str], bool]] = {
    ("-I", "--include-path"): _path,
    ("-isystem", "--system-include"): _path,
    ("-D", "--define-macro"): _macro_definition,
    ("-U", "--undefine-macro"): lambda v: _IDENTIFIER.fullmatch(v) is not None,
    ("-std", "--std"): lambda v: re.fullmatch(r"(c|gnu)\+\+\d\d", v) is not None,
    ("-arch", "--gpu-architecture", "-gencode", "--generate-code", "-code", "--gpu-code"):
        lambda v: _ARCH.fullmatch(v) is not None,
    ("-maxrregcount", "--maxrregcount"): str.isdigit,
    ("-rdc", "--relocatable-device-code"): lambda v: _TRUE_FALSE.fullmatch(v) is not None,
    ("-ftz", "--ftz", "-prec-div", "--prec-div", "-prec-sqrt", "--prec-sqrt", "-fmad", "--fmad"):
        lambda v: _TRUE_FALSE.fullmatch(v) is not None,
    ("-default-stream", "--default-stream"): lambda v: v in ("legacy", "null", "per-thread"),
}
#: flags that stand alone
_ALONE = frozenset({
    "-O0", "-O1", "-O2", "-O3", "-lineinfo", "--generate-line-info", "-G", "--device-debug", "-g", "--debug",
    "-use_fast_math", "--use_fast_math", "-extended-lambda", "--extended-lambda", "-restrict", "--restrict",
    "-w", "--disable-warnings", "-Wno-deprecated-gpu-targets", "--Wno-deprecated-gpu-targets",
})
#: the `--expt-*` family (relaxed constexpr, extended lambdas): language extensions, nothing more
_EXPT = re.compile(r"--?expt-[a-z-]+")

#: what the allow-list holds, in words: said with every refusal, so that the user knows what may be asked for
ALLOWED = ("include paths (-I, -isystem), -D NAME[=VALUE], -U NAME, -std=c++NN, --expt-*, "
           "-arch/-gencode/-code, -O0..-O3, -lineinfo, -G, -maxrregcount=N, --use_fast_math, -rdc=true|false, "
           "--extended-lambda, --ftz/--prec-div/--prec-sqrt/--fmad=true|false, --default-stream, -w")


def shell_metacharacter(flag: str) -> str | None:
    """The first character of `flag` that a shell would interpret, or None."""
    return next((c for c in flag if c in SHELL_METACHARACTERS), None)


def refused_flag(flags: Sequence[str]) -> str | None:
    """Why `flags` may not come from a workspace file or an untrusted workspace: the first flag
    refused and the reason (without `ALLOWED`), or None when every flag is allowed."""
    i = 0
    while i < len(flags):
        flag = flags[i]
        for text in (flag, flags[i + 1] if _takes_next(flag) and i + 1 < len(flags) else ""):
            if (c := shell_metacharacter(text)) is not None:
                return f"{text!r} holds {c!r}, which a shell would interpret"
        consumed, known = _allowed(flags, i)
        if consumed is None:
            return f"{flag!r} has a value outside the allow-list" if known else f"{flag!r} is not on the allow-list"
        i += consumed
    return None


def _takes_next(flag: str) -> bool:
    return any(flag in names for names in _WITH_VALUE)


def _allowed(flags: Sequence[str], i: int) -> tuple[int | None, bool]:
    """(how many arguments the flag at `i` spans, or None when it is refused; whether its name is allowed)."""
    flag = flags[i]
    if flag in _ALONE or _EXPT.fullmatch(flag):
        return 1, True
    for names, check in _WITH_VALUE.items():
        for name in names:
            if flag == name:  # the value is the next argument
                return (2 if i + 1 < len(flags) and check(flags[i + 1]) else None), True
            if flag.startswith(name + "="):
                return (1 if check(flag[len(name) + 1:]) else None), True
            if name in ("-I", "-D", "-U") and flag.startswith(name) and len(flag) > 2:  # -Idir, -DNAME=1
                return (1 if check(flag[2:]) else None), True
    return None, False
