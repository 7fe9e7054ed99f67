// SHA-256 compression with the x86 SHA extensions (SHA-NI): sha256rnds2 performs two rounds,
// sha256msg1 and sha256msg2 the two halves of the message schedule's recurrence (FIPS 180-4,
// 6.2.2), four schedule words per 128-bit register. The state is held as ABEF and CDGH, the
// order sha256rnds2 takes it in. Written from Intel's description of the instructions ("Intel
// SHA Extensions", Gulley et al., 2013); the tests compare it with the portable Swift code and
// with published digests.

#include "CChecksum.h"

#if defined(__x86_64__)

#include <cpuid.h>
#include <immintrin.h>

int ota_sha256_rounds_available(void) {
    unsigned int eax, ebx, ecx, edx;
    if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx)) return 0;
    // Leaf 1 ECX bit 9: SSSE3 (pshufb); bit 19: SSE4.1 (pblendw).
    if (!(ecx & (1u << 9)) || !(ecx & (1u << 19))) return 0;
    if (!__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx)) return 0;
    // Leaf 7 EBX bit 29: SHA.
    return (ebx & (1u << 29)) ? 1 : 0;
}

static const uint32_t round_constants[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

__attribute__((target("sha,ssse3,sse4.1")))
void ota_sha256_rounds(uint32_t state[8], const uint8_t *blocks, size_t count) {
    // Each 32-bit word big-endian: reverse the bytes within every word.
    const __m128i byte_swap = _mm_set_epi64x(0x0c0d0e0f08090a0bULL, 0x0405060700010203ULL);

    // state[0..3] = A B C D, state[4..7] = E F G H (lane 0 first).
    __m128i abcd = _mm_shuffle_epi32(_mm_loadu_si128((const __m128i *)&state[0]), 0xB1);  // lanes B A D C
    __m128i efgh = _mm_shuffle_epi32(_mm_loadu_si128((const __m128i *)&state[4]), 0x1B);  // lanes H G F E
    __m128i abef = _mm_alignr_epi8(abcd, efgh, 8);       // lanes F E B A
    __m128i cdgh = _mm_blend_epi16(efgh, abcd, 0xF0);    // lanes H G D C

    while (count--) {
        const __m128i abef_before = abef, cdgh_before = cdgh;
        __m128i words[4];
#pragma clang loop unroll(full)
        for (int group = 0; group < 16; group++) {
            const int current = group & 3;
            if (group < 4) {
                words[current] = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(blocks + 16 * group)), byte_swap);
            }
            __m128i scheduled = _mm_add_epi32(words[current], _mm_loadu_si128((const __m128i *)&round_constants[4 * group]));
            cdgh = _mm_sha256rnds2_epu32(cdgh, abef, scheduled);
            if (group >= 3 && group < 15) {
                // Finish the schedule words four groups ahead: add W[t-7] and apply sigma1.
                const int next = (group + 1) & 3;
                words[next] = _mm_add_epi32(words[next], _mm_alignr_epi8(words[current], words[(group + 3) & 3], 4));
                words[next] = _mm_sha256msg2_epu32(words[next], words[current]);
            }
            scheduled = _mm_shuffle_epi32(scheduled, 0x0E);
            abef = _mm_sha256rnds2_epu32(abef, cdgh, scheduled);
            if (group >= 1 && group < 13) {
                // Start the schedule words three groups ahead: W[t-16] + sigma0(W[t-15]).
                const int previous = (group + 3) & 3;
                words[previous] = _mm_sha256msg1_epu32(words[previous], words[current]);
            }
        }
        abef = _mm_add_epi32(abef, abef_before);
        cdgh = _mm_add_epi32(cdgh, cdgh_before);
        blocks += 64;
    }

    __m128i feba = _mm_shuffle_epi32(abef, 0x1B);        // lanes A B E F
    __m128i dchg = _mm_shuffle_epi32(cdgh, 0xB1);        // lanes G H C D
    _mm_storeu_si128((__m128i *)&state[0], _mm_blend_epi16(feba, dchg, 0xF0));  // A B C D
    _mm_storeu_si128((__m128i *)&state[4], _mm_alignr_epi8(dchg, feba, 8));     // E F G H
}

#else

int ota_sha256_rounds_available(void) { return 0; }

void ota_sha256_rounds(uint32_t state[8], const uint8_t *blocks, size_t count) {
    // Never called: ota_sha256_rounds_available() is 0 on this architecture.
    (void)state;
    (void)blocks;
    (void)count;
}

#endif
