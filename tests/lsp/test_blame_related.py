"""Blame as navigation (#17 item 7): on a real analysis, a stall diagnostic's relatedInformation leads
to the line of the instruction the stalled one waits on (GPA's def→use blame)."""

from lsprotocol import types


async def test_related_information_leads_to_the_instruction_waited_on(lsp):
    async with lsp() as s:
        await s.open("naive_gemm.cu")
        lines = s.text("naive_gemm.cu").splitlines()
        related = [(d, r) for d in s.diagnostics("naive_gemm.cu") if d.source == "kernelscope"
                   for r in d.related_information or () if "feeds" in r.message]
        assert related, [d.message for d in s.diagnostics("naive_gemm.cu")]
        for d, r in related:
            assert r.location.uri == s.uri("naive_gemm.cu")
            assert r.location.range.start.line != d.range.start.line  # elsewhere: worth a jump
            assert lines[r.location.range.start.line].strip()  # a real source line
            assert isinstance(r.location.range, types.Range)
        # one entry per source pair: the unrolled loop's five LDG->FFMA pairs on line 11 are one
        pairs = [(d.range.start.line, r.location.range.start.line, r.message.split(" (")[0]) for d, r in related]
        assert len(pairs) == len(set(pairs)), pairs
