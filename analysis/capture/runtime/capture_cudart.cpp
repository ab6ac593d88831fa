// A stand-in libcudart.so.13 that records launches instead of running them (docs/emulator.md,
// "Launch capture"). The program is linked with `-cudart shared`, so every runtime call goes
// through this library's exports: device memory is host memory, copies and memsets act on it,
// queries describe the modeled device, and a launch writes one JSON line (kernel, grid, block,
// dynamic shared memory, stream, argument bytes) to $KERNELSCOPE_CAPTURE_OUT. Kernels never run.
//
// Argument sizes come from $KERNELSCOPE_CAPTURE_PARAMS ("mangled size size ..." per line, read
// by the caller from the cubin's EIATTR_KPARAM_INFO): `args[i]` points at parameter i, and only
// the cubin knows how many bytes it has.
#include <cuda_runtime_api.h>
#include <csignal>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <unistd.h>
#include <fcntl.h>
#include <vector>

namespace {
std::mutex mu;
int out_fd = -1;
long cap_per_kernel = 64;
std::map<const void*, std::string> names;               // host stub -> mangled device name
std::map<std::string, std::vector<int>> param_sizes;    // mangled name -> parameter sizes
std::map<const void*, long> launches;                   // host stub -> launches seen
struct Config { dim3 grid, block; size_t smem; void* stream; };
std::vector<Config> pushed;
cudaError_t last_error = cudaSuccess;
std::set<void*> live;                                   // allocations not yet freed

void emit(const char* fmt, ...) {
  if (out_fd < 0) return;
  char buf[1 << 16];
  va_list ap; va_start(ap, fmt);
  int n = vsnprintf(buf, sizeof buf - 1, fmt, ap);
  va_end(ap);
  if (n < 0) return;
  if (n > (int)sizeof buf - 2) n = sizeof buf - 2;
  buf[n++] = '\n';
  (void)!write(out_fd, buf, n);  // one write per record: a killed program leaves whole lines
}

void flush_counts() {
  for (auto& [stub, n] : launches)
    if (n > cap_per_kernel) emit("{\"t\":\"count\",\"stub\":\"%p\",\"launches\":%ld}", stub, n);
  emit("{\"t\":\"end\"}");
}

void on_signal(int sig) {
  flush_counts();  // the caller's time limit: what was recorded is still used
  _exit(128 + sig);
}

struct Init {
  Init() {
    if (const char* p = getenv("KERNELSCOPE_CAPTURE_OUT")) out_fd = open(p, O_WRONLY | O_CREAT | O_APPEND, 0600);
    if (const char* c = getenv("KERNELSCOPE_CAPTURE_CAP")) cap_per_kernel = atol(c);
    if (const char* p = getenv("KERNELSCOPE_CAPTURE_PARAMS")) {
      if (FILE* f = fopen(p, "r")) {
        char line[8192];
        while (fgets(line, sizeof line, f)) {
          char* save = nullptr;
          char* name = strtok_r(line, " \n", &save);
          if (!name) continue;
          std::vector<int> sizes;
          for (char* t; (t = strtok_r(nullptr, " \n", &save));) sizes.push_back(atoi(t));
          param_sizes[name] = sizes;
        }
        fclose(f);
      }
    }
    signal(SIGTERM, on_signal);
    signal(SIGALRM, on_signal);
    signal(SIGXCPU, on_signal);  // the supervisor's CPU-time limit (analysis/capture/supervise.py)
    // the program stops itself before the caller's hard limit, so the launch counts are written
    if (const char* t = getenv("KERNELSCOPE_CAPTURE_SECONDS")) alarm((unsigned)atoi(t));
    atexit(flush_counts);
    emit("{\"t\":\"start\"}");
  }
} init;

cudaError_t record(const void* stub, dim3 g, dim3 b, void** args, size_t smem, void* stream, const char* how) {
  std::lock_guard<std::mutex> lock(mu);
  long n = ++launches[stub];
  if (n > cap_per_kernel) return cudaSuccess;
  auto it = names.find(stub);
  const char* name = it == names.end() ? "" : it->second.c_str();
  std::string hex = "null";
  auto ps = param_sizes.find(name);
  if (ps != param_sizes.end() && args) {
    hex = "[";
    for (size_t i = 0; i < ps->second.size(); ++i) {
      if (i) hex += ",";
      hex += "\"";
      const unsigned char* p = (const unsigned char*)args[i];
      char two[3];
      for (int k = 0; k < ps->second[i] && k < 4096; ++k) { snprintf(two, 3, "%02x", p[k]); hex += two; }
      hex += "\"";
    }
    hex += "]";
  }
  emit("{\"t\":\"launch\",\"stub\":\"%p\",\"name\":\"%s\",\"grid\":[%u,%u,%u],\"block\":[%u,%u,%u],\"smem\":%zu,"
       "\"stream\":\"%p\",\"api\":\"%s\",\"args\":%s}",
       stub, name, g.x, g.y, g.z, b.x, b.y, b.z, smem, stream, how, hex.c_str());
  return cudaSuccess;
}

int dev_attr(cudaDeviceAttr a) {
  auto env = [](const char* k, int d) { const char* v = getenv(k); return v ? atoi(v) : d; };
  switch (a) {
    case cudaDevAttrMultiProcessorCount: return env("KERNELSCOPE_CAPTURE_SMS", 132);
    case cudaDevAttrComputeCapabilityMajor: return env("KERNELSCOPE_CAPTURE_CC", 90) / 10;
    case cudaDevAttrComputeCapabilityMinor: return env("KERNELSCOPE_CAPTURE_CC", 90) % 10;
    case cudaDevAttrMaxThreadsPerBlock: return 1024;
    case cudaDevAttrMaxBlockDimX: case cudaDevAttrMaxBlockDimY: return 1024;
    case cudaDevAttrMaxBlockDimZ: return 64;
    case cudaDevAttrMaxGridDimX: return 2147483647;
    case cudaDevAttrMaxGridDimY: case cudaDevAttrMaxGridDimZ: return 65535;
    case cudaDevAttrMaxSharedMemoryPerBlock: return 49152;
    case cudaDevAttrMaxSharedMemoryPerBlockOptin: return env("KERNELSCOPE_CAPTURE_SMEM_OPTIN", 232448);
    case cudaDevAttrMaxSharedMemoryPerMultiprocessor: return env("KERNELSCOPE_CAPTURE_SMEM_SM", 233472);
    case cudaDevAttrMaxRegistersPerBlock: case cudaDevAttrMaxRegistersPerMultiprocessor: return 65536;
    case cudaDevAttrWarpSize: return 32;
    case cudaDevAttrMaxThreadsPerMultiProcessor: return env("KERNELSCOPE_CAPTURE_THREADS_SM", 2048);
    case cudaDevAttrClockRate: return 1755000;
    case cudaDevAttrMemoryClockRate: return 2619000;
    case cudaDevAttrGlobalMemoryBusWidth: return 5120;
    case cudaDevAttrL2CacheSize: return env("KERNELSCOPE_CAPTURE_L2", 52428800);
    case cudaDevAttrConcurrentKernels: case cudaDevAttrUnifiedAddressing: case cudaDevAttrManagedMemory:
    case cudaDevAttrCooperativeLaunch: case cudaDevAttrConcurrentManagedAccess: return 1;
    default: return 0;
  }
}
}  // namespace

