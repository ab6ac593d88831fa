// Launch sizes a program takes from its command line, each with the default its source gives when
// the command line gives none (tests/inputs/test_command_line.py), and kernels launched through
// an array of pointers chosen by a switch, with launch shapes kept in file-scope dim3 arrays, and
// a launch swept over block sizes.
#include <cstdio>
#include <cstdlib>
#include <cstring>

__global__ void ternary_kernel(float *x) { x[blockIdx.x * blockDim.x + threadIdx.x] += 1.0f; }
__global__ void flag_kernel(float *x) { x[blockIdx.x * blockDim.x + threadIdx.x] *= 2.0f; }
__global__ void getter_kernel(float *x) { x[threadIdx.x] -= 1.0f; }
__global__ void helper_kernel(float *x) { x[threadIdx.x] = 0.0f; }
__global__ void raw_kernel(float *x) { x[threadIdx.x] = 3.0f; }
__global__ void row_kernel(float *x) { x[threadIdx.x] = 4.0f; }
__global__ void column_kernel(float *x) { x[threadIdx.x] = 5.0f; }
__global__ void plane_kernel(float *x) { x[threadIdx.x] = 6.0f; }

// the shape of cudahandbook's chCommandLineGet: writes *p only when the flag is on the command line
static bool getInt(int *p, const char *keyword, int argc, char *argv[]) {
    for (int i = 1; i + 1 < argc; i++) {
        if (argv[i][0] == '-' && !strcmp(argv[i] + 1, keyword)) {
            *p = atoi(argv[i + 1]);
            return true;
        }
    }
    return false;
}

static bool hasFlag(const char *keyword, int argc, char *argv[]) {
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], keyword)) return true;
    }
    return false;
}

// the shape of multi-gpu-programming-models' get_argval: its default unless the flag is given
template <typename T>
T valueOr(char **begin, char **end, const char *flag, const T fallback) {
    T value = fallback;
    for (char **it = begin; it != end; ++it) {
        if (!strcmp(*it, flag) && it + 1 != end) {
            value = (T)atoi(*(it + 1));
        }
    }
    return value;
}

__global__ void sweep_kernel(float *x) { x[blockIdx.x * blockDim.x + threadIdx.x] = 7.0f; }

// a block-size sweep, as benchmarks run one (cudahandbook's globalWrite.cu): each size once
static void sweep(float *x, int first, int last) {
    for (int threads = first; threads <= last; threads *= 2) {
        sweep_kernel<<<1024 / threads, threads>>>(x);
    }
}

dim3 shapes[2][2];

static void setShapes() {
    shapes[0][0] = dim3(64, 1, 1);
    shapes[0][1] = dim3(128, 1, 1);
    shapes[1][0] = dim3(32, 2, 1);
    shapes[1][1] = dim3(16, 8, 1);
}

static void runAxis(float *x, int axis) {
    void (*kernels[2])(float *);
    switch (axis) {
    case 0:
        kernels[0] = row_kernel;
        kernels[1] = column_kernel;
        break;
    case 1:
        kernels[0] = plane_kernel;
        kernels[1] = helper_kernel;
        break;
    }
    for (int k = 0; k < 2; k++) {
        kernels[k]<<<shapes[axis][k], shapes[1 - axis][k]>>>(x);
    }
}

int main(int argc, char *argv[]) {
    float *x;
    cudaMalloc(&x, 1 << 26);

    int n = argc > 1 ? atoi(argv[1]) : 1 << 20;
    ternary_kernel<<<n / 256, 256>>>(x);

    int rows = 512, threads = 128;
    if (hasFlag("--rows", argc, argv)) {
        rows = atoi(argv[2]);
    }
    flag_kernel<<<rows, threads>>>(x);

    int blocks = 96;
    getInt(&blocks, "blocks", argc, argv);
    getter_kernel<<<blocks, 64>>>(x);

    const int width = valueOr<int>(argv, argv + argc, "-width", 4096);
    raw_kernel<<<width / 32, 32>>>(x);

    setShapes();
    runAxis(x, 0);

    sweep(x, 64, 256);

    cudaDeviceSynchronize();
    cudaFree(x);
    return 0;
}
