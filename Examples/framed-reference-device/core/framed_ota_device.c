/*
 * framed_ota_device.c: device side of the "framed" OTA protocol, versions 1 and 2.
 *
 * The reference implementation of docs/protocols/framed.md. Read the spec first; this file
 * follows its sections in order: helpers, journal (Persistence), data flash, chunks (Data
 * chunks, Acknowledgements and NAKs), commands (Commands and replies), Status, boot.
 *
 * Invariants kept throughout:
 *   - expected <= image_size, and running_crc is the CRC-32 of image bytes [0, expected) as
 *     received (version 1: verified chunk by chunk; version 2: verified up to durable_offset by
 *     the batch checks, the rest dropped at the next BEGIN or a failed check);
 *   - durable_offset <= expected: the last journal record; an ACK is sent only after the
 *     record for its offset is in flash, so an ACK is never ahead of the journal;
 *   - when erased_known, [expected, erased_end) is erased flash, erased_end is sector-aligned
 *     and never beyond the journal sector, so every program hits erased bytes (NOR);
 *   - nothing read from the wire is trusted: every length is checked before it is used, and
 *     offset arithmetic is done so that it cannot wrap.
 */
#include "framed_ota_device.h"

#include <string.h>

/* ---- Journal layout (spec: Persistence) ---------------------------------------------------- */

#define JOURNAL_HEADER_LENGTH 16u
#define JOURNAL_RECORD_LENGTH 8u
/** A record with this offset is the installed marker: the image was committed. */
#define JOURNAL_INSTALLED_MARKER 0xFFFFFFFEu

static const uint8_t journal_magic[4] = {0x46, 0x4F, 0x54, 0x41}; /* "FOTA" */

/* Wire lengths of what the device notifies. */
#define ACK_LENGTH 9u
#define NAK_LENGTH 10u
#define BEGIN_REPLY_LENGTH 9u
#define SHORT_REPLY_LENGTH 2u

/* Smallest sector that holds the journal header and two records. */
#define MIN_SECTOR_SIZE 32u

/* ---- CRC-32 --------------------------------------------------------------------------------- */

