// CRC-32 by folding with carry-less multiplication: the method of Gopal et al., "Fast CRC
// Computation for Generic Polynomials Using PCLMULQDQ Instruction" (Intel, 2009), for the
// reflected IEEE polynomial. Four 128-bit lanes are folded forward 512 bits at a time, folded into
// one, reduced to 64 bits, then to 32 by Barrett reduction. The constants are x^n mod P(x) for the
// fold distances, bit-reflected and shifted left by one, as the paper derives them; the tests
// (CRC32Tests) compare every length 0-600 at several alignments with the bitwise definition.

#include "CChecksum.h"

#if defined(__x86_64__)

#include <cpuid.h>
#include <immintrin.h>

#include "clmul_lanes.h"

int ota_crc32_folding_available(void) {
    unsigned int eax, ebx, ecx, edx;
    if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx)) return 0;
    // ECX bit 1: PCLMULQDQ; bit 19: SSE4.1 (pextrd).
    return (ecx & (1u << 1)) && (ecx & (1u << 19)) ? 1 : 0;
}

__attribute__((target("pclmul,sse4.1")))
uint32_t ota_crc32_fold(uint32_t state, const uint8_t *bytes, size_t length) {
    // x^(512+64) and x^(512) mod P, reflected: the 4-lane fold.
    const __m128i fold4 = _mm_set_epi64x(0x1c6e41596, 0x154442bd4);
    // x^(128+64) and x^(128) mod P, reflected: the 1-lane fold.
    const __m128i fold1 = _mm_set_epi64x(0x0ccaa009e, 0x1751997d0);
    // x^64 mod P, reflected: 64 to 32 bits.
    const __m128i fold32 = _mm_set_epi64x(0, 0x163cd6124);
    // P(x) reflected (with its x^32 term) and floor(x^64 / P(x)) reflected: Barrett reduction.
    const __m128i barrett = _mm_set_epi64x(0x1F7011641, 0x1DB710641);
    const __m128i mask32 = _mm_set_epi32(0, 0, 0, -1);

    __m128i first = _mm_xor_si128(_mm_loadu_si128((const __m128i *)bytes), _mm_cvtsi32_si128((int)state));
    __m128i x1 = ota_clmul_fold_lanes(first, bytes + 16, length - 16, fold4, fold1, 0);
    // 128 to 64 bits: the low half times x^(128) mod P, plus the high half moved down.
    x1 = _mm_xor_si128(_mm_clmulepi64_si128(x1, fold1, 0x10), _mm_srli_si128(x1, 8));
    // 64 to 32 bits.
    x1 = _mm_xor_si128(_mm_clmulepi64_si128(_mm_and_si128(x1, mask32), fold32, 0x00), _mm_srli_si128(x1, 4));
    // Barrett reduction.
    __m128i quotient = _mm_clmulepi64_si128(_mm_and_si128(x1, mask32), barrett, 0x10);
    __m128i product = _mm_clmulepi64_si128(_mm_and_si128(quotient, mask32), barrett, 0x00);
    x1 = _mm_xor_si128(x1, product);
    return (uint32_t)_mm_extract_epi32(x1, 1);
}

#else

int ota_crc32_folding_available(void) { return 0; }

uint32_t ota_crc32_fold(uint32_t state, const uint8_t *bytes, size_t length) {
    // Never called: ota_crc32_folding_available() is 0 on this architecture.
    (void)bytes;
    (void)length;
    return state;
}

#endif