extern "C" {
// --- registration (crt/host_runtime.h) -----------------------------------------------------------
void** __cudaRegisterFatBinary(void* fatbin) { static void* h[2]; h[0] = fatbin; return h; }
void __cudaRegisterFatBinaryEnd(void**) {}
void __cudaUnregisterFatBinary(void**) {}
char __cudaInitModule(void**) { return 1; }
void __cudaRegisterFunction(void**, const char* stub, char*, const char* name, int, uint3*, uint3*, dim3*, dim3*, int*) {
  std::lock_guard<std::mutex> lock(mu);
  names[stub] = name;
  emit("{\"t\":\"register\",\"stub\":\"%p\",\"name\":\"%s\"}", stub, name);
}
void __cudaRegisterVar(void**, char*, char*, const char*, int, size_t, int, int) {}
void __cudaRegisterManagedVar(void**, void**, char*, const char*, int, size_t, int, int) {}
void __cudaRegisterHostVar(void**, const char*, char*, size_t) {}
void __cudaRegisterUnifiedTable(void**, void*) {}
unsigned __cudaPushCallConfiguration(dim3 g, dim3 b, size_t smem, struct CUstream_st* s) {
  std::lock_guard<std::mutex> lock(mu);
  pushed.push_back({g, b, smem, s});
  return 0;
}
cudaError_t __cudaPopCallConfiguration(dim3* g, dim3* b, size_t* smem, void* s) {
  std::lock_guard<std::mutex> lock(mu);
  if (pushed.empty()) return cudaErrorMissingConfiguration;
  Config c = pushed.back(); pushed.pop_back();
  *g = c.grid; *b = c.block; *smem = c.smem; *(void**)s = c.stream;
  return cudaSuccess;
}
// CUDA 13's launch path: the stub asks for a handle once, then launches through it; the handle
// is the stub's own address, so both paths name kernels the same way.
cudaError_t __cudaGetKernel(cudaKernel_t* k, const void* stub) { *k = (cudaKernel_t)stub; return cudaSuccess; }
cudaError_t __cudaLaunchKernel(cudaKernel_t k, dim3 g, dim3 b, void** args, size_t smem, cudaStream_t s) {
  return record((const void*)k, g, b, args, smem, s, "<<<>>>");
}
cudaError_t __cudaLaunchKernel_ptsz(cudaKernel_t k, dim3 g, dim3 b, void** args, size_t smem, cudaStream_t s) {
  return record((const void*)k, g, b, args, smem, s, "<<<>>>");
}
void* __cudaGetProcAddress(...) { return nullptr; }
}  // extern "C"

