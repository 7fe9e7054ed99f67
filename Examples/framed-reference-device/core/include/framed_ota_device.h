/*
 * framed_ota_device.h: device side of the "framed" OTA protocol, versions 1 and 2.
 *
 * The contract is docs/protocols/framed.md; this is its portable C reference implementation.
 * It is plain C99, allocates nothing, and touches no hardware: flash, notifications and the
 * reboot go through the callbacks in framed_ota_platform, which a thin port supplies (see
 * ../esp-idf/framed_ota_nimble.c for ESP-IDF + NimBLE, and the Swift wrapper in the test suite).
 *
 * Flash layout of the update slot (slot_size bytes, erase granularity sector_size):
 *
 *     [0, slot_size - sector_size)          the image (an image may use all of it)
 *     [slot_size - sector_size, slot_size)  the journal: where the session stands, durably
 *
 * Using it:
 *
 *     static framed_ota_device s_ota;                       // about 4.2 KB of RAM, see below
 *     framed_ota_init(&s_ota, &platform);                   // at boot: reads the journal
 *     // GATT glue, from the BLE stack's callbacks:
 *     att = framed_ota_control_write(&s_ota, bytes, len);   // Control written (with response)
 *     framed_ota_data_write(&s_ota, bytes, len);            // Data written (without response)
 *     n = framed_ota_status_read(&s_ota, out, sizeof out);  // Status read
 *     framed_ota_disconnected(&s_ota);                      // link down (RAM state kept)
 *
 * Threading: the functions are not reentrant and must not run concurrently on one device; call
 * them from one task (the BLE host task) or behind a lock. Callbacks are invoked synchronously
 * from inside these calls and must not call back into the device.
 *
 * Timing: every call does its flash work before returning (erasing a data sector when a write
 * first enters it, erasing the journal at BEGIN and when it fills, reading the whole image back
 * at COMMIT), and notifications are sent from inside the call, after that work.
 */
#ifndef FRAMED_OTA_DEVICE_H
#define FRAMED_OTA_DEVICE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Protocol constants (docs/protocols/framed.md) ------------------------------------- */

/** Protocol version 1 (offset and CRC-32 per chunk); Status always carries this number. */
#define FRAMED_OTA_PROTOCOL_VERSION 1u
/** Protocol version 2: compact chunks, tag:u16 (sequence, batch-end bit) and a CRC-32 per batch. */
#define FRAMED_OTA_PROTOCOL_VERSION_COMPACT 2u
/** Largest batch (chunks per ACK) this device uses: Status maxBatch, and the BEGIN clamp. */
#define FRAMED_OTA_MAX_BATCH 16u
/** Delay between the COMMIT reply and the reboot into the new image. */
#define FRAMED_OTA_REBOOT_DELAY_MS 300u
/** Length of the Status characteristic value. */
#define FRAMED_OTA_STATUS_LENGTH 24u
/** Bytes before the payload of a version-1 data chunk: offset:u32 crc:u32. */
#define FRAMED_OTA_CHUNK_HEADER_LENGTH 8u
/** Bytes before the payload of a version-2 data chunk: tag:u16. */
#define FRAMED_OTA_COMPACT_HEADER_LENGTH 2u
/** Bytes after the payload of a version-2 batch-end chunk: the CRC-32 of the image prefix. */
#define FRAMED_OTA_BATCH_CHECK_LENGTH 4u
/** Version-2 tag: the batch-end bit, and the 15 bits of the sequence number. */
#define FRAMED_OTA_TAG_BATCH_END 0x8000u
#define FRAMED_OTA_TAG_SEQUENCE_MASK 0x7FFFu
/** Sequence numbers ahead of the expected one by less than this are a gap, the rest duplicates. */
#define FRAMED_OTA_SEQUENCE_HORIZON 0x4000u

/*
 * The largest flash sector (erase unit) supported. The device struct holds a buffer of this size
 * for the read-modify-write of a partly written sector on resume, and reuses it to read the
 * journal at boot and the image at COMMIT. Override with -DFRAMED_OTA_MAX_SECTOR_SIZE=... when
 * the flash has bigger sectors (every translation unit must see the same value).
 */