/* crc32_table[n] = CRC of the byte n, reflected polynomial 0xEDB88320 (as in zlib). */
static const uint32_t crc32_table[256] = {
    0x00000000U, 0x77073096U, 0xEE0E612CU, 0x990951BAU, 0x076DC419U, 0x706AF48FU,
    0xE963A535U, 0x9E6495A3U, 0x0EDB8832U, 0x79DCB8A4U, 0xE0D5E91EU, 0x97D2D988U,
    0x09B64C2BU, 0x7EB17CBDU, 0xE7B82D07U, 0x90BF1D91U, 0x1DB71064U, 0x6AB020F2U,
    0xF3B97148U, 0x84BE41DEU, 0x1ADAD47DU, 0x6DDDE4EBU, 0xF4D4B551U, 0x83D385C7U,
    0x136C9856U, 0x646BA8C0U, 0xFD62F97AU, 0x8A65C9ECU, 0x14015C4FU, 0x63066CD9U,
    0xFA0F3D63U, 0x8D080DF5U, 0x3B6E20C8U, 0x4C69105EU, 0xD56041E4U, 0xA2677172U,
    0x3C03E4D1U, 0x4B04D447U, 0xD20D85FDU, 0xA50AB56BU, 0x35B5A8FAU, 0x42B2986CU,
    0xDBBBC9D6U, 0xACBCF940U, 0x32D86CE3U, 0x45DF5C75U, 0xDCD60DCFU, 0xABD13D59U,
    0x26D930ACU, 0x51DE003AU, 0xC8D75180U, 0xBFD06116U, 0x21B4F4B5U, 0x56B3C423U,
    0xCFBA9599U, 0xB8BDA50FU, 0x2802B89EU, 0x5F058808U, 0xC60CD9B2U, 0xB10BE924U,
    0x2F6F7C87U, 0x58684C11U, 0xC1611DABU, 0xB6662D3DU, 0x76DC4190U, 0x01DB7106U,
    0x98D220BCU, 0xEFD5102AU, 0x71B18589U, 0x06B6B51FU, 0x9FBFE4A5U, 0xE8B8D433U,
    0x7807C9A2U, 0x0F00F934U, 0x9609A88EU, 0xE10E9818U, 0x7F6A0DBBU, 0x086D3D2DU,
    0x91646C97U, 0xE6635C01U, 0x6B6B51F4U, 0x1C6C6162U, 0x856530D8U, 0xF262004EU,
    0x6C0695EDU, 0x1B01A57BU, 0x8208F4C1U, 0xF50FC457U, 0x65B0D9C6U, 0x12B7E950U,
    0x8BBEB8EAU, 0xFCB9887CU, 0x62DD1DDFU, 0x15DA2D49U, 0x8CD37CF3U, 0xFBD44C65U,
    0x4DB26158U, 0x3AB551CEU, 0xA3BC0074U, 0xD4BB30E2U, 0x4ADFA541U, 0x3DD895D7U,
    0xA4D1C46DU, 0xD3D6F4FBU, 0x4369E96AU, 0x346ED9FCU, 0xAD678846U, 0xDA60B8D0U,
    0x44042D73U, 0x33031DE5U, 0xAA0A4C5FU, 0xDD0D7CC9U, 0x5005713CU, 0x270241AAU,
    0xBE0B1010U, 0xC90C2086U, 0x5768B525U, 0x206F85B3U, 0xB966D409U, 0xCE61E49FU,
    0x5EDEF90EU, 0x29D9C998U, 0xB0D09822U, 0xC7D7A8B4U, 0x59B33D17U, 0x2EB40D81U,
    0xB7BD5C3BU, 0xC0BA6CADU, 0xEDB88320U, 0x9ABFB3B6U, 0x03B6E20CU, 0x74B1D29AU,
    0xEAD54739U, 0x9DD277AFU, 0x04DB2615U, 0x73DC1683U, 0xE3630B12U, 0x94643B84U,
    0x0D6D6A3EU, 0x7A6A5AA8U, 0xE40ECF0BU, 0x9309FF9DU, 0x0A00AE27U, 0x7D079EB1U,
    0xF00F9344U, 0x8708A3D2U, 0x1E01F268U, 0x6906C2FEU, 0xF762575DU, 0x806567CBU,
    0x196C3671U, 0x6E6B06E7U, 0xFED41B76U, 0x89D32BE0U, 0x10DA7A5AU, 0x67DD4ACCU,
    0xF9B9DF6FU, 0x8EBEEFF9U, 0x17B7BE43U, 0x60B08ED5U, 0xD6D6A3E8U, 0xA1D1937EU,
    0x38D8C2C4U, 0x4FDFF252U, 0xD1BB67F1U, 0xA6BC5767U, 0x3FB506DDU, 0x48B2364BU,
    0xD80D2BDAU, 0xAF0A1B4CU, 0x36034AF6U, 0x41047A60U, 0xDF60EFC3U, 0xA867DF55U,
    0x316E8EEFU, 0x4669BE79U, 0xCB61B38CU, 0xBC66831AU, 0x256FD2A0U, 0x5268E236U,
    0xCC0C7795U, 0xBB0B4703U, 0x220216B9U, 0x5505262FU, 0xC5BA3BBEU, 0xB2BD0B28U,
    0x2BB45A92U, 0x5CB36A04U, 0xC2D7FFA7U, 0xB5D0CF31U, 0x2CD99E8BU, 0x5BDEAE1DU,
    0x9B64C2B0U, 0xEC63F226U, 0x756AA39CU, 0x026D930AU, 0x9C0906A9U, 0xEB0E363FU,
    0x72076785U, 0x05005713U, 0x95BF4A82U, 0xE2B87A14U, 0x7BB12BAEU, 0x0CB61B38U,
    0x92D28E9BU, 0xE5D5BE0DU, 0x7CDCEFB7U, 0x0BDBDF21U, 0x86D3D2D4U, 0xF1D4E242U,
    0x68DDB3F8U, 0x1FDA836EU, 0x81BE16CDU, 0xF6B9265BU, 0x6FB077E1U, 0x18B74777U,
    0x88085AE6U, 0xFF0F6A70U, 0x66063BCAU, 0x11010B5CU, 0x8F659EFFU, 0xF862AE69U,
    0x616BFFD3U, 0x166CCF45U, 0xA00AE278U, 0xD70DD2EEU, 0x4E048354U, 0x3903B3C2U,
    0xA7672661U, 0xD06016F7U, 0x4969474DU, 0x3E6E77DBU, 0xAED16A4AU, 0xD9D65ADCU,
    0x40DF0B66U, 0x37D83BF0U, 0xA9BCAE53U, 0xDEBB9EC5U, 0x47B2CF7FU, 0x30B5FFE9U,
    0xBDBDF21CU, 0xCABAC28AU, 0x53B39330U, 0x24B4A3A6U, 0xBAD03605U, 0xCDD70693U,
    0x54DE5729U, 0x23D967BFU, 0xB3667A2EU, 0xC4614AB8U, 0x5D681B02U, 0x2A6F2B94U,
    0xB40BBE37U, 0xC30C8EA1U, 0x5A05DF1BU, 0x2D02EF8DU,
};

uint32_t framed_ota_crc32(uint32_t crc, const uint8_t *data, size_t length)
{
    size_t i;
    if (data == NULL) {
        return crc;
    }
    crc = ~crc;
    for (i = 0; i < length; i++) {
        crc = crc32_table[(crc ^ data[i]) & 0xFFu] ^ (crc >> 8);
    }
    return ~crc;
}

/* ---- Little-endian helpers (byte by byte: no alignment or host-endianness assumptions) ---- */

static uint32_t get_u32(const uint8_t *p)
{
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}

static uint16_t get_u16(const uint8_t *p)
{
    return (uint16_t)((uint16_t)p[0] | (uint16_t)((uint16_t)p[1] << 8));
}

