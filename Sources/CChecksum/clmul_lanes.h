// What the CRC-32 and CRC-16 foldings share (x86-64 with PCLMULQDQ and SSE4.1 only): the fold
// step and the loop that folds a message's 16-byte blocks into one 128-bit lane, four lanes at a
// time while 64 bytes remain. Each CRC brings its own constants, how its blocks are loaded (a
// reflected CRC as they are, a non-reflected one byte-reversed) and its final reduction.

#ifndef OTA_CLMUL_LANES_H
#define OTA_CLMUL_LANES_H

#include <immintrin.h>
#include <stddef.h>
#include <stdint.h>

// `lane` moved forward by the fold distance its constants are for (the high half times the
// constants' high half, the low half times the low half), plus `next`.
__attribute__((target("pclmul,sse4.1")))
static inline __m128i ota_clmul_fold(__m128i lane, __m128i constants, __m128i next) {
    __m128i low = _mm_clmulepi64_si128(lane, constants, 0x00);
    __m128i high = _mm_clmulepi64_si128(lane, constants, 0x11);
    return _mm_xor_si128(_mm_xor_si128(low, high), next);
}

// The 16 bytes at `bytes`: as they are, or byte-reversed (`reverse`: the first byte's top bit
// becomes the lane's highest).
__attribute__((target("pclmul,sse4.1")))
static inline __m128i ota_clmul_load(const uint8_t *bytes, int reverse) {
    __m128i block = _mm_loadu_si128((const __m128i *)bytes);
    if (!reverse) return block;
    return _mm_shuffle_epi8(block, _mm_set_epi8(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15));
}

// Folds the `length` bytes at `bytes` (a multiple of 16) into `first`, the message's first block
// with the incoming register already in it: four lanes 512 bits at a time (`fold4`) while there
// are at least 48 bytes, merged and the rest folded 128 bits at a time (`fold1`). The result is
// congruent to the whole message modulo P, shifted as the CRC's reduction expects.
__attribute__((target("pclmul,sse4.1")))
static inline __m128i ota_clmul_fold_lanes(
    __m128i first, const uint8_t *bytes, size_t length, __m128i fold4, __m128i fold1, int reverse) {
    __m128i x1 = first;
    if (length >= 48) {
        __m128i x2 = ota_clmul_load(bytes, reverse);
        __m128i x3 = ota_clmul_load(bytes + 16, reverse);
        __m128i x4 = ota_clmul_load(bytes + 32, reverse);
        bytes += 48;
        length -= 48;
        while (length >= 64) {
            x1 = ota_clmul_fold(x1, fold4, ota_clmul_load(bytes, reverse));
            x2 = ota_clmul_fold(x2, fold4, ota_clmul_load(bytes + 16, reverse));
            x3 = ota_clmul_fold(x3, fold4, ota_clmul_load(bytes + 32, reverse));
            x4 = ota_clmul_fold(x4, fold4, ota_clmul_load(bytes + 48, reverse));
            bytes += 64;
            length -= 64;
        }
        x1 = ota_clmul_fold(x1, fold1, x2);
        x1 = ota_clmul_fold(x1, fold1, x3);
        x1 = ota_clmul_fold(x1, fold1, x4);
    }
    while (length >= 16) {
        x1 = ota_clmul_fold(x1, fold1, ota_clmul_load(bytes, reverse));
        bytes += 16;
        length -= 16;
    }
    return x1;
}

#endif
