/*
 * framed_ota_nimble.c: ESP-IDF v5 + NimBLE glue for the framed OTA reference device.
 *
 * Serves the framed OTA service (docs/protocols/framed.md) and forwards everything to the
 * portable core in ../core. The update slot is the next OTA app partition; the core keeps its
 * journal in that partition's last sector, so images may use all of it but 4 KB.
 *
 * Not built on the host; add ../core/framed_ota_device.c and this file to a component that
 * REQUIRES bt app_update esp_partition esp_timer.
 *
 * Use from the application (all three run in the NimBLE host task, so the core needs no lock):
 *
 *     int  framed_ota_nimble_init(void);            // after nimble_port_init(), before the host
 *                                                   // task starts: registers the service
 *     void framed_ota_nimble_gap_event(const struct ble_gap_event *event);
 *                                                   // from your GAP event callback, for every event
 */
#include <stdbool.h>
#include <stdint.h>

#include "esp_err.h"
#include "esp_log.h"
#include "esp_ota_ops.h"
#include "esp_partition.h"
#include "esp_system.h"
#include "esp_timer.h"
#include "host/ble_att.h"
#include "host/ble_gap.h"
#include "host/ble_gatt.h"
#include "host/ble_hs.h"
#include "host/ble_uuid.h"
#include "os/os_mbuf.h"

#include "framed_ota_device.h"

int framed_ota_nimble_init(void);
void framed_ota_nimble_gap_event(const struct ble_gap_event *event);

static const char *TAG = "framed_ota";

/* 4f5442nn-8a2e-4c1b-9f3d-2b7e5c6a0001, little-endian as NimBLE stores 128-bit UUIDs. */
#define FRAMED_UUID(nn) \
    BLE_UUID128_INIT(0x01, 0x00, 0x6a, 0x5c, 0x7e, 0x2b, 0x3d, 0x9f, 0x1b, 0x4c, 0x2e, 0x8a, (nn), 0x42, 0x54, 0x4f)

static const ble_uuid128_t s_service_uuid = FRAMED_UUID(0x00);
static const ble_uuid128_t s_data_uuid = FRAMED_UUID(0x01);
static const ble_uuid128_t s_control_uuid = FRAMED_UUID(0x02);
static const ble_uuid128_t s_status_uuid = FRAMED_UUID(0x03);

static framed_ota_device s_device; /* all of the core's RAM state (~4.2 KB, .bss) */
static const esp_partition_t *s_partition;
static esp_timer_handle_t s_reboot_timer;
static uint16_t s_control_handle;
static uint16_t s_conn_handle = BLE_HS_CONN_HANDLE_NONE;
static bool s_subscribed;
static uint8_t s_buffer[BLE_ATT_ATTR_MAX_LEN]; /* one ATT value, flattened from its mbuf chain */

/* ---- Platform callbacks for the core -------------------------------------------------------- */

static int flash_erase(void *context, uint32_t offset, uint32_t length)
{
    (void)context;
    return esp_partition_erase_range(s_partition, offset, length) == ESP_OK ? 0 : -1;
}

static int flash_write(void *context, uint32_t offset, const uint8_t *data, uint32_t length)
{
    (void)context;
    return esp_partition_write(s_partition, offset, data, length) == ESP_OK ? 0 : -1;
}

static int flash_read(void *context, uint32_t offset, uint8_t *data, uint32_t length)
{
    (void)context;
    return esp_partition_read(s_partition, offset, data, length) == ESP_OK ? 0 : -1;
}

static void notify(void *context, const uint8_t *data, uint16_t length)
{
    struct os_mbuf *om;
    (void)context;
    if (s_conn_handle == BLE_HS_CONN_HANDLE_NONE || !s_subscribed) {
        return; /* the spec has the app subscribe before BEGIN; nothing to tell otherwise */
    }
    om = ble_hs_mbuf_from_flat(data, length);
    if (om == NULL || ble_gatts_notify_custom(s_conn_handle, s_control_handle, om) != 0) {
        ESP_LOGW(TAG, "notification of %u bytes dropped", (unsigned)length); /* the app times out and rewinds */
    }
}

static void reboot_into_new_image(void *arg)
{
    esp_err_t err;
    (void)arg;
    err = esp_ota_set_boot_partition(s_partition); /* verifies the app image first */
    if (err != ESP_OK) {
        ESP_LOGE(TAG, "esp_ota_set_boot_partition: %s", esp_err_to_name(err));
        return;
    }
    esp_restart();
}

static void reboot(void *context, uint32_t delay_ms)
{
    (void)context;
    /* Runs later in the esp_timer task, after the COMMIT reply has gone out. */
    esp_timer_stop(s_reboot_timer); /* harmless if not running */
    ESP_ERROR_CHECK(esp_timer_start_once(s_reboot_timer, (uint64_t)delay_ms * 1000u));
}

/* ---- GATT ------------------------------------------------------------------------------------ */

/** Copies a written value into s_buffer; returns 0 or an ATT error. */
static int flatten(const struct ble_gatt_access_ctxt *ctxt, uint16_t *length)
{
    if (OS_MBUF_PKTLEN(ctxt->om) > sizeof s_buffer) {
        return BLE_ATT_ERR_INVALID_ATTR_VALUE_LEN;
    }
    return ble_hs_mbuf_to_flat(ctxt->om, s_buffer, sizeof s_buffer, length) == 0 ? 0 : BLE_ATT_ERR_UNLIKELY;
}