static void put_u32(uint8_t *p, uint32_t value)
{
    p[0] = (uint8_t)(value & 0xFFu);
    p[1] = (uint8_t)((value >> 8) & 0xFFu);
    p[2] = (uint8_t)((value >> 16) & 0xFFu);
    p[3] = (uint8_t)((value >> 24) & 0xFFu);
}

static void put_u16(uint8_t *p, uint16_t value)
{
    p[0] = (uint8_t)(value & 0xFFu);
    p[1] = (uint8_t)((value >> 8) & 0xFFu);
}

static bool all_erased(const uint8_t *bytes, uint32_t length)
{
    uint32_t i;
    for (i = 0; i < length; i++) {
        if (bytes[i] != 0xFFu) {
            return false;
        }
    }
    return true;
}

/* ---- Platform access ------------------------------------------------------------------------ */

static bool flash_erase(framed_ota_device *d, uint32_t offset, uint32_t length)
{
    return d->platform.flash_erase(d->platform.context, offset, length) == 0;
}

static bool flash_write(framed_ota_device *d, uint32_t offset, const uint8_t *data, uint32_t length)
{
    return length == 0 || d->platform.flash_write(d->platform.context, offset, data, length) == 0;
}

static bool flash_read(framed_ota_device *d, uint32_t offset, uint8_t *data, uint32_t length)
{
    return length == 0 || d->platform.flash_read(d->platform.context, offset, data, length) == 0;
}

static void notify(framed_ota_device *d, const uint8_t *data, uint16_t length)
{
    if (d->platform.notify != NULL) {
        d->platform.notify(d->platform.context, data, length);
    }
}

/** Where the journal sector starts; the image may use everything before it. */
static uint32_t journal_base(const framed_ota_device *d)
{
    return d->platform.slot_size - d->platform.sector_size;
}

/** Largest image the slot can hold. */
static uint32_t max_image_size(const framed_ota_device *d)
{
    return journal_base(d);
}

/** Record slots in the journal sector after the header. */
static uint32_t journal_capacity(const framed_ota_device *d)
{
    return (d->platform.sector_size - JOURNAL_HEADER_LENGTH) / JOURNAL_RECORD_LENGTH;
}

/* ---- Session state in RAM ------------------------------------------------------------------- */

/** Forgets the session in RAM (state idle, identity zero). Flash is not touched. */
static void clear_session(framed_ota_device *d)
{
    d->state = FRAMED_OTA_STATE_IDLE;
    d->image_size = 0;
    d->image_crc = 0;
    d->image_version = 0;
    d->expected = 0;
    d->running_crc = 0;
    d->durable_offset = 0;
    d->durable_crc = 0;
    d->journal_next = 0;
    d->erased_known = true;
    d->erased_end = 0;
    d->chunks_since_ack = 0;
    d->nak_outstanding = false;
}

/** Positions the session at offset 0 (nothing received, nothing of the image erased yet). */
static void rewind_session(framed_ota_device *d)
{
    d->expected = 0;
    d->running_crc = 0; /* CRC-32 of no bytes */
    d->durable_offset = 0;
    d->durable_crc = 0;
    d->erased_known = true; /* offset 0 is sector-aligned: sector 0 is erased on first entry */
    d->erased_end = 0;
    d->chunks_since_ack = 0;
    d->nak_outstanding = false;
}

/* ---- Journal (spec: Persistence) ------------------------------------------------------------ */

/**
 * Erases the journal sector and writes the header for the session's identity. Afterwards the
 * journal says "offset 0" (a header without records), and records go from slot 0.
 */
static bool journal_start(framed_ota_device *d)
{
    uint8_t header[JOURNAL_HEADER_LENGTH];
    memcpy(header, journal_magic, sizeof journal_magic);
    put_u32(header + 4, d->image_size);
    put_u32(header + 8, d->image_crc);
    put_u32(header + 12, d->image_version);
    d->journal_next = 0;
    if (!flash_erase(d, journal_base(d), d->platform.sector_size)) {
        return false;
    }
    return flash_write(d, journal_base(d), header, JOURNAL_HEADER_LENGTH);
}

/**
 * Appends a record (offset, crc) to the journal; when the sector is full, starts it over with
 * the header and this record. On success a normal record becomes the durable position.
 *
 * Power loss between the erase and the rewrite of a full sector loses the session (the next
 * BEGIN starts at 0): wasteful, never corrupting.
 */
static bool journal_append(framed_ota_device *d, uint32_t offset, uint32_t crc)
{
    uint8_t record[JOURNAL_RECORD_LENGTH];
    uint32_t position;
    if (d->journal_next >= journal_capacity(d) && !journal_start(d)) {
        return false;
    }
    put_u32(record, offset);
    put_u32(record + 4, crc);
    position = journal_base(d) + JOURNAL_HEADER_LENGTH + d->journal_next * JOURNAL_RECORD_LENGTH;
    /* The slot is consumed even if programming fails: it may be partly programmed now. */
    d->journal_next++;
    if (!flash_write(d, position, record, JOURNAL_RECORD_LENGTH)) {
        return false;
    }
    if (offset != JOURNAL_INSTALLED_MARKER) {
        d->durable_offset = offset;
        d->durable_crc = crc;
    }
    return true;
}

