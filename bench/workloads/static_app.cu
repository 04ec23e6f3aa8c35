// A CUDA C++ program built with nvcc's default (static) runtime: every launch goes through
// cudart_static's cuGetProcAddress route. Prints the number of launches it made.
#include <cstdio>
__global__ void scale(float* y, const float* x, float a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i];
}
__global__ void spin(long long cycles) {
  long long t0 = clock64();
  while (clock64() - t0 < cycles) {}
}
int main() {
  const int n = 1 << 20, launches = 500;
  float *x, *y;
  cudaMalloc(&x, n * sizeof(float));
  cudaMalloc(&y, n * sizeof(float));
  cudaMemset(x, 0, n * sizeof(float));
  cudaStream_t s;
  cudaStreamCreate(&s);
  for (int i = 0; i < launches; ++i) scale<<<n / 256, 256, 0, s>>>(y, x, 2.0f, n);
  for (int i = 0; i < 100; ++i) spin<<<1, 1, 0, s>>>(20000);
  float h = 1;
  cudaMemcpyAsync(&h, y, sizeof h, cudaMemcpyDeviceToHost, s);
  cudaStreamSynchronize(s);
  printf("{\"static_launches\": %d, \"spin_launches\": 100, \"y0\": %g}\n", launches, h);
  return 0;
}
