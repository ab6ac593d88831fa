"""Control-flow graph, dominators and natural loops of one SASS function.

Blocks follow the classic leader rules on SASS: the entry, every static branch target,
every subroutine entry and call target, and the instruction after a BRA/BRX/JMP/JMX/EXIT/RET
(predicated or not: a predicated branch falls through, and starting a block there keeps
blocks single-exit). CALL is not an edge: the callee returns to the next instruction, except
a `CALL.REL.NOINC` to a local label (`isa.call_is_jump`), which is a branch: a loop's exit.
BSSY/BSYNC only mark where divergent threads reconverge; they are recorded in
`reconvergence`, not turned into edges.

Dominators use Cooper, Harvey & Kennedy, "A Simple, Fast Dominance Algorithm" (2001), over a
virtual root whose children are the entry and all subroutine entries, so callees placed in a
kernel's section are analysed too.
"""

from __future__ import annotations

from enum import Enum

from pydantic import BaseModel, ConfigDict

from .instructions import Instruction, SassFunction, SourceLocation
from .isa import call_is_jump, calls_subroutine

_ENDS_FLOW = frozenset({"EXIT", "RET", "KILL", "RTT"})
_STATIC = frozenset({"BRA", "JMP"})
_INDIRECT = frozenset({"BRX", "BRXU", "JMX", "JMXU"})
_NEVER = "!PT"


class EdgeKind(str, Enum):
    TAKEN = "taken"
    FALLTHROUGH = "fallthrough"
    INDIRECT = "indirect"  # a BRX/JMX target guessed conservatively (see `build_cfg`)


class Edge(BaseModel):
    model_config = ConfigDict(frozen=True)

    src: int  # block index
    dst: int
    kind: EdgeKind


class BasicBlock(BaseModel):
    model_config = ConfigDict(frozen=True)

    index: int
    start: int  # first instruction index
    end: int  # one past the last instruction index
    start_pc: int
    successors: tuple[int, ...]
    predecessors: tuple[int, ...]
    reachable: bool

    @property
    def last(self) -> int:
        return self.end - 1


class Loop(BaseModel):
    model_config = ConfigDict(frozen=True)

    index: int
    header: int  # block index
    latches: tuple[int, ...]  # blocks with a back edge to the header
    body: frozenset[int]  # block indices, header included
    exits: tuple[Edge, ...]  # edges leaving the body
    parent: int | None  # enclosing loop index
    depth: int  # 1 for outermost
    index_range: tuple[int, int]  # [first, last] instruction index over the body blocks
    instruction_count: int
    source_lines: tuple[SourceLocation, ...]  # lines of body instructions and their inline call sites


class CFG(BaseModel):
    model_config = ConfigDict(frozen=True)

    function: str  # mangled name
    blocks: tuple[BasicBlock, ...]
    edges: tuple[Edge, ...]
    roots: tuple[int, ...]  # entry block first, then subroutine entries / call targets
    block_of: tuple[int, ...]  # instruction index -> block index
    idom: tuple[int | None, ...]  # immediate dominator per block; None for roots and unreachable blocks
    back_edges: tuple[Edge, ...]
    loops: tuple[Loop, ...]  # outer loops before the loops they contain
    reconvergence: tuple[tuple[int, int], ...]  # (BSSY index, index of its reconvergence point)
    notes: tuple[str, ...]  # approximations made (indirect branches, irreducible flow)
    dom_pre: tuple[int, ...]  # dominator-tree preorder interval, for O(1) dominance queries
    dom_post: tuple[int, ...]

    def block_dominates(self, a: int, b: int) -> bool:
        if a == b:
            return True
        if not (self.blocks[a].reachable and self.blocks[b].reachable):
            return False
        return self.dom_pre[a] < self.dom_pre[b] and self.dom_post[b] < self.dom_post[a]

    def dominates(self, a_index: int, b_index: int) -> bool:
        """Whether instruction a is on every path from a root to instruction b."""
        ba, bb = self.block_of[a_index], self.block_of[b_index]
        if ba == bb:
            return a_index <= b_index
        return self.block_dominates(ba, bb)

    def predecessors(self, block: int) -> tuple[int, ...]:
        return self.blocks[block].predecessors

    def successors(self, block: int) -> tuple[int, ...]:
        return self.blocks[block].successors

    def instruction_predecessors(self) -> tuple[tuple[int, ...], ...]:
        """Predecessors of every instruction by index: the one before it inside its block, or the
        last instruction of each predecessor block at a block's start."""
        preds: list[tuple[int, ...]] = []
        for b in self.blocks:
            preds.append(tuple(sorted(self.blocks[p].last for p in b.predecessors)))
            preds.extend((i - 1,) for i in range(b.start + 1, b.end))
        return tuple(preds)

    def innermost_loop(self, index: int) -> Loop | None:
        b = self.block_of[index]
        inner = [lp for lp in self.loops if b in lp.body]
        return max(inner, key=lambda lp: lp.depth) if inner else None