/**
 * At boot: restores the session from the journal, or leaves the device idle when the sector
 * holds no valid header.
 *
 * The header must carry the magic and a size the slot can hold. Then the last record whose bytes
 * are not all FF wins. Defensive addition to the spec: a record whose offset is beyond the image
 * size (and is not the installed marker) cannot have been written whole (power lost while it was
 * programmed); it is skipped and the record before it wins.
 */
static void journal_load(framed_ota_device *d)
{
    const uint8_t *sector = d->scratch;
    uint32_t size, capacity, slot;
    uint32_t offset = 0, crc = 0;
    bool installed = false;

    if (!flash_read(d, journal_base(d), d->scratch, d->platform.sector_size)) {
        return; /* unreadable: idle; the next BEGIN erases the sector */
    }
    if (memcmp(sector, journal_magic, sizeof journal_magic) != 0) {
        return;
    }
    size = get_u32(sector + 4);
    if (size == 0 || size > max_image_size(d)) {
        return;
    }

    capacity = journal_capacity(d);
    d->journal_next = 0;
    for (slot = 0; slot < capacity; slot++) {
        const uint8_t *record = sector + JOURNAL_HEADER_LENGTH + slot * JOURNAL_RECORD_LENGTH;
        uint32_t record_offset;
        if (all_erased(record, JOURNAL_RECORD_LENGTH)) {
            continue;
        }
        d->journal_next = slot + 1; /* a programmed slot cannot take another record */
        record_offset = get_u32(record);
        if (record_offset == JOURNAL_INSTALLED_MARKER) {
            installed = true;
        } else if (record_offset <= size) {
            installed = false;
            offset = record_offset;
            crc = get_u32(record + 4);
        }
        /* else: torn record, skipped */
    }

    d->image_size = size;
    d->image_crc = get_u32(sector + 8);
    d->image_version = get_u32(sector + 12);
    if (installed) {
        offset = size;
        crc = d->image_crc;
        d->state = FRAMED_OTA_STATE_INSTALLED;
    } else {
        d->state = offset == size ? FRAMED_OTA_STATE_COMPLETE : FRAMED_OTA_STATE_RECEIVING;
    }
    d->expected = offset;
    d->running_crc = crc;
    d->durable_offset = offset;
    d->durable_crc = crc;
    /* Bytes after the last record may have been programmed before the reboot: until the tail of
     * the current sector is checked, nothing beyond `expected` counts as erased. */
    d->erased_known = false;
    d->erased_end = offset;
}

/* ---- Data flash ----------------------------------------------------------------------------- */

/**
 * Makes [expected, end of its sector) erased without losing [start of sector, expected).
 *
 * After a reboot the sector holding `expected` may carry bytes programmed after the last journal
 * record. If any byte of the tail is not FF, the durable prefix is read into RAM, the sector is
 * erased and the prefix programmed back (spec: Persistence, NOR read-modify-write).
 *
 * Power loss between that erase and the reprogramming leaves a journal that claims bytes the
 * sector no longer holds; COMMIT's read-back CRC catches it (status 01, restart at 0).
 */
static bool repair_tail(framed_ota_device *d)
{
    const uint32_t sector = d->platform.sector_size;
    const uint32_t start = d->expected - d->expected % sector;
    const uint32_t end = start + sector; /* <= journal_base, since expected < image_size */
    const uint32_t prefix = d->expected - start;

    if (prefix == 0) {
        /* Sector-aligned: the sector at `expected` is erased when the first write enters it. */
        d->erased_end = d->expected;
        d->erased_known = true;
        return true;
    }
    if (!flash_read(d, d->expected, d->scratch, end - d->expected)) {
        return false;
    }
    if (!all_erased(d->scratch, end - d->expected)) {
        if (!flash_read(d, start, d->scratch, prefix) || !flash_erase(d, start, sector) ||
            !flash_write(d, start, d->scratch, prefix)) {
            return false;
        }
    }
    d->erased_end = end;
    d->erased_known = true;
    return true;
}

/** Makes [expected, end) programmable: erases each data sector when a write first enters it. */
static bool prepare_flash(framed_ota_device *d, uint32_t end)
{
    if (!d->erased_known && !repair_tail(d)) {
        return false;
    }
    while (d->erased_end < end) {
        if (!flash_erase(d, d->erased_end, d->platform.sector_size)) {
            return false;
        }
        d->erased_end += d->platform.sector_size;
    }
    return true;
}

/* ---- ACKs and NAKs (spec: Acknowledgements and NAKs) ----------------------------------------- */

static void send_ack(framed_ota_device *d)
{
    uint8_t ack[ACK_LENGTH];
    ack[0] = FRAMED_OTA_OP_ACK;
    put_u32(ack + 1, d->expected);
    put_u32(ack + 5, d->running_crc);
    notify(d, ack, ACK_LENGTH);
}

/**
 * Sends NAK(reason, expected, runningCRC) and marks a NAK outstanding. Reasons 1, 2 and 4 are
 * suppressed while one is outstanding, so a burst of out-of-place chunks costs one NAK; reason 3
 * (fatal) is always sent.
 */