static int data_access(uint16_t conn_handle, uint16_t attr_handle, struct ble_gatt_access_ctxt *ctxt, void *arg)
{
    uint16_t length = 0;
    int rc;
    (void)conn_handle;
    (void)attr_handle;
    (void)arg;
    if (ctxt->op != BLE_GATT_ACCESS_OP_WRITE_CHR) {
        return BLE_ATT_ERR_UNLIKELY;
    }
    rc = flatten(ctxt, &length);
    if (rc == 0) {
        framed_ota_data_write(&s_device, s_buffer, length);
    }
    return rc;
}

static int control_access(uint16_t conn_handle, uint16_t attr_handle, struct ble_gatt_access_ctxt *ctxt, void *arg)
{
    uint16_t length = 0;
    int rc;
    (void)conn_handle;
    (void)attr_handle;
    (void)arg;
    if (ctxt->op != BLE_GATT_ACCESS_OP_WRITE_CHR) {
        return BLE_ATT_ERR_UNLIKELY;
    }
    rc = flatten(ctxt, &length);
    if (rc != 0) {
        return rc;
    }
    /* The reply is notified from inside this call; NimBLE sends the write response after. */
    return framed_ota_control_write(&s_device, s_buffer, length); /* an ATT status: 0, 0x04, 0x0D */
}

static int status_access(uint16_t conn_handle, uint16_t attr_handle, struct ble_gatt_access_ctxt *ctxt, void *arg)
{
    uint8_t status[FRAMED_OTA_STATUS_LENGTH];
    uint16_t length;
    (void)conn_handle;
    (void)attr_handle;
    (void)arg;
    if (ctxt->op != BLE_GATT_ACCESS_OP_READ_CHR) {
        return BLE_ATT_ERR_UNLIKELY;
    }
    length = framed_ota_status_read(&s_device, status, sizeof status);
    return os_mbuf_append(ctxt->om, status, length) == 0 ? 0 : BLE_ATT_ERR_INSUFFICIENT_RES;
}

static const struct ble_gatt_svc_def s_services[] = {
    {
        .type = BLE_GATT_SVC_TYPE_PRIMARY,
        .uuid = &s_service_uuid.u,
        .characteristics =
            (struct ble_gatt_chr_def[]){
                {.uuid = &s_data_uuid.u, .access_cb = data_access, .flags = BLE_GATT_CHR_F_WRITE_NO_RSP},
                {
                    .uuid = &s_control_uuid.u,
                    .access_cb = control_access,
                    .flags = BLE_GATT_CHR_F_WRITE | BLE_GATT_CHR_F_NOTIFY,
                    .val_handle = &s_control_handle,
                },
                {.uuid = &s_status_uuid.u, .access_cb = status_access, .flags = BLE_GATT_CHR_F_READ},
                {0},
            },
    },
    {0},
};

/* ---- Entry points ----------------------------------------------------------------------------- */

int framed_ota_nimble_init(void)
{
    const esp_timer_create_args_t timer = {.callback = reboot_into_new_image, .name = "framed_ota_reboot"};
    framed_ota_platform platform = {0};
    int rc;

    s_partition = esp_ota_get_next_update_partition(NULL);
    if (s_partition == NULL) {
        ESP_LOGE(TAG, "no OTA partition to update (partition table without ota_0/ota_1?)");
        return ESP_ERR_NOT_FOUND;
    }
    ESP_ERROR_CHECK(esp_timer_create(&timer, &s_reboot_timer));

    platform.slot_size = (uint32_t)s_partition->size;
    platform.sector_size = (uint32_t)s_partition->erase_size; /* 4096 on SPI NOR */
    platform.flash_erase = flash_erase;
    platform.flash_write = flash_write;
    platform.flash_read = flash_read;
    platform.notify = notify;
    platform.reboot = reboot;
    framed_ota_init(&s_device, &platform); /* reads the journal: a session survives reboots */

    rc = ble_gatts_count_cfg(s_services);
    if (rc == 0) {
        rc = ble_gatts_add_svcs(s_services);
    }
    if (rc != 0) {
        ESP_LOGE(TAG, "registering the GATT service failed: %d", rc);
        return rc;
    }
    /* Ask for MTU 247: 244-byte writes carry 242 payload bytes (236 in version 1); at MTU 23
     * only 18 (12). The central still decides; the protocol works at any MTU. */
    rc = ble_att_set_preferred_mtu(247);
    if (rc != 0) {
        ESP_LOGW(TAG, "ble_att_set_preferred_mtu(247): %d", rc);
    }
    ESP_LOGI(TAG, "framed OTA on partition '%s' (%u KB)", s_partition->label, (unsigned)(s_partition->size / 1024));
    return 0;
}

void framed_ota_nimble_gap_event(const struct ble_gap_event *event)
{
    switch (event->type) {
    case BLE_GAP_EVENT_CONNECT:
        if (event->connect.status == 0) {
            s_conn_handle = event->connect.conn_handle;
            s_subscribed = false;
        }
        break;
    case BLE_GAP_EVENT_DISCONNECT:
        if (event->disconnect.conn.conn_handle == s_conn_handle) {
            s_conn_handle = BLE_HS_CONN_HANDLE_NONE;
            s_subscribed = false;
            framed_ota_disconnected(&s_device); /* the session stays, in RAM and in flash */
        }
        break;
    case BLE_GAP_EVENT_SUBSCRIBE:
        if (event->subscribe.conn_handle == s_conn_handle && event->subscribe.attr_handle == s_control_handle) {
            s_subscribed = event->subscribe.cur_notify != 0;
        }
        break;
    default:
        break;
    }
}