#ifndef FRAMED_OTA_MAX_SECTOR_SIZE
#define FRAMED_OTA_MAX_SECTOR_SIZE 4096u
#endif

/* Opcodes. Commands (Control, written with response) and their replies (Control, notified). */
#define FRAMED_OTA_OP_BEGIN 0x10u
#define FRAMED_OTA_OP_COMMIT 0x11u
#define FRAMED_OTA_OP_ABORT 0x12u
#define FRAMED_OTA_OP_BEGIN_REPLY 0x90u
#define FRAMED_OTA_OP_COMMIT_REPLY 0x91u
#define FRAMED_OTA_OP_ABORT_REPLY 0x92u
#define FRAMED_OTA_OP_ACK 0xA0u
#define FRAMED_OTA_OP_NAK 0xA1u

/* Command lengths, opcode included. */
#define FRAMED_OTA_BEGIN_LENGTH 16u
#define FRAMED_OTA_COMMIT_LENGTH 1u
#define FRAMED_OTA_ABORT_LENGTH 1u

/* Session states (Status `state`, BEGIN reply `state`). */
#define FRAMED_OTA_STATE_IDLE 0u
#define FRAMED_OTA_STATE_RECEIVING 1u
#define FRAMED_OTA_STATE_COMPLETE 2u
#define FRAMED_OTA_STATE_INSTALLED 3u
#define FRAMED_OTA_STATE_FAILED 4u

/* Reply statuses. */
#define FRAMED_OTA_STATUS_OK 0x00u
#define FRAMED_OTA_STATUS_CRC_MISMATCH 0x01u
#define FRAMED_OTA_STATUS_INCOMPLETE 0x02u
#define FRAMED_OTA_STATUS_FLASH_ERROR 0x03u
#define FRAMED_OTA_STATUS_TOO_LARGE 0x04u
#define FRAMED_OTA_STATUS_BAD_STATE 0x05u
#define FRAMED_OTA_STATUS_INVALID_PARAMETER 0x06u

/* NAK reasons. */
#define FRAMED_OTA_NAK_CRC 1u
#define FRAMED_OTA_NAK_GAP 2u
#define FRAMED_OTA_NAK_FLASH 3u
#define FRAMED_OTA_NAK_NO_SESSION 4u

/* ATT statuses framed_ota_control_write returns (Bluetooth Core Vol 3 Part F 3.4.1.1). */
#define FRAMED_OTA_ATT_OK 0x00u
#define FRAMED_OTA_ATT_INVALID_PDU 0x04u
#define FRAMED_OTA_ATT_INVALID_LENGTH 0x0Du

/* ---- Platform ---------------------------------------------------------------------------- */

/**
 * What the device needs from its platform. framed_ota_init copies the struct, so it need not
 * outlive the call; `context` is passed back to every callback untouched.
 *
 * Offsets are relative to the start of the update slot. The flash callbacks return 0 on success
 * and anything else on failure; they are only ever called with ranges inside the slot, erases
 * with sector-aligned offset and length. flash_write programs bytes that were erased before
 * (NOR semantics: the core never programs a byte twice without erasing its sector first).
 */
typedef struct {
    void *context;
    /** Size of the update slot in bytes, including the journal sector (the last sector). */
    uint32_t slot_size;
    /** Erase granularity in bytes, e.g. 4096; at most FRAMED_OTA_MAX_SECTOR_SIZE, at least 32. */
    uint32_t sector_size;
    int (*flash_erase)(void *context, uint32_t offset, uint32_t length);
    int (*flash_write)(void *context, uint32_t offset, const uint8_t *data, uint32_t length);
    int (*flash_read)(void *context, uint32_t offset, uint8_t *data, uint32_t length);
    /** Sends a notification on Control (best effort; may be NULL). At most 10 bytes. */
    void (*notify)(void *context, const uint8_t *data, uint16_t length);
    /** Reboots into the new image after delay_ms, once COMMIT succeeded (may be NULL). */
    void (*reboot)(void *context, uint32_t delay_ms);
} framed_ota_platform;

/**
 * All of a device's RAM state. Treat the fields as private: they are here only so the struct
 * can be allocated statically. It holds no pointers except the platform's own.
 */