def _is_static(ins: Instruction) -> bool:
    return ins.opcode in _STATIC or call_is_jump(ins)


def _is_conditional(ins: Instruction) -> bool:
    # `BRA.U !UP0, 0x..` and `BRA.DIV UR4, 0x..` carry their condition as an operand.
    if ins.predicate is not None:
        return True
    return any(op not in ("PT", "UPT") for op in ins.operands[:-1])


def _never_executes(ins: Instruction) -> bool:
    return ins.predicate in (_NEVER, "!UPT")


def build_cfg(fn: SassFunction) -> CFG:
    ins = fn.instructions
    n = len(ins)
    if n == 0:
        return CFG(function=fn.mangled_name, blocks=(), edges=(), roots=(), block_of=(), idom=(), back_edges=(),
                   loops=(), reconvergence=(), notes=(), dom_pre=(), dom_post=())
    pc_to_index = {x.pc: x.index for x in ins}
    entry_indices = [0] + [pc_to_index[s.pc] for s in fn.subroutines if s.pc in pc_to_index]
    entry_indices += [pc_to_index[x.branch_target] for x in ins
                      if calls_subroutine(x) and x.branch_target in pc_to_index]
    leaders = set(entry_indices)
    for x in ins:
        if _is_static(x) and x.branch_target in pc_to_index:
            leaders.add(pc_to_index[x.branch_target])
        if (_is_static(x) or x.opcode in _INDIRECT or x.opcode in _ENDS_FLOW) and x.index + 1 < n:
            leaders.add(x.index + 1)
    starts = sorted(leaders)
    block_of = [0] * n
    bounds = []
    for b, s in enumerate(starts):
        e = starts[b + 1] if b + 1 < len(starts) else n
        bounds.append((s, e))
        for i in range(s, e):
            block_of[i] = b
    nb = len(bounds)
    roots = tuple(dict.fromkeys(block_of[i] for i in entry_indices))

    edges: list[Edge] = []
    indirect_blocks: list[int] = []
    for b, (s, e) in enumerate(bounds):
        last = ins[e - 1]
        falls = e < n
        if _never_executes(last):
            pass
        elif _is_static(last):
            if last.branch_target in pc_to_index:
                edges.append(Edge(src=b, dst=block_of[pc_to_index[last.branch_target]], kind=EdgeKind.TAKEN))
            falls = falls and _is_conditional(last)
        elif last.opcode in _INDIRECT:
            indirect_blocks.append(b)
            falls = falls and last.predicate is not None
        elif last.opcode in _ENDS_FLOW:
            falls = falls and last.predicate is not None
        if falls:
            edges.append(Edge(src=b, dst=b + 1, kind=EdgeKind.FALLTHROUGH))

    notes: list[str] = []
    if indirect_blocks:
        # Jump-table targets are not in the listing; blocks no other edge reaches are the
        # candidates, so every BRX/JMX gets an edge to each of them (over-approximation).
        reached = {ed.dst for ed in edges} | set(roots)
        orphans = [b for b in range(nb) if b not in reached]
        for b in indirect_blocks:
            edges += [Edge(src=b, dst=o, kind=EdgeKind.INDIRECT) for o in orphans]
        notes.append(f"{len(indirect_blocks)} indirect branch(es): targets approximated by "
                     f"{len(orphans)} otherwise unreached block(s)")
    edges = list(dict.fromkeys(edges))

    succ: list[list[int]] = [[] for _ in range(nb)]
    pred: list[list[int]] = [[] for _ in range(nb)]
    for ed in edges:
        succ[ed.src].append(ed.dst)
        pred[ed.dst].append(ed.src)

    order = _reverse_postorder(roots, succ, nb)
    reachable = set(order)
    idom = _dominators(order, roots, pred, nb)
    dom_pre, dom_post = _dom_intervals(idom, roots, nb)

    blocks = tuple(BasicBlock(index=b, start=s, end=e, start_pc=ins[s].pc, successors=tuple(succ[b]),
                              predecessors=tuple(pred[b]), reachable=b in reachable)
                   for b, (s, e) in enumerate(bounds))

    def dom(a: int, b: int) -> bool:
        return a == b or (a in reachable and b in reachable and dom_pre[a] < dom_pre[b] and dom_post[b] < dom_post[a])

    rpo_pos = {b: k for k, b in enumerate(order)}
    back = tuple(ed for ed in edges if ed.src in reachable and dom(ed.dst, ed.src))
    retreating = [ed for ed in edges if ed.src in reachable and ed.dst in reachable
                  and rpo_pos[ed.dst] <= rpo_pos[ed.src] and ed not in back]
    if retreating:
        notes.append(f"irreducible control flow: {len(retreating)} retreating edge(s) are not back edges "
                     "and form no natural loop")
    loops = _natural_loops(back, pred, edges, bounds, ins)

    reconv = []
    for x in ins:
        if x.opcode == "BSSY" and x.operands:
            t = _hex(x.operands[-1])
            if t is not None and t in pc_to_index:
                reconv.append((x.index, pc_to_index[t]))

    return CFG(function=fn.mangled_name, blocks=blocks, edges=tuple(edges), roots=roots, block_of=tuple(block_of),
               idom=tuple(idom), back_edges=back, loops=loops, reconvergence=tuple(reconv), notes=tuple(notes),
               dom_pre=tuple(dom_pre), dom_post=tuple(dom_post))


