/* Placeholder: replaced by the reference implementation. */
#ifndef FRAMED_OTA_DEVICE_H
#define FRAMED_OTA_DEVICE_H
int framed_ota_placeholder(void);
#endif
