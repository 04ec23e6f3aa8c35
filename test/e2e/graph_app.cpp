// CUDA graph replays for cupti_graph_replays_shown_as_their_operations (timing_checks.py): one
// stream, two graphs.
//   "kernels" graph: k_first (10 us) -> k_second (30 us) -> k_first, replayed 3 times
//   "mixed" graph:   k_mixed (20 us) -> a 1 MiB memset node, replayed 2 times
// With CUPTI timing the trace shows the replays as their nodes (k_first x 6, k_second x 3,
// k_mixed x 2, 2 memsets); with event timing as "CUDA graph #1" x 3 and "CUDA graph #2" x 2.
#include "test/e2e/common.h"

int main() {
  CUcontext ctx = init_primary();
  CUmodule m = load_fake_module("kernel k_first 10000\nkernel k_second 30000\nkernel k_mixed 20000\n");
  CUstream s;
  CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));

  CUgraph g;
  CHECK(cuGraphCreate(&g, 0));
  CUfunction first = get_function(m, "k_first");
  add_kernel_chain(g, nullptr, {first, get_function(m, "k_second"), first}, 8, 64);
  CUgraphExec kernels;
  CHECK(cuGraphInstantiate(&kernels, g, 0));
  CHECK(cuGraphDestroy(g));

  CHECK(cuGraphCreate(&g, 0));
  CUgraphNode k = add_kernel_chain(g, nullptr, {get_function(m, "k_mixed")}, 1, 32), set;
  CUdeviceptr buf;
  CHECK(cuMemAlloc(&buf, 1 << 20));
  CUDA_MEMSET_NODE_PARAMS sp{};
  sp.dst = buf, sp.elementSize = 1, sp.width = 1 << 20, sp.height = 1, sp.value = 7;
  CHECK(cuGraphAddMemsetNode(&set, g, &k, 1, &sp, ctx));
  CUgraphExec mixed;
  CHECK(cuGraphInstantiate(&mixed, g, 0));
  CHECK(cuGraphDestroy(g));

  for (int i = 0; i < 3; ++i) CHECK(cuGraphLaunch(kernels, s));
  for (int i = 0; i < 2; ++i) CHECK(cuGraphLaunch(mixed, s));
  CHECK(cuStreamSynchronize(s));
  unsigned char byte = 0;
  CHECK(cuMemcpyDtoH(&byte, buf + 12345, 1));
  CHECK(byte == 7 ? CUDA_SUCCESS : CUDA_ERROR_UNKNOWN);
  CHECK(cuGraphExecDestroy(kernels));
  CHECK(cuGraphExecDestroy(mixed));
  CHECK(cuMemFree(buf));
  printf("graph_app: OK\n");
  return 0;
}
