// A recursive octree walk: each thread descends from the root, recursing into the children
// whose box holds its point (device recursion compiles to a real CALL with a stack frame).
struct Node {
    float cx, cy, cz, half;
    int child[8];
    int count;
};

__device__ int walk(const Node *nodes, int at, float x, float y, float z, int depth) {
    const Node &n = nodes[at];
    if (depth == 0 || n.child[0] < 0) return n.count;
    int octant = (x > n.cx) | ((y > n.cy) << 1) | ((z > n.cz) << 2);
    int below = walk(nodes, n.child[octant], x, y, z, depth - 1);
    return below + (n.count > 64 ? 1 : 0);
}

__global__ void octree_count(const Node *nodes, const float4 *points, int *out, int n, int depth) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float4 p = points[i];
    out[i] = walk(nodes, 0, p.x, p.y, p.z, depth);
}

int main() {
    octree_count<<<4096, 256>>>(nullptr, nullptr, nullptr, 1 << 20, 12);
    return 0;
}