static void send_nak(framed_ota_device *d, uint8_t reason)
{
    uint8_t nak[NAK_LENGTH];
    if (d->nak_outstanding && reason != FRAMED_OTA_NAK_FLASH) {
        return;
    }
    nak[0] = FRAMED_OTA_OP_NAK;
    nak[1] = reason;
    put_u32(nak + 2, d->expected);
    put_u32(nak + 6, d->running_crc);
    d->nak_outstanding = true;
    notify(d, nak, NAK_LENGTH);
}

/** A flash operation failed during the transfer: the session fails (fatal NAK 3). */
static void fail_transfer(framed_ota_device *d)
{
    d->state = FRAMED_OTA_STATE_FAILED;
    send_nak(d, FRAMED_OTA_NAK_FLASH);
}

/** Journals [0, expected) and acknowledges it. */
static void acknowledge(framed_ota_device *d)
{
    if (!journal_append(d, d->expected, d->running_crc)) {
        fail_transfer(d);
        return;
    }
    d->chunks_since_ack = 0;
    send_ack(d);
}

/* ---- Data chunks (spec: Data chunks) -------------------------------------------------------- */

/* Version 2 chunks, below. */
static void receive_compact(framed_ota_device *d, const uint8_t *data, uint16_t length);

/** Stores `length` bytes (1 or more) that belong at `expected`, and ACKs when due. */
static void accept(framed_ota_device *d, const uint8_t *payload, uint32_t length)
{
    const uint32_t end = d->expected + length; /* <= image_size, checked by the caller */
    if (!prepare_flash(d, end) || !flash_write(d, d->expected, payload, length)) {
        fail_transfer(d);
        return;
    }
    d->running_crc = framed_ota_crc32(d->running_crc, payload, length);
    d->expected = end;
    d->nak_outstanding = false;
    if (d->chunks_since_ack < UINT16_MAX) {
        d->chunks_since_ack++;
    }
    if (d->expected == d->image_size) {
        d->state = FRAMED_OTA_STATE_COMPLETE;
        acknowledge(d);
    } else if (d->chunks_since_ack >= d->batch) {
        acknowledge(d);
    }
}

void framed_ota_data_write(framed_ota_device *d, const uint8_t *data, uint16_t length)
{
    uint32_t offset, crc, payload_length;
    const uint8_t *payload;

    if (d == NULL) {
        return;
    }
    /* Chunks are only taken while a session is open; `complete` stays open so that late
     * duplicates are dropped quietly. */
    if (d->state != FRAMED_OTA_STATE_RECEIVING && d->state != FRAMED_OTA_STATE_COMPLETE) {
        send_nak(d, FRAMED_OTA_NAK_NO_SESSION);
        return;
    }
    if (d->version == FRAMED_OTA_PROTOCOL_VERSION_COMPACT) {
        receive_compact(d, data, length);
        return;
    }
    /* A chunk needs its header and at least one payload byte. A shorter write cannot be placed;
     * it is answered like a corrupt chunk, so the app resends from `expected` right away. */
    if (data == NULL || length <= FRAMED_OTA_CHUNK_HEADER_LENGTH) {
        send_nak(d, FRAMED_OTA_NAK_CRC);
        return;
    }
    offset = get_u32(data);
    crc = get_u32(data + 4);
    payload = data + FRAMED_OTA_CHUNK_HEADER_LENGTH;
    payload_length = (uint32_t)length - FRAMED_OTA_CHUNK_HEADER_LENGTH;

    if (framed_ota_crc32(0, payload, payload_length) != crc) {
        send_nak(d, FRAMED_OTA_NAK_CRC);
        return;
    }
    /* offset + payload_length > image_size, written so that it cannot wrap. */
    if (payload_length > d->image_size || offset > d->image_size - payload_length) {
        send_nak(d, FRAMED_OTA_NAK_NO_SESSION);
        return;
    }
    if (offset == d->expected) {
        accept(d, payload, payload_length);
    } else if (offset < d->expected) {
        const uint32_t end = offset + payload_length; /* <= image_size: no wrap */
        if (end > d->expected) {
            /* Overlaps `expected` (the app changed its chunk size): keep the new bytes. The CRC
             * covered the whole payload, so they are verified too. */
            const uint32_t skip = d->expected - offset;
            accept(d, payload + skip, end - d->expected);
        }
        /* else: a duplicate of bytes already held, dropped silently. */
    } else {
        send_nak(d, FRAMED_OTA_NAK_GAP);
    }
}

/* ---- Version-2 chunks (spec: Data chunks, version 2) ----------------------------------------- */

/**
 * Forgets what arrived after the last batch check: back to durable_offset, whose sequence number
 * was kept with it. The flash after it holds programmed bytes, so nothing beyond it counts as
 * erased until repair_tail has looked (it runs before the next write, or at BEGIN).
 */
static void roll_back(framed_ota_device *d)
{
    d->expected = d->durable_offset;
    d->running_crc = d->durable_crc;
    d->expected_sequence = d->durable_sequence;
    d->chunks_since_ack = 0;
    d->erased_known = false;
    d->erased_end = d->expected;
}

