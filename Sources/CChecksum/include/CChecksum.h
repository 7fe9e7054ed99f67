#ifndef CCHECKSUM_H
#define CCHECKSUM_H

// Checksums and digests with the CPU's own instructions, where it has them (decisions 0060, 0061,
// 0064).

#include <stddef.h>
#include <stdint.h>

/// Whether this CPU can fold CRC-32 with carry-less multiplication (x86-64 with PCLMULQDQ and
/// SSE4.1). Asks the CPU each call: cache the answer.
int ota_crc32_folding_available(void);

/// Continues the CRC-32 (IEEE 802.3, reflected, polynomial 0xEDB88320) register `state` over
/// `length` bytes, where `state` is the register itself (zlib's value with every bit inverted),
/// not zlib's pre- and post-inverted value. `length` must be a multiple of 16 and at least 64, and
/// ota_crc32_folding_available() must have returned 1.
uint32_t ota_crc32_fold(uint32_t state, const uint8_t *bytes, size_t length);

/// Continues the CRC-16/XMODEM (polynomial 0x1021, not reflected, initial value 0, no final XOR)
/// register `crc` over `length` bytes by carry-less multiplication folding; for XMODEM the
/// register is also the published value. `length` must be a multiple of 16 (0 returns `crc`
/// unchanged), and ota_crc32_folding_available() must have returned 1: the same PCLMULQDQ and
/// SSE4.1 check applies.
uint16_t ota_crc16_xmodem_fold(uint16_t crc, const uint8_t *bytes, size_t length);

/// Whether this CPU has the SHA extensions (x86-64 with SHA, SSSE3 and SSE4.1). Asks the CPU
/// each call: cache the answer.
int ota_sha256_rounds_available(void);

/// Compresses `count` 64-byte blocks into the SHA-256 chaining state `state` (H0…H7, as FIPS
/// 180-4 defines them), with the SHA extensions; ota_sha256_rounds_available() must have
/// returned 1.
void ota_sha256_rounds(uint32_t state[8], const uint8_t *blocks, size_t count);

#endif
