// Kernel precision rules (tools/analysis/precision.h, docs/SUMMARY.md): one check per rule, with the real
// kernel names the rule was written for.
#include <string>

#include <doctest/doctest.h>

#include "tools/analysis/precision.h"

using cutrace::kernel_precision;
using cutrace::Precision;
using cutrace::precision_name;

namespace {
const char* of(const char* name) { return precision_name(kernel_precision(name)); }
}  // namespace

TEST_CASE("precision: cuBLAS nvjet type codes") {
  // GPT small in bf16 autocast on an H200: aten::mm with c10::BFloat16 inputs.
  CHECK(of("nvjet_sm90_tst_192x128_64x5_1x2_h_bz_coopB_NNT") == std::string("bf16"));
  CHECK(of("nvjet_tst_128x256_64x4_1x2_h_bz_coopA_TNT") == std::string("bf16"));
  // `_h_` / `_v_` after the cluster shape is a launch option, not half precision.
  CHECK(of("nvjet_sm90_tst_128x160_64x5_4x1_v_bz_NTT") == std::string("bf16"));
  CHECK(of("nvjet_hsh_256x128_64x4_2x1_v_bz_TNN") == std::string("fp16"));
  CHECK(of("nvjet_sss_tf32_128x256_TNT") == std::string("tf32"));
  CHECK(of("nvjet_sss_64x8_64x16_2x1_v_bz_TNT") == std::string("fp32"));
  CHECK(of("nvjet_qqtst_128x256_128x6_2x1_2cta_v_bz_TNT") == std::string("fp8"));
  CHECK(of("nvjet_ddd_64x64_TNN") == std::string("fp64"));
}

TEST_CASE("precision: CUTLASS tensorop letter codes") {
  CHECK(of("cutlass_80_tensorop_s1688gemm_128x128_32x3_nn_align4") == std::string("tf32"));
  CHECK(of("cutlass_80_tensorop_h16816gemm_256x128_32x3_nn_align8") == std::string("fp16"));
  CHECK(of("cutlass_80_tensorop_d884gemm_64x64_16x4_nn_align1") == std::string("fp64"));
  CHECK(of("cutlass_80_tensorop_i16832gemm_s8_128x128_64x3_tn_align16") == std::string("int8"));
  // Spelled-out types fall through to the word rules.
  CHECK(of("cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_32x6_tn_align8") == std::string("bf16"));
  CHECK(of("cutlass_80_tensorop_f16_s16816gemm_f16_128x128_32x3_nn_align8") == std::string("fp16"));
}

TEST_CASE("precision: fp8") {
  CHECK(of("void vllm::scaled_fp8_quant_kernel<c10::BFloat16, c10::Float8_e4m3fn>(c10::Float8_e4m3fn*)") ==
        std::string("fp8"));
  CHECK(of("sm90_xmma_gemm_e4m3e4m3_e4m3f32_f32_tn_n_tilesize128x128x64") == std::string("fp8"));
  CHECK(of("void cast_kernel<__nv_fp8_e5m2>(float const*)") == std::string("fp8"));
  CHECK(of("fp8_gemm_kernel") == std::string("fp8"));
}

TEST_CASE("precision: int8") {
  CHECK(of("sm80_xmma_gemm_i8i8_i8i32_f32_tn_n_tilesize128x128x64") == std::string("int8"));
  CHECK(of("void quantize_kernel<int8_t>(float const*, int8_t*)") == std::string("int8"));
  CHECK(of("void at::native::qadd_kernel<c10::qint8>(c10::qint8*)") == std::string("int8"));
  CHECK(of("volta_int8_i8816gemm_128x128_nn") == std::string("int8"));
  CHECK(of("turing_imma_gemm") == std::string("int8"));
  CHECK(of("void copy_kernel<signed char>(signed char*)") == std::string("int8"));
  // uint8 is not int8 (it is a byte type: masks, images): no class.
  CHECK(of("void mask_kernel<uint8_t>(uint8_t*)") == std::string("other"));
  CHECK(of("void copy_kernel<unsigned char>(unsigned char*)") == std::string("other"));
}

TEST_CASE("precision: bf16") {
  CHECK(of("void at::native::vectorized_elementwise_kernel<8, at::native::bfloat16_copy_kernel_cuda("
           "at::TensorIteratorBase&)::{lambda(float)#1}, std::array<char*, 2ul> >(int)") == std::string("bf16"));
  // bf16 storage with float accumulation counts as bf16.
  CHECK(of("void at::native::reduce_kernel<128, 4, at::native::ReduceOp<c10::BFloat16, "
           "at::native::sum_functor<c10::BFloat16, float, c10::BFloat16>, unsigned int, c10::BFloat16, 4, 8> >") ==
        std::string("bf16"));
  CHECK(of("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64") == std::string("bf16"));
  CHECK(of("void flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, cutlass::bfloat16_t> >") ==
        std::string("bf16"));
  CHECK(of("void rms_norm<__nv_bfloat16>(__nv_bfloat16*)") == std::string("bf16"));
}

