// A host file built on thrust: device vectors, a transform, a sort and a reduction; the kernels
// are thrust's own template instances.
#include <thrust/device_vector.h>
#include <thrust/functional.h>
#include <thrust/reduce.h>
#include <thrust/sequence.h>
#include <thrust/sort.h>
#include <thrust/transform.h>

struct saxpy {
    float a;
    __host__ __device__ float operator()(float x, float y) const { return a * x + y; }
};

int main() {
    const int n = 1 << 20;
    thrust::device_vector<float> x(n), y(n);
    thrust::sequence(x.begin(), x.end());
    thrust::sequence(y.begin(), y.end(), 1.0f);
    thrust::transform(x.begin(), x.end(), y.begin(), y.begin(), saxpy{2.0f});
    thrust::sort(y.begin(), y.end(), thrust::greater<float>());
    float sum = thrust::reduce(y.begin(), y.end(), 0.0f);
    return sum > 0.0f ? 0 : 1;
}
