#include "models/knn/knn_dots.h"

#include <algorithm>
#include <cmath>

#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#include <immintrin.h>
#define TFG_KNN_AVX2 1
#endif

namespace tabforge::knn {
namespace {

// One query's products with references [first, last), each summed in dimension order.
void PortableRow(const float* query, int dims, const float* columns, std::int64_t stride,
                 std::int64_t first, std::int64_t last, float* out) {
  for (std::int64_t j = first; j < last; ++j) {
    float sum = 0.0f;
    for (int d = 0; d < dims; ++d) sum = std::fma(query[d], columns[d * stride + j], sum);
    out[j] = sum;
  }
}

#ifdef TFG_KNN_AVX2
// Tiles of 4 queries x 16 references held in eight registers over the dimensions; the
// references left over past the last whole 8 take the portable loop (same arithmetic).
__attribute__((target("avx2,fma"))) void Avx2Dots(const float* query, std::int64_t count, int dims,
                                                  const float* columns, std::int64_t stride,
                                                  std::int64_t width, float* out) {
  const std::int64_t whole = width / 8 * 8;
  std::int64_t i = 0;
  for (; i + 4 <= count; i += 4) {
    const float* q = query + i * dims;
    float* o = out + i * width;
    std::int64_t j = 0;
    for (; j + 16 <= whole; j += 16) {
      __m256 a00 = _mm256_setzero_ps(), a01 = _mm256_setzero_ps();
      __m256 a10 = _mm256_setzero_ps(), a11 = _mm256_setzero_ps();
      __m256 a20 = _mm256_setzero_ps(), a21 = _mm256_setzero_ps();
      __m256 a30 = _mm256_setzero_ps(), a31 = _mm256_setzero_ps();
      for (int d = 0; d < dims; ++d) {
        const float* r = columns + d * stride + j;
        const __m256 r0 = _mm256_loadu_ps(r);
        const __m256 r1 = _mm256_loadu_ps(r + 8);
        __m256 b = _mm256_broadcast_ss(q + d);
        a00 = _mm256_fmadd_ps(b, r0, a00);
        a01 = _mm256_fmadd_ps(b, r1, a01);
        b = _mm256_broadcast_ss(q + dims + d);
        a10 = _mm256_fmadd_ps(b, r0, a10);
        a11 = _mm256_fmadd_ps(b, r1, a11);
        b = _mm256_broadcast_ss(q + 2 * dims + d);
        a20 = _mm256_fmadd_ps(b, r0, a20);
        a21 = _mm256_fmadd_ps(b, r1, a21);
        b = _mm256_broadcast_ss(q + 3 * dims + d);
        a30 = _mm256_fmadd_ps(b, r0, a30);
        a31 = _mm256_fmadd_ps(b, r1, a31);
      }
      _mm256_storeu_ps(o + j, a00);
      _mm256_storeu_ps(o + j + 8, a01);
      _mm256_storeu_ps(o + width + j, a10);
      _mm256_storeu_ps(o + width + j + 8, a11);
      _mm256_storeu_ps(o + 2 * width + j, a20);
      _mm256_storeu_ps(o + 2 * width + j + 8, a21);
      _mm256_storeu_ps(o + 3 * width + j, a30);
      _mm256_storeu_ps(o + 3 * width + j + 8, a31);
    }
    for (; j < whole; j += 8) {
      for (int row = 0; row < 4; ++row) {
        __m256 a = _mm256_setzero_ps();
        for (int d = 0; d < dims; ++d) {
          a = _mm256_fmadd_ps(_mm256_broadcast_ss(q + row * dims + d),
                              _mm256_loadu_ps(columns + d * stride + j), a);
        }
        _mm256_storeu_ps(o + row * width + j, a);
      }
    }
    for (int row = 0; row < 4; ++row) {
      PortableRow(q + row * dims, dims, columns, stride, whole, width, o + row * width);
    }
  }
  for (; i < count; ++i) {
    const float* q = query + i * dims;
    float* o = out + i * width;
    for (std::int64_t j = 0; j < whole; j += 8) {
      __m256 a = _mm256_setzero_ps();
      for (int d = 0; d < dims; ++d) {
        a = _mm256_fmadd_ps(_mm256_broadcast_ss(q + d), _mm256_loadu_ps(columns + d * stride + j),
                            a);
      }
      _mm256_storeu_ps(o + j, a);
    }
    PortableRow(q, dims, columns, stride, whole, width, o);
  }
}
#endif

}  // namespace

void PortableDots(const float* query, std::int64_t count, int dims, const float* columns,
                  std::int64_t stride, std::int64_t width, float* out) {
  for (std::int64_t i = 0; i < count; ++i) {
    PortableRow(query + i * dims, dims, columns, stride, 0, width, out + i * width);
  }
}

bool DotsUseAvx2() {
#ifdef TFG_KNN_AVX2
  static const bool supported = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return supported;
#else
  return false;
#endif
}

void Dots(const float* query, std::int64_t count, int dims, const float* columns,
          std::int64_t stride, std::int64_t width, float* out) {
#ifdef TFG_KNN_AVX2
  if (DotsUseAvx2()) {
    Avx2Dots(query, count, dims, columns, stride, width, out);
    return;
  }
#endif
  PortableDots(query, count, dims, columns, stride, width, out);
}

float SquaredNorm(const float* values, int dims) {
  float sum = 0.0f;
  for (int d = 0; d < dims; ++d) sum = std::fma(values[d], values[d], sum);
  return sum;
}

}  // namespace tabforge::knn
