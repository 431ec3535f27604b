#include "models/knn/knn_dots.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "core/error.h"
#include "models/knn/knn_list.h"

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

// DirectSearch for kDims dimensions over references [first, width).
template <int kDims>
void PortableDirectOf(const float* query, const float* columns, std::int64_t stride,
                      std::int64_t first, std::int64_t width, std::int64_t start, std::int64_t skip,
                      int keep, float* distances, std::int32_t* indices) {
  float value[kDims];
  for (int d = 0; d < kDims; ++d) value[d] = query[d];
  for (std::int64_t j = first; j < width; ++j) {
    float total = 0.0f;
    for (int d = 0; d < kDims; ++d) {
      const float difference = value[d] - columns[d * stride + j];
      total += difference * difference;
    }
    if (total < distances[keep - 1] && start + j != skip) {
      InsertNeighbor(distances, indices, keep, total, start + j);
    }
  }
}

// SearchFromDots over references [first, width).
void PortableFromDotsOf(float query_norm, const float* norms, const float* dots, std::int64_t first,
                        std::int64_t width, std::int64_t start, std::int64_t skip, int keep,
                        float* distances, std::int32_t* indices) {
  for (std::int64_t j = first; j < width; ++j) {
    const float distance = SquaredDistance(query_norm, norms[j], dots[j]);
    if (distance < distances[keep - 1] && start + j != skip) {
      InsertNeighbor(distances, indices, keep, distance, start + j);
    }
  }
}

using DirectKernel = void (*)(const float* query, const float* columns, std::int64_t stride,
                              std::int64_t width, std::int64_t start, std::int64_t skip, int keep,
                              float* distances, std::int32_t* indices);

template <int kDims>
void PortableDirect(const float* query, const float* columns, std::int64_t stride,
                    std::int64_t width, std::int64_t start, std::int64_t skip, int keep,
                    float* distances, std::int32_t* indices) {
  PortableDirectOf<kDims>(query, columns, stride, 0, width, start, skip, keep, distances, indices);
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

#ifdef TFG_KNN_AVX2
// Offers references first .. first + 7 at squared distances `distance` to a list whose worst is
// `worst` (in every lane): those below it go in, in order, as in the portable loops. Returns the
// list's worst after.
__attribute__((target("avx2"))) inline __m256 OfferEight(__m256 distance, __m256 worst,
                                                         std::int64_t first, std::int64_t skip,
                                                         int keep, float* distances,
                                                         std::int32_t* indices) {
  unsigned closer =
      static_cast<unsigned>(_mm256_movemask_ps(_mm256_cmp_ps(distance, worst, _CMP_LT_OQ)));
  if (closer == 0) return worst;
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, distance);
  for (; closer != 0; closer &= closer - 1) {
    const int lane = __builtin_ctz(closer);
    const std::int64_t reference = first + lane;
    if (lanes[lane] < distances[keep - 1] && reference != skip) {
      InsertNeighbor(distances, indices, keep, lanes[lane], reference);
    }
  }
  return _mm256_set1_ps(distances[keep - 1]);
}

// Eight references at a time: the differences squared and added in dimension order (separate
// multiplies and adds, as the portable loop) and compared with the list's worst in the
// registers; only references below it leave them, in order. The references past the last whole
// 8 take the portable loop.
template <int kDims>
__attribute__((target("avx2"))) void Avx2Direct(const float* query, const float* columns,
                                                std::int64_t stride, std::int64_t width,
                                                std::int64_t start, std::int64_t skip, int keep,
                                                float* distances, std::int32_t* indices) {
  __m256 value[kDims];
  for (int d = 0; d < kDims; ++d) value[d] = _mm256_set1_ps(query[d]);
  __m256 worst = _mm256_set1_ps(distances[keep - 1]);
  const std::int64_t whole = width / 8 * 8;
  for (std::int64_t j = 0; j < whole; j += 8) {
    __m256 total = _mm256_setzero_ps();
    for (int d = 0; d < kDims; ++d) {
      const __m256 difference = _mm256_sub_ps(value[d], _mm256_loadu_ps(columns + d * stride + j));
      total = _mm256_add_ps(total, _mm256_mul_ps(difference, difference));
    }
    worst = OfferEight(total, worst, start + j, skip, keep, distances, indices);
  }
  PortableDirectOf<kDims>(query, columns, stride, whole, width, start, skip, keep, distances,
                          indices);
}

