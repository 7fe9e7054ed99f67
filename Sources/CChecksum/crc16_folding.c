// CRC-16/XMODEM by folding with carry-less multiplication: the method of Gopal et al., "Fast CRC
// Computation for Generic Polynomials Using PCLMULQDQ Instruction" (Intel, 2009), in its
// non-reflected form (as Linux's crct10dif-pcl uses for T10-DIF), for P(x) = 0x11021. Each 16
// bytes are byte-reversed so that the first byte's top bit is x^127; four 128-bit lanes are
// folded forward 512 bits at a time (a lane A becomes A.hi * (x^576 mod P) ^ A.lo * (x^512 mod P),
// congruent to A * x^512), folded into one, multiplied by x^16 and folded to 80 bits, then reduced
// mod P by Barrett reduction with mu = floor(x^80 / P). Not reflected, the constants are plain
// x^n mod P, unshifted; docs/tools/crc16-fold-constants.py derives each one. There is no
// availability function of its own: it needs PCLMULQDQ and SSE4.1 (which implies SSSE3's pshufb),
// what ota_crc32_folding_available() checks.

#include "CChecksum.h"

#if defined(__x86_64__)

#include <immintrin.h>

#include "clmul_lanes.h"

__attribute__((target("pclmul,sse4.1")))
uint16_t ota_crc16_xmodem_fold(uint16_t crc, const uint8_t *bytes, size_t length) {
    // x^(512+64) and x^512 mod P: the 4-lane fold.
    const __m128i fold4 = _mm_set_epi64x(0x8832, 0x13fc);
    // x^(128+64) and x^128 mod P: the 1-lane fold.
    const __m128i fold1 = _mm_set_epi64x(0x650b, 0xaefc);
    // x^(16+64) and x^16 mod P: the last lane times x^16, to 80 bits.
    const __m128i fold0 = _mm_set_epi64x(0xeb23, 0x1021);
    // floor(x^80 / P) without its x^64 term, and P: Barrett reduction.
    const __m128i barrett = _mm_set_epi64x(0x11021, 0x11303471a041b343);

    if (length == 0) return crc;
    // The incoming register joins the message's first 16 bits.
    __m128i first = _mm_xor_si128(ota_clmul_load(bytes, 1), _mm_insert_epi16(_mm_setzero_si128(), crc, 7));
    __m128i x1 = ota_clmul_fold_lanes(first, bytes + 16, length - 16, fold4, fold1, 1);
    // V = x1 * x^16, congruent and of degree < 80; the CRC is V mod P.
    __m128i v = ota_clmul_fold(x1, fold0, _mm_setzero_si128());
    // q = floor(V / P) = floor((V >> 16) * mu / x^64) = (V >> 16) ^ ((V >> 16) * mu.lo64 >> 64).
    __m128i high = _mm_srli_si128(v, 2);
    __m128i q = _mm_xor_si128(high, _mm_srli_si128(_mm_clmulepi64_si128(high, barrett, 0x00), 8));
    // V - q * P has degree < 16.
    v = _mm_xor_si128(v, _mm_clmulepi64_si128(q, barrett, 0x10));
    return (uint16_t)_mm_extract_epi16(v, 0);
}

#else

uint16_t ota_crc16_xmodem_fold(uint16_t crc, const uint8_t *bytes, size_t length) {
    // Never called: ota_crc32_folding_available() is 0 on this architecture.
    (void)bytes;
    (void)length;
    return crc;
}

#endif