// --- launches ----------------------------------------------------------------------------------
cudaError_t cudaLaunchKernel(const void* f, dim3 g, dim3 b, void** args, size_t smem, cudaStream_t s) {
  return record(f, g, b, args, smem, s, "cudaLaunchKernel");
}
extern "C" cudaError_t cudaLaunchKernel_ptsz(const void* f, dim3 g, dim3 b, void** args, size_t smem, cudaStream_t s) {
  return record(f, g, b, args, smem, s, "cudaLaunchKernel");
}
cudaError_t cudaLaunchCooperativeKernel(const void* f, dim3 g, dim3 b, void** args, size_t smem, cudaStream_t s) {
  return record(f, g, b, args, smem, s, "cudaLaunchCooperativeKernel");
}
cudaError_t cudaLaunchKernelExC(const cudaLaunchConfig_t* c, const void* f, void** args) {
  return record(f, c->gridDim, c->blockDim, args, c->dynamicSmemBytes, c->stream, "cudaLaunchKernelEx");
}
cudaError_t cudaGetKernel(cudaKernel_t* k, const void* f) { *k = (cudaKernel_t)f; return cudaSuccess; }
cudaError_t cudaFuncSetAttribute(const void*, cudaFuncAttribute, int) { return cudaSuccess; }
cudaError_t cudaFuncSetCacheConfig(const void*, cudaFuncCache) { return cudaSuccess; }
cudaError_t cudaFuncGetAttributes(cudaFuncAttributes* a, const void*) {
  memset(a, 0, sizeof *a); a->maxThreadsPerBlock = 1024; return cudaSuccess;
}
cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int* n, const void*, int, size_t) { *n = 1; return cudaSuccess; }
cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(int* n, const void*, int, size_t, unsigned) { *n = 1; return cudaSuccess; }

