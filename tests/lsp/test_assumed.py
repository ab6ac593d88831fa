"""#14 item 5 in the editor: a default launch or value says "assumed" in the lens and the hover; one read
from the source does not. Also the inlay hint's label on a hand-made hot line."""

from kernelscope.analysis.profile import Assumption
from kernelscope.server.features import hover, inlay, lens

from test_features_unit import URI, _all, _result, _view


def _with(*assumptions):
    r = _result()
    k = r.kernels[0].model_copy(update={"assumptions": assumptions})
    return r.model_copy(update={"kernels": (k,)})


def test_default_launch_is_assumed_in_lens_and_hover():
    default = (Assumption(name="grid", value="(656, 1, 1)", source="default"),
               Assumption(name="block", value="(256, 1, 1)", source="default"))
    _, view = _view(_with(*default))
    (lz,) = lens.build(view, URI)
    assert "launch assumed" in lz.command.title
    text = hover.build(view, 0, 17).contents.value  # on the kernel's name
    assert "grid = (656, 1, 1) (assumed)" in text


def test_launch_from_the_source_is_not_assumed():
    _, view = _view(_with(Assumption(name="grid", value="(64, 1, 1)", source="launch_site")))
    (lz,) = lens.build(view, URI)
    assert "assumed" not in lz.command.title


def test_inlay_label_names_the_top_stall():
    _, view = _view(_result())
    (h,) = inlay.build(view, _all())
    assert h.label == "62 % · long scoreboard" and h.position.line == 3
