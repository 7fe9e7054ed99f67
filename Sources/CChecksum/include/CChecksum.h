#ifndef CCHECKSUM_H
#define CCHECKSUM_H

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

#endif