typedef struct {
    framed_ota_platform platform;
    /** The platform passed framed_ota_init's checks; otherwise every BEGIN fails with 03. */
    bool configured;
    /** FRAMED_OTA_STATE_*. */
    uint8_t state;
    /** Session identity (zero when idle). */
    uint32_t image_size;
    uint32_t image_crc;
    uint32_t image_version;
    /** Next byte needed, and the CRC-32 of [0, expected). */
    uint32_t expected;
    uint32_t running_crc;
    /** Last position recorded in the journal, and the CRC-32 of [0, durable_offset). */
    uint32_t durable_offset;
    uint32_t durable_crc;
    /** Index of the next free record slot in the journal sector. */
    uint32_t journal_next;
    /** [expected, erased_end) is known to be erased; false after boot until the tail is checked. */
    bool erased_known;
    uint32_t erased_end;
    /** Negotiated batch, and chunks accepted since the last ACK. */
    uint16_t batch;
    uint16_t chunks_since_ack;
    /** A NAK was sent and no chunk at `expected` has arrived since. */
    bool nak_outstanding;
    /** The chunk format the last BEGIN chose (FRAMED_OTA_PROTOCOL_VERSION or _COMPACT). */
    uint8_t version;
    /** Version 2: the sequence number expected next, and the one at durable_offset. In version 2,
     * [durable_offset, expected) is written but not yet vouched for by a batch check. */
    uint16_t expected_sequence;
    uint16_t durable_sequence;
    /** Sector buffer (resume read-modify-write, journal scan at boot, read-back at COMMIT). */
    uint8_t scratch[FRAMED_OTA_MAX_SECTOR_SIZE];
} framed_ota_device;

/* ---- API --------------------------------------------------------------------------------- */

/**
 * Boots the device: clears all RAM state, copies `platform`, and restores the session from the
 * journal in the slot's last sector (idle when there is none). Call at every boot, on a device
 * whose RAM state may hold anything.
 *
 * The platform is checked: callbacks for flash present, sector_size in [32,
 * FRAMED_OTA_MAX_SECTOR_SIZE], slot_size a multiple of sector_size of at least two sectors. A
 * platform that fails leaves the device idle and answers every BEGIN with status 03.
 */
void framed_ota_init(framed_ota_device *device, const framed_ota_platform *platform);

/**
 * Handles a write (with response) to Control: BEGIN, COMMIT or ABORT. The reply is notified
 * from inside the call. Returns the ATT status for the write response:
 * FRAMED_OTA_ATT_OK (the command was handled; its outcome is in the reply),
 * FRAMED_OTA_ATT_INVALID_PDU (empty write or unknown opcode; no reply), or
 * FRAMED_OTA_ATT_INVALID_LENGTH (known opcode, wrong length; no reply).
 */
uint8_t framed_ota_control_write(framed_ota_device *device, const uint8_t *data, uint16_t length);

/**
 * Handles a write (without response) to Data: one chunk in the format the last BEGIN chose
 * (version 1: offset:u32 crc:u32 payload; version 2: tag:u16 payload [batchCRC:u32]). ACKs and
 * NAKs are notified from inside the call.
 */
void framed_ota_data_write(framed_ota_device *device, const uint8_t *data, uint16_t length);

/**
 * Writes the Status value (FRAMED_OTA_STATUS_LENGTH bytes) to `out`. Returns the number of bytes
 * written: FRAMED_OTA_STATUS_LENGTH, or 0 when `capacity` is too small.
 */
uint16_t framed_ota_status_read(const framed_ota_device *device, uint8_t *out, uint16_t capacity);

/** The link went down. The session stays in RAM (and in flash) for the next connection. */
void framed_ota_disconnected(framed_ota_device *device);

/**
 * CRC-32 (IEEE 802.3, reflected, polynomial 0xEDB88320, init and final XOR 0xFFFFFFFF), as
 * zlib's crc32(): pass 0 to start, or a previous result to continue over more bytes.
 * `data` may be NULL when `length` is 0.
 */
uint32_t framed_ota_crc32(uint32_t crc, const uint8_t *data, size_t length);

#ifdef __cplusplus
}
#endif

#endif /* FRAMED_OTA_DEVICE_H */