static void receive_compact(framed_ota_device *d, const uint8_t *data, uint16_t length)
{
    uint16_t tag, sequence, distance;
    uint32_t payload_length, end;
    bool batch_end;
    const uint8_t *payload = data + FRAMED_OTA_COMPACT_HEADER_LENGTH;

    if (data == NULL || length <= FRAMED_OTA_COMPACT_HEADER_LENGTH) {
        send_nak(d, FRAMED_OTA_NAK_CRC);
        return;
    }
    tag = get_u16(data);
    batch_end = (tag & FRAMED_OTA_TAG_BATCH_END) != 0;
    sequence = (uint16_t)(tag & FRAMED_OTA_TAG_SEQUENCE_MASK);
    payload_length = (uint32_t)length - FRAMED_OTA_COMPACT_HEADER_LENGTH;
    if (batch_end) {
        if (payload_length <= FRAMED_OTA_BATCH_CHECK_LENGTH) {
            send_nak(d, FRAMED_OTA_NAK_CRC);
            return;
        }
        payload_length -= FRAMED_OTA_BATCH_CHECK_LENGTH;
    }

    distance = (uint16_t)((sequence - d->expected_sequence) & FRAMED_OTA_TAG_SEQUENCE_MASK);
    if (distance != 0) {
        if (distance < FRAMED_OTA_SEQUENCE_HORIZON) {
            send_nak(d, FRAMED_OTA_NAK_GAP); /* ahead: a chunk was lost */
        }
        /* else behind: a duplicate, dropped silently */
        return;
    }
    /* expected + payload_length > image_size, written so that it cannot wrap. */
    if (payload_length > d->image_size - d->expected) {
        send_nak(d, FRAMED_OTA_NAK_NO_SESSION);
        return;
    }
    end = d->expected + payload_length;
    if (end == d->image_size && !batch_end) {
        /* The chunk that completes the image must carry the check of all of it. */
        send_nak(d, FRAMED_OTA_NAK_CRC);
        return;
    }
    if (!prepare_flash(d, end) || !flash_write(d, d->expected, payload, payload_length)) {
        fail_transfer(d);
        return;
    }
    d->running_crc = framed_ota_crc32(d->running_crc, payload, payload_length);
    d->expected = end;
    d->expected_sequence = (uint16_t)((d->expected_sequence + 1u) & FRAMED_OTA_TAG_SEQUENCE_MASK);
    d->nak_outstanding = false;
    if (!batch_end) {
        return;
    }
    if (get_u32(payload + payload_length) != d->running_crc) {
        /* Something since the last check was corrupt: back to it, and ask for it again. */
        roll_back(d);
        send_nak(d, FRAMED_OTA_NAK_CRC);
        return;
    }
    if (d->expected == d->image_size) {
        d->state = FRAMED_OTA_STATE_COMPLETE;
    }
    if (!journal_append(d, d->expected, d->running_crc)) {
        fail_transfer(d);
        return;
    }
    d->durable_sequence = d->expected_sequence;
    d->chunks_since_ack = 0;
    send_ack(d);
}

/* ---- Commands (spec: Commands and replies) -------------------------------------------------- */

/**
 * Opens or continues the session for an identity that passed validation. Returns the status of
 * the BEGIN reply; the reply's state and offset are read from the device afterwards.
 */
static uint8_t begin_session(framed_ota_device *d, uint32_t size, uint32_t crc, uint32_t version,
                             uint16_t batch, uint8_t protocol_version)
{
    const bool same_identity = d->image_size == size && d->image_crc == crc && d->image_version == version;

    /* The app asks for 1...1024; the device grants at most its own limit (larger requests are
     * clamped too rather than refused). */
    d->batch = (uint16_t)(batch < FRAMED_OTA_MAX_BATCH ? batch : FRAMED_OTA_MAX_BATCH);
    d->chunks_since_ack = 0;
    d->nak_outstanding = false;
    /* Version 2 bytes past the last batch check are unverified: the session continues from the
     * check (a new session starts at 0 anyway). Then chunks are numbered from 0 at the offset this
     * BEGIN replies with. */
    if (d->version == FRAMED_OTA_PROTOCOL_VERSION_COMPACT && d->expected > d->durable_offset) {
        roll_back(d);
    }
    d->version = protocol_version;
    d->expected_sequence = 0;
    d->durable_sequence = 0;

    if (same_identity && d->state == FRAMED_OTA_STATE_INSTALLED) {
        return FRAMED_OTA_STATUS_OK; /* already committed: nothing to do */
    }
    if (same_identity &&
        (d->state == FRAMED_OTA_STATE_RECEIVING || d->state == FRAMED_OTA_STATE_COMPLETE)) {
        /* Continue. Make the offset we reply with durable, then make sure the sector at it can
         * be programmed (after a reboot its tail may hold stale bytes). Both cost flash time
         * here, within BEGIN's response timeout, instead of in the middle of the stream. */
        if (d->expected > d->durable_offset && !journal_append(d, d->expected, d->running_crc)) {
            d->state = FRAMED_OTA_STATE_FAILED;
            return FRAMED_OTA_STATUS_FLASH_ERROR;
        }
        if (d->state == FRAMED_OTA_STATE_RECEIVING && !d->erased_known && !repair_tail(d)) {
            d->state = FRAMED_OTA_STATE_FAILED;
            return FRAMED_OTA_STATUS_FLASH_ERROR;
        }
        return FRAMED_OTA_STATUS_OK;
    }

    /* A new session: a different identity, or the device was idle, failed or installed another
     * image. (A failed session is restarted even for the same identity: after a flash failure
     * nothing past offset 0 is trusted.) */
    d->image_size = size;
    d->image_crc = crc;
    d->image_version = version;
    rewind_session(d);
    if (!journal_start(d)) {
        d->state = FRAMED_OTA_STATE_FAILED;
        return FRAMED_OTA_STATUS_FLASH_ERROR;
    }
    d->state = FRAMED_OTA_STATE_RECEIVING;
    return FRAMED_OTA_STATUS_OK;
}