// --- memory: host memory stands in for the device's ---------------------------------------------
static cudaError_t host_alloc(void** p, size_t size) {
  *p = calloc(1, size ? size : 1);  // calloc maps large sizes lazily: untouched pages cost nothing
  if (!*p) return last_error = cudaErrorMemoryAllocation;
  std::lock_guard<std::mutex> lock(mu);
  live.insert(*p);
  emit("{\"t\":\"malloc\",\"ptr\":\"%p\",\"size\":%zu}", *p, size);
  return cudaSuccess;
}
cudaError_t cudaMalloc(void** p, size_t size) { return host_alloc(p, size); }
cudaError_t cudaMallocManaged(void** p, size_t size, unsigned) { return host_alloc(p, size); }
cudaError_t cudaMallocHost(void** p, size_t size) { return host_alloc(p, size); }
cudaError_t cudaHostAlloc(void** p, size_t size, unsigned) { return host_alloc(p, size); }
cudaError_t cudaMallocAsync(void** p, size_t size, cudaStream_t) { return host_alloc(p, size); }
cudaError_t cudaMallocPitch(void** p, size_t* pitch, size_t w, size_t h) { *pitch = (w + 511) / 512 * 512; return host_alloc(p, *pitch * h); }
// A pointer this runtime did not hand out, or one already freed, is an error as on a device, not
// a crash: programs with a double cudaFree (it happens in published samples) run on the GPU.
static cudaError_t host_free(void* p) {
  if (!p) return cudaSuccess;
  std::lock_guard<std::mutex> lock(mu);
  if (!live.erase(p)) return last_error = cudaErrorInvalidValue;
  free(p);
  return cudaSuccess;
}
cudaError_t cudaFree(void* p) { return host_free(p); }
cudaError_t cudaFreeHost(void* p) { return host_free(p); }
cudaError_t cudaFreeAsync(void* p, cudaStream_t) { return host_free(p); }
cudaError_t cudaHostRegister(void*, size_t, unsigned) { return cudaSuccess; }
cudaError_t cudaHostUnregister(void*) { return cudaSuccess; }
cudaError_t cudaHostGetDevicePointer(void** d, void* h, unsigned) { *d = h; return cudaSuccess; }
cudaError_t cudaMemcpy(void* d, const void* s, size_t n, cudaMemcpyKind) { memmove(d, s, n); return cudaSuccess; }
cudaError_t cudaMemcpyAsync(void* d, const void* s, size_t n, cudaMemcpyKind, cudaStream_t) { memmove(d, s, n); return cudaSuccess; }
cudaError_t cudaMemcpy2D(void* d, size_t dp, const void* s, size_t sp, size_t w, size_t h, cudaMemcpyKind) {
  for (size_t r = 0; r < h; ++r) memmove((char*)d + r * dp, (const char*)s + r * sp, w);
  return cudaSuccess;
}
cudaError_t cudaMemcpy2DAsync(void* d, size_t dp, const void* s, size_t sp, size_t w, size_t h, cudaMemcpyKind k, cudaStream_t) {
  return cudaMemcpy2D(d, dp, s, sp, w, h, k);
}
cudaError_t cudaMemcpyToSymbol(const void* sym, const void* s, size_t n, size_t off, cudaMemcpyKind) { memmove((char*)sym + off, s, n); return cudaSuccess; }
cudaError_t cudaMemcpyFromSymbol(void* d, const void* sym, size_t n, size_t off, cudaMemcpyKind) { memmove(d, (const char*)sym + off, n); return cudaSuccess; }
cudaError_t cudaMemcpyToSymbolAsync(const void* sym, const void* s, size_t n, size_t off, cudaMemcpyKind, cudaStream_t) { memmove((char*)sym + off, s, n); return cudaSuccess; }
cudaError_t cudaGetSymbolAddress(void** p, const void* sym) { *p = (void*)sym; return cudaSuccess; }
cudaError_t cudaMemset(void* p, int v, size_t n) { memset(p, v, n); return cudaSuccess; }
cudaError_t cudaMemsetAsync(void* p, int v, size_t n, cudaStream_t) { memset(p, v, n); return cudaSuccess; }
cudaError_t cudaMemset2D(void* p, size_t pitch, int v, size_t w, size_t h) { for (size_t r = 0; r < h; ++r) memset((char*)p + r * pitch, v, w); return cudaSuccess; }
cudaError_t cudaMemGetInfo(size_t* f, size_t* t) { *f = *t = (size_t)80 << 30; return cudaSuccess; }
cudaError_t cudaMemPrefetchAsync(const void*, size_t, cudaMemLocation, unsigned, cudaStream_t) { return cudaSuccess; }

// --- streams, events, synchronization: everything has already "finished" ------------------------
static int next_handle = 1;
cudaError_t cudaStreamCreate(cudaStream_t* s) { *s = (cudaStream_t)(intptr_t)(0x1000 + next_handle++); return cudaSuccess; }
cudaError_t cudaStreamCreateWithFlags(cudaStream_t* s, unsigned) { return cudaStreamCreate(s); }
cudaError_t cudaStreamCreateWithPriority(cudaStream_t* s, unsigned, int) { return cudaStreamCreate(s); }
cudaError_t cudaStreamDestroy(cudaStream_t) { return cudaSuccess; }
cudaError_t cudaStreamSynchronize(cudaStream_t) { return cudaSuccess; }
cudaError_t cudaStreamQuery(cudaStream_t) { return cudaSuccess; }
cudaError_t cudaStreamWaitEvent(cudaStream_t, cudaEvent_t, unsigned) { return cudaSuccess; }
cudaError_t cudaEventCreate(cudaEvent_t* e) { *e = (cudaEvent_t)(intptr_t)(0x2000 + next_handle++); return cudaSuccess; }
cudaError_t cudaEventCreateWithFlags(cudaEvent_t* e, unsigned) { return cudaEventCreate(e); }
cudaError_t cudaEventDestroy(cudaEvent_t) { return cudaSuccess; }
cudaError_t cudaEventRecord(cudaEvent_t, cudaStream_t) { return cudaSuccess; }
cudaError_t cudaEventRecordWithFlags(cudaEvent_t, cudaStream_t, unsigned) { return cudaSuccess; }
cudaError_t cudaEventSynchronize(cudaEvent_t) { return cudaSuccess; }
cudaError_t cudaEventQuery(cudaEvent_t) { return cudaSuccess; }
cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t, cudaEvent_t) { *ms = 1.0f; return cudaSuccess; }
cudaError_t cudaDeviceSynchronize() { return cudaSuccess; }
cudaError_t cudaDeviceReset() { return cudaSuccess; }
cudaError_t cudaDeviceSetCacheConfig(cudaFuncCache) { return cudaSuccess; }
cudaError_t cudaDeviceSetLimit(cudaLimit, size_t) { return cudaSuccess; }
// cuda_profiler_api.h is not in the runtime wheel
extern "C" cudaError_t cudaProfilerStart() { return cudaSuccess; }
extern "C" cudaError_t cudaProfilerStop() { return cudaSuccess; }