def _hex(op: str) -> int | None:
    op = op.strip("`() ")
    try:
        return int(op, 16) if op.lower().startswith("0x") else None
    except ValueError:
        return None


def _reverse_postorder(roots: tuple[int, ...], succ: list[list[int]], nb: int) -> list[int]:
    seen = [False] * nb
    post: list[int] = []
    for r in roots:
        if seen[r]:
            continue
        seen[r] = True
        stack = [(r, iter(succ[r]))]
        while stack:
            node, it = stack[-1]
            nxt = next((s for s in it if not seen[s]), None)
            if nxt is None:
                post.append(node)
                stack.pop()
            else:
                seen[nxt] = True
                stack.append((nxt, iter(succ[nxt])))
    return post[::-1]


def _dominators(order: list[int], roots: tuple[int, ...], pred: list[list[int]], nb: int) -> list[int | None]:
    """Cooper-Harvey-Kennedy; the virtual root is index `nb` and is dropped from the result."""
    virtual = nb
    pos = {b: k + 1 for k, b in enumerate(order)}
    pos[virtual] = 0
    idom: dict[int, int] = {virtual: virtual}
    root_set = set(roots)
    for r in roots:
        idom[r] = virtual

    def intersect(a: int, b: int) -> int:
        while a != b:
            while pos[a] > pos[b]:
                a = idom[a]
            while pos[b] > pos[a]:
                b = idom[b]
        return a

    changed = True
    while changed:
        changed = False
        for b in order:
            if b in root_set:
                continue
            ps = [p for p in pred[b] if p in idom]
            if not ps:
                continue
            new = ps[0]
            for p in ps[1:]:
                new = intersect(p, new)
            if idom.get(b) != new:
                idom[b] = new
                changed = True
    return [None if (d := idom.get(b)) in (None, virtual) else d for b in range(nb)]


def _dom_intervals(idom: list[int | None], roots: tuple[int, ...], nb: int) -> tuple[list[int], list[int]]:
    children: list[list[int]] = [[] for _ in range(nb)]
    for b, d in enumerate(idom):
        if d is not None:
            children[d].append(b)
    pre, post = [-1] * nb, [-1] * nb
    clock = 0
    for r in roots:
        stack = [(r, False)]
        while stack:
            node, done = stack.pop()
            if done:
                post[node] = clock
                clock += 1
                continue
            pre[node] = clock
            clock += 1
            stack.append((node, True))
            stack.extend((c, False) for c in reversed(children[node]))
    return pre, post


def _natural_loops(back: tuple[Edge, ...], pred: list[list[int]], edges: list[Edge],
                   bounds: list[tuple[int, int]], ins: tuple[Instruction, ...]) -> tuple[Loop, ...]:
    by_header: dict[int, tuple[set[int], list[int]]] = {}
    for ed in back:
        body, latches = by_header.setdefault(ed.dst, ({ed.dst}, []))
        latches.append(ed.src)
        stack = [ed.src]
        while stack:
            b = stack.pop()
            if b not in body:
                body.add(b)
                stack.extend(pred[b])
    # Outer loops first: larger bodies before the loops they contain.
    ordered = sorted(by_header.items(), key=lambda kv: (-len(kv[1][0]), bounds[kv[0]][0]))
    loops: list[Loop] = []
    for k, (header, (body, latches)) in enumerate(ordered):
        parents = [lp for lp in loops if header in lp.body and body <= lp.body]
        parent = min(parents, key=lambda lp: len(lp.body)) if parents else None
        idx = [i for b in body for i in range(*bounds[b])]
        lines: set[SourceLocation] = set()
        for i in idx:
            x = ins[i]
            if x.location is not None:
                lines.add(x.location)
            lines.update(x.inline_chain)
        loops.append(Loop(
            index=k, header=header, latches=tuple(sorted(latches)), body=frozenset(body),
            exits=tuple(ed for ed in edges if ed.src in body and ed.dst not in body),
            parent=parent.index if parent else None, depth=parent.depth + 1 if parent else 1,
            index_range=(min(idx), max(idx)), instruction_count=len(idx),
            source_lines=tuple(sorted(lines, key=lambda loc: (loc.file, loc.line)))))
    return tuple(loops)