/* BEGIN: 10 version:u8(1 or 2) size:u32 crc:u32 imageVersion:u32 batch:u16
 * reply: 90 status:u8 state:u8 offset:u32 batch:u16 */
static void handle_begin(framed_ota_device *d, const uint8_t *command)
{
    const uint8_t version = command[1];
    const uint32_t size = get_u32(command + 2);
    const uint32_t crc = get_u32(command + 6);
    const uint32_t image_version = get_u32(command + 10);
    const uint16_t batch = get_u16(command + 14);
    uint8_t reply[BEGIN_REPLY_LENGTH];
    uint8_t status;

    if (!d->configured) {
        status = FRAMED_OTA_STATUS_FLASH_ERROR;
    } else if ((version != FRAMED_OTA_PROTOCOL_VERSION && version != FRAMED_OTA_PROTOCOL_VERSION_COMPACT) ||
               size == 0 || batch == 0) {
        status = FRAMED_OTA_STATUS_INVALID_PARAMETER;
    } else if (size > max_image_size(d)) {
        status = FRAMED_OTA_STATUS_TOO_LARGE;
    } else {
        status = begin_session(d, size, crc, image_version, batch, version);
    }

    reply[0] = FRAMED_OTA_OP_BEGIN_REPLY;
    reply[1] = status;
    reply[2] = d->state;
    if (status == FRAMED_OTA_STATUS_OK) {
        /* receiving/complete: expected (now durable); installed: the image size. */
        put_u32(reply + 3, d->expected);
        put_u16(reply + 7, d->batch);
    } else {
        /* Refused (the stored session, if any, is untouched unless flash failed): no offset to
         * continue from, no batch. */
        put_u32(reply + 3, 0);
        put_u16(reply + 7, 0);
    }
    notify(d, reply, BEGIN_REPLY_LENGTH);
}

/** Reads the image back from flash and compares its CRC-32 with the session's. */
static uint8_t verify_image(framed_ota_device *d)
{
    uint32_t crc = 0;
    uint32_t offset = 0;
    while (offset < d->image_size) {
        uint32_t length = d->image_size - offset;
        if (length > d->platform.sector_size) {
            length = d->platform.sector_size;
        }
        if (!flash_read(d, offset, d->scratch, length)) {
            return FRAMED_OTA_STATUS_FLASH_ERROR;
        }
        crc = framed_ota_crc32(crc, d->scratch, length);
        offset += length;
    }
    return (uint8_t)(crc == d->image_crc ? FRAMED_OTA_STATUS_OK : FRAMED_OTA_STATUS_CRC_MISMATCH);
}

/* COMMIT: 11. reply: 91 status:u8, then, when this COMMIT installed the image, the reboot. */
static void handle_commit(framed_ota_device *d)
{
    uint8_t reply[SHORT_REPLY_LENGTH];
    uint8_t status;
    bool installed_now = false;

    switch (d->state) {
    case FRAMED_OTA_STATE_COMPLETE: /* expected == size */
        status = verify_image(d);
        if (status == FRAMED_OTA_STATUS_OK) {
            if (journal_append(d, JOURNAL_INSTALLED_MARKER, d->image_crc)) {
                d->state = FRAMED_OTA_STATE_INSTALLED;
                d->running_crc = d->image_crc;
                d->durable_crc = d->image_crc;
                installed_now = true;
            } else {
                status = FRAMED_OTA_STATUS_FLASH_ERROR;
                d->state = FRAMED_OTA_STATE_FAILED;
            }
        } else if (status == FRAMED_OTA_STATUS_CRC_MISMATCH) {
            /* Flash holds other bytes than the ACKs vouched for: the session (same identity)
             * starts over at offset 0. */
            rewind_session(d);
            d->state = journal_start(d) ? FRAMED_OTA_STATE_RECEIVING : FRAMED_OTA_STATE_FAILED;
        } else {
            d->state = FRAMED_OTA_STATE_FAILED; /* the image could not be read back */
        }
        break;
    case FRAMED_OTA_STATE_INSTALLED:
        /* A repeated COMMIT (its first reply was lost): the same answer, but the reboot the first
         * one scheduled is not scheduled again. */
        status = FRAMED_OTA_STATUS_OK;
        break;
    case FRAMED_OTA_STATE_RECEIVING:
        status = FRAMED_OTA_STATUS_INCOMPLETE; /* expected < size; the session continues */
        break;
    case FRAMED_OTA_STATE_FAILED:
        status = FRAMED_OTA_STATUS_FLASH_ERROR;
        break;
    default:
        status = FRAMED_OTA_STATUS_BAD_STATE; /* idle: no session */
        break;
    }

    reply[0] = FRAMED_OTA_OP_COMMIT_REPLY;
    reply[1] = status;
    notify(d, reply, SHORT_REPLY_LENGTH);
    if (installed_now && d->platform.reboot != NULL) {
        d->platform.reboot(d->platform.context, FRAMED_OTA_REBOOT_DELAY_MS);
    }
}

