"""The kernel-name module (analysis/frontend/kernel_names.py) on the names nvcc really gives: a
template instance in a namespace, a kernel in an anonymous namespace and an extern "C" kernel,
each matched back to the identifier the source declares."""

from __future__ import annotations

from kernelscope.analysis.frontend.kernel_names import base_name, instance_name, mangled_base_name, without_parameters
from kernelscope.analysis.frontend.source import parse_source

from frontend.test_sass import build

KERNELS = r"""
namespace ns {
template <int N, typename T>
__global__ void scale(T* a, int n) { if (threadIdx.x < n) a[threadIdx.x] *= N; }
}
namespace {
__global__ void hidden(float* a) { a[threadIdx.x] = 1.0f; }
}
extern "C" __global__ void plain(int* a) { a[threadIdx.x] = 2; }
struct Pair { int a, b; };
template <typename P>
__global__ void by_pair(P p, void (*f)(int), int* out) { out[0] = p.a + p.b; }
__device__ void noop(int) {}
void launch_all(float* f, int* i) {
    ns::scale<256, float><<<1, 32>>>(f, 4);
    hidden<<<1, 32>>>(f);
    plain<<<1, 32>>>(i);
    by_pair<Pair><<<1, 1>>>(Pair{1, 2}, nullptr, i);
}
"""


def test_every_name_nvcc_gives_matches_the_declared_identifier(tmp_path):
    _, module = build(KERNELS, tmp_path, "names")
    kernels = {f.mangled_name: f.name for f in module.functions if f.is_kernel}
    declared = {f.name for f in parse_source(KERNELS).functions if f.kind == "kernel"}
    assert declared == {"scale", "hidden", "plain", "by_pair"}
    assert len(kernels) == 4
    for mangled, demangled in kernels.items():
        assert base_name(demangled) in declared, demangled
        assert mangled_base_name(mangled) == base_name(demangled), (mangled, demangled)
    by_base = {base_name(d): d for d in kernels.values()}
    # the parameter list goes, even one holding a function pointer's own parentheses
    assert without_parameters(by_base["by_pair"]).endswith("by_pair<Pair>")
    assert instance_name(by_base["by_pair"]) == "by_pair<Pair>"
    assert instance_name(by_base["scale"]) == "ns::scale<256, float>"
    assert instance_name(by_base["plain"]) == "plain"
    assert without_parameters(by_base["hidden"]) == "(anonymous namespace)::hidden"