TEST_CASE("precision: fp16") {
  CHECK(of("void at::native::softmax<c10::Half, float>(c10::Half*, float)") == std::string("fp16"));
  CHECK(of("void flashinfer::norm::RMSNormKernel<8u, __half>(__half*, __half*)") == std::string("fp16"));
  CHECK(of("void gemm<cutlass::half_t>(cutlass::half_t*)") == std::string("fp16"));
  CHECK(of("volta_h884gemm_128x128_ldg8_nn") == std::string("fp16"));
  CHECK(of("turing_h1688gemm_256x128_ldg8_tn") == std::string("fp16"));
  CHECK(of("ampere_h16816gemm_128x128_ldg8_stages_64x3_nn") == std::string("fp16"));
  CHECK(of("sm80_xmma_gemm_f16f16_f16f32_f32_nn_n_tilesize128x128x32") == std::string("fp16"));
  // cuDNN writes f16 for its 16-bit MMA class: in a bf16 run this still reads fp16.
  CHECK(of("cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_7_64x128x64_4x1x1_cga1x1x1_kernel0_0") ==
        std::string("fp16"));
  CHECK(of("my_fp16_kernel") == std::string("fp16"));
  // "half" only as a word.
  CHECK(of("halfway_kernel") == std::string("other"));
}

TEST_CASE("precision: tf32") {
  CHECK(of("sm80_xmma_gemm_tf32f32_tf32f32_f32_nn_n_tilesize128x128x16") == std::string("tf32"));
  CHECK(of("ampere_sgemm_tf32_128x64_nn") == std::string("tf32"));
}

TEST_CASE("precision: fp32") {
  CHECK(of("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, "
           "std::array<char*, 3ul> >(int, at::native::CUDAFunctor_add<float>, std::array<char*, 3ul>)") ==
        std::string("fp32"));
  CHECK(of("void "
           "cutlass::Kernel2<cutlass_80_simt_sgemm_64x64_8x5_tn_align1>(cutlass_80_simt_sgemm_64x64_8x5_tn_align1::"
           "Params)") == std::string("fp32"));
  CHECK(of("sm80_xmma_gemm_f32f32_f32f32_f32_nt_n_tilesize128x32x8_stage3") == std::string("fp32"));
  CHECK(of("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)") == std::string("fp32"));
  CHECK(of("my_fp32_kernel") == std::string("fp32"));
  CHECK(of("void gemv2T_kernel_val<int, int, float, float, float, float, 128, 16, 4, 4, false, false>") ==
        std::string("fp32"));
  // A float kernel with a double scalar argument is fp32.
  CHECK(of("void scale<float>(float*, double)") == std::string("fp32"));
  // "float" only as a word: not inside bfloat16 or floating.
  CHECK(of("floating_point_checks") == std::string("other"));
}

TEST_CASE("precision: fp64") {
  CHECK(of("void at::native::reduce_kernel<512, 1, at::native::ReduceOp<double, double> >") == std::string("fp64"));
  CHECK(of("volta_dgemm_128x64_nn") == std::string("fp64"));
  CHECK(of("sm80_xmma_gemm_f64f64_f64f64_f64_nn_n_tilesize64x64x16") == std::string("fp64"));
  CHECK(of("my_fp64_kernel") == std::string("fp64"));
}

TEST_CASE("precision: int32") {
  CHECK(of("void fill_kernel<int>(int*, int, int)") == std::string("int32"));
  CHECK(of("void at::native::index_elementwise_kernel<int, 4>(long, int)") == std::string("int32"));
  CHECK(of("void cumsum_kernel<int32_t>(int32_t const*, int32_t*)") == std::string("int32"));
  CHECK(of("my_i32_histogram") == std::string("int32"));
  // int8 GEMMs accumulate in i32: int8 wins (earlier rule); a float kernel with int arguments is fp32.
  CHECK(of("sm80_xmma_gemm_i8i8_i8i32_f32_tn_n_tilesize128x128x64") == std::string("int8"));
  CHECK(of("void add_kernel<float>(float*, int)") == std::string("fp32"));
  // uint32 and int64 are not int32; an int scalar argument alone names no data type.
  CHECK(of("void hash_kernel<uint32_t>(uint32_t*)") == std::string("other"));
  CHECK(of("void count_kernel<long>(long*, int)") == std::string("other"));
  CHECK(of("void at::native::vectorized_gather_kernel<16, long>(char*, char*, long*, int, long, long)") ==
        std::string("other"));
}

TEST_CASE("precision: other") {
  CHECK(of("void at::native::vectorized_gather_kernel<16, long>(char*, char*, long*, int, long, long)") ==
        std::string("other"));
  CHECK(of("triton_poi_fused_add_mul_0") == std::string("other"));
  CHECK(of("CUDA graph #1") == std::string("other"));
  CHECK(of("") == std::string("other"));
  CHECK(std::string(precision_name(Precision(200))) == "other");
}