// --- device queries: the modeled device --------------------------------------------------------
cudaError_t cudaGetDeviceCount(int* n) { *n = 1; return cudaSuccess; }
cudaError_t cudaGetDevice(int* d) { *d = 0; return cudaSuccess; }
cudaError_t cudaSetDevice(int) { return cudaSuccess; }
cudaError_t cudaSetDeviceFlags(unsigned) { return cudaSuccess; }
cudaError_t cudaDriverGetVersion(int* v) { *v = 13000; return cudaSuccess; }
cudaError_t cudaRuntimeGetVersion(int* v) { *v = 13000; return cudaSuccess; }
cudaError_t cudaDeviceGetAttribute(int* v, cudaDeviceAttr a, int) { *v = dev_attr(a); return cudaSuccess; }
cudaError_t cudaGetDeviceProperties(cudaDeviceProp* p, int) {
  memset(p, 0, sizeof *p);
  const char* name = getenv("KERNELSCOPE_CAPTURE_NAME");
  snprintf(p->name, sizeof p->name, "%s", name ? name : "NVIDIA H100 80GB HBM3");
  p->totalGlobalMem = (size_t)80 << 30;
  p->sharedMemPerBlock = dev_attr(cudaDevAttrMaxSharedMemoryPerBlock);
  p->sharedMemPerBlockOptin = dev_attr(cudaDevAttrMaxSharedMemoryPerBlockOptin);
  p->sharedMemPerMultiprocessor = dev_attr(cudaDevAttrMaxSharedMemoryPerMultiprocessor);
  p->regsPerBlock = p->regsPerMultiprocessor = 65536;
  p->warpSize = 32;
  p->maxThreadsPerBlock = 1024;
  p->maxThreadsDim[0] = p->maxThreadsDim[1] = 1024; p->maxThreadsDim[2] = 64;
  p->maxGridSize[0] = 2147483647; p->maxGridSize[1] = p->maxGridSize[2] = 65535;
  p->major = dev_attr(cudaDevAttrComputeCapabilityMajor);
  p->minor = dev_attr(cudaDevAttrComputeCapabilityMinor);
  p->multiProcessorCount = dev_attr(cudaDevAttrMultiProcessorCount);
  p->maxThreadsPerMultiProcessor = dev_attr(cudaDevAttrMaxThreadsPerMultiProcessor);
  p->l2CacheSize = dev_attr(cudaDevAttrL2CacheSize);
  p->memoryBusWidth = 5120;
  p->concurrentKernels = p->unifiedAddressing = p->managedMemory = p->cooperativeLaunch = 1;
  return cudaSuccess;
}
cudaError_t cudaChooseDevice(int* d, const cudaDeviceProp*) { *d = 0; return cudaSuccess; }

// --- errors ------------------------------------------------------------------------------------
cudaError_t cudaGetLastError() { cudaError_t e = last_error; last_error = cudaSuccess; return e; }
cudaError_t cudaPeekAtLastError() { return last_error; }
const char* cudaGetErrorString(cudaError_t e) { return e == cudaSuccess ? "no error" : "error (kernelscope capture)"; }
const char* cudaGetErrorName(cudaError_t e) { return e == cudaSuccess ? "cudaSuccess" : "cudaErrorUnknown"; }