// Eight references at a time: SquaredDistance's operations in the registers (no fused
// multiply-add; the clamp at 0 as a maximum, which gives 0 for a NaN as the portable test does),
// compared with the list's worst there, as Avx2Direct.
__attribute__((target("avx2"))) void Avx2FromDots(float query_norm, const float* norms,
                                                  const float* dots, std::int64_t width,
                                                  std::int64_t start, std::int64_t skip, int keep,
                                                  float* distances, std::int32_t* indices) {
  const __m256 norm = _mm256_set1_ps(query_norm);
  const __m256 two = _mm256_set1_ps(2.0f);
  const __m256 zero = _mm256_setzero_ps();
  __m256 worst = _mm256_set1_ps(distances[keep - 1]);
  const std::int64_t whole = width / 8 * 8;
  for (std::int64_t j = 0; j < whole; j += 8) {
    const __m256 value = _mm256_sub_ps(_mm256_add_ps(norm, _mm256_loadu_ps(norms + j)),
                                       _mm256_mul_ps(two, _mm256_loadu_ps(dots + j)));
    const __m256 distance = _mm256_max_ps(value, zero);
    worst = OfferEight(distance, worst, start + j, skip, keep, distances, indices);
  }
  PortableFromDotsOf(query_norm, norms, dots, whole, width, start, skip, keep, distances, indices);
}
#endif

template <template <int> class Pick, int... kDims>
DirectKernel PickFor(int dims, std::integer_sequence<int, kDims...>) {
  DirectKernel chosen = nullptr;
  ((dims == kDims + 1 ? (chosen = Pick<kDims + 1>::kKernel, true) : false) || ...);
  return chosen;
}

// Pick's kernel for `dims` dimensions (1 to kMaxDirectDims), unrolled at compile time.
template <template <int> class Pick>
DirectKernel DirectKernelFor(int dims) {
  TFG_CHECK(dims >= 1 && dims <= kMaxDirectDims, "direct search takes 1 to {} dimensions, not {}",
            kMaxDirectDims, dims);
  return PickFor<Pick>(dims, std::make_integer_sequence<int, kMaxDirectDims>());
}

template <int kDims>
struct PickPortable {
  static constexpr DirectKernel kKernel = &PortableDirect<kDims>;
};

#ifdef TFG_KNN_AVX2
template <int kDims>
struct PickAvx2 {
  static constexpr DirectKernel kKernel = &Avx2Direct<kDims>;
};
#endif

}  // namespace

void PortableDots(const float* query, std::int64_t count, int dims, const float* columns,
                  std::int64_t stride, std::int64_t width, float* out) {
  for (std::int64_t i = 0; i < count; ++i) {
    PortableRow(query + i * dims, dims, columns, stride, 0, width, out + i * width);
  }
}

void PortableDirectSearch(const float* query, int dims, const float* columns, std::int64_t stride,
                          std::int64_t width, std::int64_t start, std::int64_t skip, int keep,
                          float* distances, std::int32_t* indices) {
  DirectKernelFor<PickPortable>(dims)(query, columns, stride, width, start, skip, keep, distances,
                                      indices);
}

void DirectSearch(const float* query, int dims, const float* columns, std::int64_t stride,
                  std::int64_t width, std::int64_t start, std::int64_t skip, int keep,
                  float* distances, std::int32_t* indices) {
#ifdef TFG_KNN_AVX2
  const DirectKernel kernel =
      DotsUseAvx2() ? DirectKernelFor<PickAvx2>(dims) : DirectKernelFor<PickPortable>(dims);
#else
  const DirectKernel kernel = DirectKernelFor<PickPortable>(dims);
#endif
  kernel(query, columns, stride, width, start, skip, keep, distances, indices);
}

void PortableSearchFromDots(float query_norm, const float* norms, const float* dots,
                            std::int64_t width, std::int64_t start, std::int64_t skip, int keep,
                            float* distances, std::int32_t* indices) {
  PortableFromDotsOf(query_norm, norms, dots, 0, width, start, skip, keep, distances, indices);
}

void SearchFromDots(float query_norm, const float* norms, const float* dots, std::int64_t width,
                    std::int64_t start, std::int64_t skip, int keep, float* distances,
                    std::int32_t* indices) {
#ifdef TFG_KNN_AVX2
  if (DotsUseAvx2()) {
    Avx2FromDots(query_norm, norms, dots, width, start, skip, keep, distances, indices);
    return;
  }
#endif
  PortableSearchFromDots(query_norm, norms, dots, width, start, skip, keep, distances, indices);
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
