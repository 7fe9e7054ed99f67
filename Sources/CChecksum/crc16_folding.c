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

__attribute__((target("pclmul,sse4.1")))
static inline __m128i fold16(__m128i lane, __m128i constants, __m128i next) {
    __m128i low = _mm_clmulepi64_si128(lane, constants, 0x00);
    __m128i high = _mm_clmulepi64_si128(lane, constants, 0x11);
    return _mm_xor_si128(_mm_xor_si128(low, high), next);
}

// The 16 bytes at `bytes` as a polynomial of degree < 128, the first byte's top bit highest.
__attribute__((target("pclmul,sse4.1")))
static inline __m128i load16(const uint8_t *bytes) {
    const __m128i reverse = _mm_set_epi8(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    return _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)bytes), reverse);
}

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
    __m128i x1 = _mm_xor_si128(load16(bytes), _mm_insert_epi16(_mm_setzero_si128(), crc, 7));
    bytes += 16;
    length -= 16;
    if (length >= 48) {
        __m128i x2 = load16(bytes);
        __m128i x3 = load16(bytes + 16);
        __m128i x4 = load16(bytes + 32);
        bytes += 48;
        length -= 48;
        while (length >= 64) {
            x1 = fold16(x1, fold4, load16(bytes));
            x2 = fold16(x2, fold4, load16(bytes + 16));
            x3 = fold16(x3, fold4, load16(bytes + 32));
            x4 = fold16(x4, fold4, load16(bytes + 48));
            bytes += 64;
            length -= 64;
        }
        x1 = fold16(x1, fold1, x2);
        x1 = fold16(x1, fold1, x3);
        x1 = fold16(x1, fold1, x4);
    }
    while (length >= 16) {
        x1 = fold16(x1, fold1, load16(bytes));
        bytes += 16;
        length -= 16;
    }
    // V = x1 * x^16, congruent and of degree < 80; the CRC is V mod P.
    __m128i v = fold16(x1, fold0, _mm_setzero_si128());
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