/* ABORT: 12. reply: 92 status:u8 */
static void handle_abort(framed_ota_device *d)
{
    uint8_t reply[SHORT_REPLY_LENGTH];
    uint8_t status = FRAMED_OTA_STATUS_OK;

    /* Erase the journal so the session does not come back at the next boot. An idle device has
     * no valid journal (or an unconfigured platform): nothing to erase. */
    if (d->state != FRAMED_OTA_STATE_IDLE && !flash_erase(d, journal_base(d), d->platform.sector_size)) {
        status = FRAMED_OTA_STATUS_FLASH_ERROR;
    }
    clear_session(d);
    reply[0] = FRAMED_OTA_OP_ABORT_REPLY;
    reply[1] = status;
    notify(d, reply, SHORT_REPLY_LENGTH);
}

uint8_t framed_ota_control_write(framed_ota_device *d, const uint8_t *data, uint16_t length)
{
    if (d == NULL || data == NULL || length == 0) {
        return FRAMED_OTA_ATT_INVALID_PDU;
    }
    switch (data[0]) {
    case FRAMED_OTA_OP_BEGIN:
        if (length != FRAMED_OTA_BEGIN_LENGTH) {
            return FRAMED_OTA_ATT_INVALID_LENGTH;
        }
        handle_begin(d, data);
        return FRAMED_OTA_ATT_OK;
    case FRAMED_OTA_OP_COMMIT:
        if (length != FRAMED_OTA_COMMIT_LENGTH) {
            return FRAMED_OTA_ATT_INVALID_LENGTH;
        }
        handle_commit(d);
        return FRAMED_OTA_ATT_OK;
    case FRAMED_OTA_OP_ABORT:
        if (length != FRAMED_OTA_ABORT_LENGTH) {
            return FRAMED_OTA_ATT_INVALID_LENGTH;
        }
        handle_abort(d);
        return FRAMED_OTA_ATT_OK;
    default:
        return FRAMED_OTA_ATT_INVALID_PDU;
    }
}

/* ---- Status (spec: Status) ------------------------------------------------------------------ */

/* version:u8 state:u8 offset:u32 runningCRC:u32 size:u32 crc:u32 imageVersion:u32 maxBatch:u16 */
uint16_t framed_ota_status_read(const framed_ota_device *d, uint8_t *out, uint16_t capacity)
{
    if (d == NULL || out == NULL || capacity < FRAMED_OTA_STATUS_LENGTH) {
        return 0;
    }
    out[0] = FRAMED_OTA_PROTOCOL_VERSION;
    out[1] = d->state;
    put_u32(out + 2, d->durable_offset); /* the last durable position, as in an ACK */
    put_u32(out + 6, d->durable_crc);
    put_u32(out + 10, d->image_size); /* all zero when idle */
    put_u32(out + 14, d->image_crc);
    put_u32(out + 18, d->image_version);
    put_u16(out + 22, (uint16_t)FRAMED_OTA_MAX_BATCH);
    return FRAMED_OTA_STATUS_LENGTH;
}

/* ---- Connection and boot -------------------------------------------------------------------- */

void framed_ota_disconnected(framed_ota_device *d)
{
    if (d == NULL) {
        return;
    }
    /* The session stays; the next connection starts with BEGIN, which also resets these. */
    d->nak_outstanding = false;
    d->chunks_since_ack = 0;
}

static bool platform_is_valid(const framed_ota_platform *p)
{
    return p->flash_erase != NULL && p->flash_write != NULL && p->flash_read != NULL &&
           p->sector_size >= MIN_SECTOR_SIZE && p->sector_size <= FRAMED_OTA_MAX_SECTOR_SIZE &&
           p->slot_size % p->sector_size == 0 && p->slot_size / p->sector_size >= 2u;
}

void framed_ota_init(framed_ota_device *d, const framed_ota_platform *platform)
{
    if (d == NULL) {
        return;
    }
    memset(d, 0, sizeof *d);
    clear_session(d);
    d->batch = FRAMED_OTA_MAX_BATCH;
    if (platform == NULL) {
        return;
    }
    d->platform = *platform;
    d->configured = platform_is_valid(platform);
    if (d->configured) {
        journal_load(d);
    }
}
